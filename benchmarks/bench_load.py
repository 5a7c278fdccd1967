"""Load + graph build time for generated stores of 1K, 10K and 100K memory files.

    python benchmarks/bench_load.py            # 1K, 10K, 100K
    python benchmarks/bench_load.py 1000 10000 # chosen sizes

Each store is realistic: both scopes' categories, ~40% of memories in
supersession chains (some of length 3+), related edges, multi-line bodies,
tags and sources. The files are generated once per size into a temp folder;
timings are best of 3 runs over a warm page cache (the files' first read from
disk is also shown). Baseline in the same run: reading the same files' bytes
without parsing (`read only`), which no loader can beat.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from forgemem import memfile  # noqa: E402
from forgemem.model import CATEGORIES, RELATIONSHIPS, Memory, Relation, new_id  # noqa: E402
from forgemem.workspace import Workspace  # noqa: E402

WORDS = (
    "migration database test pytest deploy staging berth booking lock postgres redis worker "
    "queue api route schema index cache token config settings logging json frontend react "
    "typescript lint ruff mypy docker compose branch commit review release tag monolith module"
).split()


def generate(folder: Path, n: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    start = datetime(2025, 1, 1, tzinfo=timezone.utc)
    made: list[Memory] = []
    for i in range(n):
        when = start + timedelta(minutes=37 * i)
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(12, 60)))
        body = body[0].upper() + body[1:] + ".\n\nWhy: " + " ".join(rng.choice(WORDS) for _ in range(15)) + "."
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
        memfile.write_new(memory, folder / memory.category / memfile.file_name(memory))


def read_only(folder: Path) -> float:
    t = time.perf_counter()
    for path in folder.rglob("*.md"):
        path.read_bytes()
    return time.perf_counter() - t


def load_and_graph(folder: Path, empty_user: Path) -> tuple[float, float, int]:
    ws = Workspace.open(repo_dir=folder, user_dir=empty_user)
    t = time.perf_counter()
    snap = ws.load()
    total = time.perf_counter() - t
    t = time.perf_counter()
    heads = len(snap.graph.heads())
    queries = time.perf_counter() - t
    assert not snap.problems, snap.problems[:3]
    return total, queries, heads


def main(sizes: list[int]) -> None:
    print(f"forgemem bench_load on {os.cpu_count()} cores, python {sys.version.split()[0]}")
    print(f"{'memories':>9} | {'first load':>10} | {'load+graph':>10} | {'per file':>9} | {'read only':>9} | heads")
    print("-" * 70)
    with tempfile.TemporaryDirectory(prefix="forgemem-bench-") as tmp:
        for n in sizes:
            folder = Path(tmp) / f"store-{n}" / "memory"
            generate(folder, n)
            os.system("sync")
            first, _, _ = load_and_graph(folder, Path(tmp) / "no-user")
            runs = [load_and_graph(folder, Path(tmp) / "no-user") for _ in range(3)]
            best = min(r[0] for r in runs)
            baseline = statistics.median(read_only(folder) for _ in range(3))
            print(
                f"{n:>9} | {first:>9.2f}s | {best:>9.2f}s | {best / n * 1e6:>7.0f}µs | "
                f"{baseline:>8.2f}s | {runs[0][2]}"
            )


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1_000, 10_000, 100_000])
