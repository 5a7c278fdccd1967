"""Recall quality on LoCoMo (development split): forgemem vs BM25 vs dense, same run.

    python benchmarks/bench_quality.py [--locomo PATH] [--skip-ablations]

Reads ../shared/eval/locomo/locomo_dev.json (beside the repository; LoCoMo is
CC BY-NC 4.0, used here for evaluation only) and skips cleanly when it is absent.
For each conversation it writes every turn as a memory file,
"[<session date_time>] <speaker>: <text>", dated by its session, into a fresh
store, then asks every question of categories 1-4 through the real command,
`forgemem recall --queries FILE -k 10 --hops 0` (one process per conversation; batches
return the top k whatever their score, so the relevance floor does not apply),
and scores turn-level evidence recall: a question's R@k is the fraction of its
evidence turns in the top k, averaged over questions.

Baselines computed in the same run on the same questions:
  bm25   rank-bm25 BM25Okapi (k1 1.5, b 0.75) over lower-cased \\w+ tokens, no
         stemming or stopwords: plain BM25, as in the reference figures
  dense  all-MiniLM-L6-v2 cosine over the same vectors forgemem stored
Ablations (in-process, on the same index): which part of forgemem's recall moves
the figures (each of the surroundings: dates, session neighbours, the session's
best; graph hops; pseudo-relevance feedback, tried and left out), and "before": the
per-query min-max fusion that the calibrated relevance replaced
(forgemem/recall/calibration.json), exactly as it ranked.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT_LOCOMO = ROOT.parent / "shared" / "eval" / "locomo" / "locomo_dev.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (1, 5, 10)


def normalise_evidence(items: list[str]) -> list[str]:
    """Fix the malformed ids (`D:11:26`, `D30:05`, several ids in one string)."""
    found = []
    for item in items:
        for part in re.split(r"[;,\s]+", item):
            match = re.match(r"D:?(\d+):0*(\d+)$", part)
            if match:
                found.append(f"D{int(match.group(1))}:{int(match.group(2))}")
    return found


def session_time(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> an aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load_conversations(path: Path):
    data = json.loads(path.read_text())
    conversations = []
    for item in data:
        conv = item["conversation"]
        turns = []
        n = 1
        while f"session_{n}" in conv:
            when = conv[f"session_{n}_date_time"]
            for turn in conv[f"session_{n}"]:
                turns.append((turn["dia_id"], f"[{when}] {turn['speaker']}: {turn['text']}", session_time(when), n))
            n += 1
        questions = [
            (q["question"], normalise_evidence(q["evidence"]), q["category"])
            for q in item["qa"]
            if q["category"] in CATEGORIES
        ]
        questions = [q for q in questions if q[1]]
        conversations.append((item["sample_id"], turns, questions))
    return conversations


def write_store(folder: Path, sample_id: str, turns) -> dict[str, str]:
    """One memory file per turn; returns memory id -> dia_id."""
    from forgemem.store import memfile
    from forgemem.store.model import Memory

    ids = {}
    for dia_id, text, when, session in turns:
        memory = Memory(
            id=f"mem_{__import__('uuid').uuid5(__import__('uuid').NAMESPACE_URL, sample_id + dia_id)}",
            body=text, scope="repo", category="user-facts", created_at=when, updated_at=when,
            session_id=f"{sample_id}-session-{session}", trigger="import", extra={"source": f"locomo:{sample_id}:{dia_id}"},
        )
        memfile.write_new(memory, folder / f"{dia_id.replace(':', '-')}.md")
        ids[memory.id] = dia_id
    return ids


def recall_at(ranked: list[str], evidence: list[str], k: int) -> float:
    top = set(ranked[:k])
    return sum(1 for e in evidence if e in top) / len(evidence)


class Scores:
    def __init__(self):
        self.rows: list[tuple[int, dict[int, float]]] = []

    def add(self, category: int, ranked: list[str], evidence: list[str]) -> None:
        self.rows.append((category, {k: recall_at(ranked, evidence, k) for k in KS}))

    def mean(self, k: int, category: int | None = None) -> float:
        values = [r[k] for c, r in self.rows if category is None or c == category]
        return sum(values) / len(values) if values else float("nan")


def minmax_fuse(candidates, dense):
    """The fusion forgemem used before its calibrated relevance: each leg min-max normalised over the
    candidates of the query, then 0.5 · lexical + 0.5 · dense."""
    items = list(candidates)
    if not items:
        return items

    def normaliser(values: list[float]):
        lo, hi = min(values), max(values)
        span = hi - lo
        return (lambda v: (v - lo) / span) if span > 1e-12 else (lambda v: 1.0 if hi > 0 else 0.0)

    norm_lex = normaliser([c.lexical_score or 0.0 for c in items])
    norm_dense = normaliser([c.dense_score if c.dense_score is not None else 0.0 for c in items]) if dense else None
    for c in items:
        value = norm_lex(c.lexical_score or 0.0)
        if norm_dense is not None:
            value = 0.5 * value + 0.5 * norm_dense(c.dense_score or 0.0)
        c.combined = value
    return sorted(items, key=lambda c: (-c.combined, c.memory.id))


@contextmanager
def before_calibration():
    """Recall as it ranked before the calibrated relevance, for comparisons in the same run: min-max
    fusion plus priors of the old size, no lexical ceiling (its share is unused). Scores are then
    squashed by the relevance model, which keeps their order."""
    import forgemem.index.cache as index_module
    import forgemem.recall.engine as engine_module
    import forgemem.recall.rank as recall_module

    saved = (engine_module.fuse, recall_module.RECENCY_WEIGHT, recall_module.CONFIDENCE_WEIGHT,
             index_module.StoreIndex.lexical_ceiling)
    engine_module.fuse = minmax_fuse
    recall_module.RECENCY_WEIGHT = recall_module.CONFIDENCE_WEIGHT = 0.02
    index_module.StoreIndex.lexical_ceiling = lambda self, query: 1.0
    try:
        yield
    finally:
        (engine_module.fuse, recall_module.RECENCY_WEIGHT, recall_module.CONFIDENCE_WEIGHT,
         index_module.StoreIndex.lexical_ceiling) = saved


def feedback_embedder(engine, model, query, beta: float, top: int):
    """Pseudo-relevance feedback (Rocchio, in the vector space): an embedder whose vector for the query is
    its own plus beta times the mean vector of the query's first `top` hits."""
    import numpy as np

    engine._embedder = model
    first = engine.recall(query, refresh=False)
    index = engine.indexes()["repo"]
    rows = {m.id: rowid for rowid, m in index.memories()} if not hasattr(engine, "_prf_rows") else engine._prf_rows
    engine._prf_rows = rows
    vector = model.encode([query.text])[0]
    mean = np.mean([index.vector_index().reconstruct(rows[h.id]) for h in first.hits[:top]], axis=0)
    mixed = vector + beta * mean
    mixed = (mixed / np.linalg.norm(mixed)).astype(np.float32)

    class Fed:
        dimension = getattr(model, "dimension", None)

        def encode(self, texts):
            return np.vstack([mixed for _ in texts])

    return Fed()


def forgemem_cli(memory_dir: Path, user_dir: Path, questions, ids: dict[str, str], workdir: Path):
    queries = workdir / "queries.jsonl"
    queries.write_text("".join(json.dumps({"id": i, "query": q[0]}) + "\n" for i, q in enumerate(questions)))
    started = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "forgemem", "--repo-dir", str(memory_dir), "--user-dir", str(user_dir),
         "recall", "--queries", str(queries), "-k", "10", "--hops", "0"],  # --queries: the top k, no floor
        capture_output=True, text=True, check=False,
    )
    if run.returncode != 0:
        raise SystemExit(f"forgemem recall failed: {run.stderr.strip()}")
    seconds = time.perf_counter() - started
    ranked = {}
    for line in run.stdout.splitlines():
        item = json.loads(line)
        ranked[item["id"]] = [ids[r["id"]] for r in item["results"]]
    return ranked, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--skip-ablations", action="store_true")
    args = parser.parse_args()
    if not args.locomo.is_file():
        print(f"skipped: {args.locomo} is not there (the LoCoMo development split lives in shared/eval/)")
        return 0

    import numpy as np
    from rank_bm25 import BM25Okapi

    import forgemem.index.cache as index_module
    import forgemem.recall.engine as engine_module
    import forgemem.recall.rank as recall_module
    import forgemem.recall.surroundings as surroundings_module
    from forgemem.recall.engine import RecallEngine
    from forgemem.recall.rank import Query
    from forgemem.workspace import Workspace

    conversations = load_conversations(args.locomo)
    systems = {name: Scores() for name in ("forgemem", "bm25", "dense")}
    ablations: dict[str, Scores] = {}
    originals = {name: getattr(recall_module, name) for name in ("calibration", "RECENCY_WEIGHT", "CONFIDENCE_WEIGHT")}
    surrounding = {name: getattr(surroundings_module, name)
                   for name in ("DATE_WEIGHT", "NEIGHBOUR_WEIGHTS", "SESSION_WEIGHT")}
    original_fuse, original_stop = engine_module.fuse, index_module.STOPWORDS

    def rrf(candidates, dense):
        items = list(candidates)
        for c in items:
            c.combined = sum(1 / (60 + r) for r in (c.lexical_rank, c.dense_rank) if r is not None)
        return sorted(items, key=lambda c: (-c.combined, c.memory.id))

    def dense_only(candidates, dense):
        items = list(candidates)
        for c in items:
            c.combined = c.dense_score or 0.0
        return sorted(items, key=lambda c: (-c.combined, c.memory.id))

    def with_lambda(value: float):
        def calibration():
            model = json.loads(json.dumps(originals["calibration"]()))
            model["dense"]["lambda"] = value
            return model
        return calibration

    variants = {
        "forgemem (calibrated relevance, surroundings, priors)": {},
        "no surroundings (no date, neighbour, session terms)": {
            "surroundings": {"DATE_WEIGHT": 0.0, "NEIGHBOUR_WEIGHTS": {}, "SESSION_WEIGHT": 0.0}},
        "no date term": {"surroundings": {"DATE_WEIGHT": 0.0}},
        "no session neighbours": {"surroundings": {"NEIGHBOUR_WEIGHTS": {}}},
        "session neighbours at distance 1 only": {"surroundings": {"NEIGHBOUR_WEIGHTS": {1: 0.3}}},
        "no session share": {"surroundings": {"SESSION_WEIGHT": 0.0}},
        "graph hops 1 (LoCoMo has no edges)": {"hops": 1},
        "pseudo-relevance feedback (query + 0.5 x top 3)": {"prf": (0.5, 3)},
        "before: min-max fusion, alpha 0.5, priors (+ surroundings)": {"before": True},
        "lexical leg only (the lexical-only model)": {"lexical_only": True},
        "dense leg only (MiniLM via FAISS)": {"fuse": dense_only},
        "combined = cosine + 1.0 * share": {"calibration": with_lambda(1.0)},
        "combined = cosine + 2.0 * share": {"calibration": with_lambda(2.0)},
        "reciprocal rank fusion (k 60), no priors, no surroundings": {
            "fuse": rrf, "priors": False,
            "surroundings": {"DATE_WEIGHT": 0.0, "NEIGHBOUR_WEIGHTS": {}, "SESSION_WEIGHT": 0.0}},
        "no recency/confidence priors": {"priors": False},
        "no stopword removal in queries": {"stopwords": frozenset()},
    }
    total_seconds = 0.0
    with tempfile.TemporaryDirectory(prefix="forgemem-locomo-") as tmp:
        for sample_id, turns, questions in conversations:
            folder = Path(tmp) / sample_id
            memory_dir, user_dir = folder / ".forge" / "memory", folder / "user" / "memory"
            ids = write_store(memory_dir, sample_id, turns)
            ranked, seconds = forgemem_cli(memory_dir, user_dir, questions, ids, folder)
            total_seconds += seconds
            for i, (_question, evidence, category) in enumerate(questions):
                systems["forgemem"].add(category, ranked[i], evidence)

            # Baselines on the same turns and questions.
            dia = [t[0] for t in turns]
            bm25 = BM25Okapi([re.findall(r"\w+", t[1].lower()) for t in turns], k1=1.5, b=0.75)
            engine = RecallEngine(Workspace.open(repo_dir=memory_dir, user_dir=user_dir))
            engine.refresh()
            index = engine.indexes()["repo"]
            by_row = {rowid: ids[m.id] for rowid, m in index.memories()}
            faiss_index = index.vector_index()
            matrix = np.vstack([faiss_index.reconstruct(r) for r in by_row])
            row_dia = [by_row[r] for r in by_row]
            question_vectors = engine.embedder.encode([q[0] for q in questions])
            for i, (question, evidence, category) in enumerate(questions):
                scores = bm25.get_scores(re.findall(r"\w+", question.lower()))
                systems["bm25"].add(category, [dia[j] for j in np.argsort(-scores, kind="stable")], evidence)
                dense = matrix @ question_vectors[i]
                systems["dense"].add(category, [row_dia[j] for j in np.argsort(-dense, kind="stable")], evidence)

            if args.skip_ablations:
                continue
            for name, knobs in variants.items():
                scores_ = ablations.setdefault(name, Scores())
                engine_module.fuse = knobs.get("fuse", original_fuse)
                index_module.STOPWORDS = knobs.get("stopwords", original_stop)
                recall_module.calibration = knobs.get("calibration", originals["calibration"])
                model = engine.embedder
                if knobs.get("lexical_only"):
                    engine._embedder, engine.use_embeddings = None, False
                try:
                    for name, value in knobs.get("surroundings", {}).items():
                        setattr(surroundings_module, name, value)
                    with before_calibration() if knobs.get("before") else nullcontext():
                        for question, evidence, category in questions:
                            query = Query(question, k=10, hops=knobs.get("hops", 0))
                            if knobs.get("prf"):
                                engine._embedder = feedback_embedder(engine, model, query, *knobs["prf"])
                            result = engine.recall(query, refresh=False, use_priors=knobs.get("priors", True))
                            scores_.add(category, [ids[h.id] for h in result.hits], evidence)
                finally:
                    for name, value in surrounding.items():
                        setattr(surroundings_module, name, value)
                    engine_module.fuse, index_module.STOPWORDS = original_fuse, original_stop
                    for attribute, value in originals.items():
                        setattr(recall_module, attribute, value)
                    engine._embedder, engine.use_embeddings = model, True

    n = len(systems["forgemem"].rows)
    print(f"LoCoMo development split: {len(conversations)} conversations, "
          f"{sum(len(c[1]) for c in conversations)} turns, {n} questions (categories 1-4)")
    print(f"forgemem recall --queries: {total_seconds:.1f}s in all (index build + {n} queries, one process per conversation)\n")
    header = f"{'':12} {'n':>4} | " + " | ".join(f"{name:^20}" for name in systems)
    print(header)
    print(f"{'':12} {'':>4} | " + " | ".join(f"{'R@1':>6}{'R@5':>7}{'R@10':>7}" for _ in systems))
    print("-" * len(header))
    for category, label in [*CATEGORIES.items(), (None, "overall")]:
        count = sum(1 for c, _ in systems["forgemem"].rows if category is None or c == category)
        cells = " | ".join(
            f"{s.mean(1, category):>6.3f}{s.mean(5, category):>7.3f}{s.mean(10, category):>7.3f}" for s in systems.values()
        )
        print(f"{label:12} {count:>4} | {cells}")
    f, b = systems["forgemem"], systems["bm25"]
    print(f"\nforgemem - bm25: R@5 {f.mean(5) - b.mean(5):+.3f}, R@10 {f.mean(10) - b.mean(10):+.3f} "
          f"(target: +0.050 each)")
    if ablations:
        print("\nablations (in-process, same index and questions):")
        print(f"{'variant':60} {'R@1':>6} {'R@5':>6} {'R@10':>6}")
        for name, s in ablations.items():
            print(f"{name:60} {s.mean(1):>6.3f} {s.mean(5):>6.3f} {s.mean(10):>6.3f}")
        print(f"{'plain BM25 (rank-bm25, no stemming/stopwords)':60} {b.mean(1):>6.3f} {b.mean(5):>6.3f} {b.mean(10):>6.3f}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
