"""Recall speed at 1K, 10K and 100K generated memories, next to baselines in the same run.

    python benchmarks/bench_recall.py                 # 1K, 10K, 100K (the 100K build takes a while)
    python benchmarks/bench_recall.py 1000 10000
    python benchmarks/bench_recall.py --keep /tmp/fm-bench 100000   # reuse generated stores
    python benchmarks/bench_recall.py --keep /tmp/fm-bench --keep-index --baseline OTHER/python 100000

For each size it prints:
  build        index build from nothing (parse, hash, FTS5, embed, FAISS) and its
               throughput, next to the raw encode throughput of the same model on
               the same texts: forgemem's ONNX encoder and sentence-transformers'
               `model.encode`
  refresh      refreshing an open index with nothing changed, and with one file changed
               (and how many memories that re-embedded)
  in-process   one recall on a warm engine, p50/p95 over 50 queries; the same queries
               alternating with recall as it ranked before the calibrated relevance
  end to end   `forgemem recall QUERY` as a process: cold (no server: FORGEMEM_SERVER=off),
               warm (the recall server running), and the first call after a file changed,
               next to `python -c pass` and `grep -ril WORD` over the same files
  first recall `forgemem recall QUERY` in a process of its own with no server (what the first
               recall of a session costs): p50 over 5 runs with the cache built and the
               page cache warm

--keep-index keeps a cache that `--keep` left (skipping the build and refresh lines: a 100K build
takes 10 minutes here); --baseline PYTHON times the end-to-end lines with another interpreter's
forgemem (e.g. a checkout of main in its own venv) in the same run, pair by pair, before this one's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_load import generate  # noqa: E402
from bench_quality import before_calibration  # noqa: E402

QUERIES = 50
PROCESS_RUNS = 10


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f} ms"


def timed_runs(command: list[str], env: dict, runs: int = PROCESS_RUNS) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - started)
    return times


def touch_one(folder: Path, rng: random.Random) -> Path:
    path = rng.choice(sorted(folder.rglob("*.md"))[:200])
    text = path.read_text()
    head, body = text.rsplit("---\n", 1)
    path.write_text(f"{head}---\n{body.rstrip()} Edited {time.time_ns()}.\n")
    return path


def bench(n: int, base: Path, st_model, keep_index: bool = False, baseline: str | None = None) -> None:
    from forgemem.recall.engine import RecallEngine
    from forgemem.workspace import Workspace

    rng = random.Random(n)
    folder = base / f"store-{n}" / ".forge" / "memory"
    user = base / f"store-{n}" / "user" / "memory"
    if not folder.is_dir():
        generate(folder, n)
    cache = folder.parent / "cache"
    keep_index = keep_index and (cache / "repo.sqlite").is_file()
    if not keep_index:
        shutil.rmtree(cache, ignore_errors=True)
    print(f"\n== {n:,} memories ({sum(1 for _ in folder.rglob('*.md')):,} files)")
    if keep_index:
        fresh = RecallEngine(Workspace.open(repo_dir=folder, user_dir=user))
        fresh.refresh()
        idx = fresh.indexes()["repo"]
        in_process(fresh, idx, rng)
        end_to_end(folder, user, rng, idx, baseline)
        return

    # --- build
    ws = Workspace.open(repo_dir=folder, user_dir=user)
    engine = RecallEngine(ws)
    embedder = engine.embedder
    started = time.perf_counter()
    reports = engine.refresh()
    build = time.perf_counter() - started
    report = reports["repo"]
    index = engine.indexes()["repo"]
    texts = [m.body for _, m in index.memories()[:1000]]
    started = time.perf_counter()
    embedder.encode(texts)
    onnx_rate = len(texts) / (time.perf_counter() - started)
    started = time.perf_counter()
    st_model.encode(texts, batch_size=32, normalize_embeddings=True)
    st_rate = len(texts) / (time.perf_counter() - started)
    print(f"build          {build:8.1f} s   {report.embedded / build:6.0f} memories/s "
          f"(raw encode on 1,000 of the texts: ONNX {onnx_rate:.0f}/s, sentence-transformers {st_rate:.0f}/s)")

    # --- refresh
    index.close()
    fresh = RecallEngine(Workspace.open(repo_dir=folder, user_dir=user), embedder=embedder)
    fresh.refresh()
    idx = fresh.indexes()["repo"]
    nothing = []
    for _ in range(5):
        started = time.perf_counter()
        r = idx.refresh(embedder)
        nothing.append(time.perf_counter() - started)
        assert r.unchanged
    one, embedded = [], []
    for _ in range(3):
        touch_one(folder, rng)
        started = time.perf_counter()
        r = idx.refresh(embedder)
        one.append(time.perf_counter() - started)
        embedded.append(r.embedded)
    print(f"refresh        nothing changed p50 {ms(statistics.median(nothing))}; "
          f"1 file changed p50 {ms(statistics.median(one))} (re-embedded {embedded} memories)")

    fresh.refresh()
    in_process(fresh, idx, rng)
    end_to_end(folder, user, rng, idx, baseline)


def memory_words(idx) -> list[list[str]]:
    return [json.loads(r)["body"].split() for (r,) in idx.db.execute("SELECT record FROM memories")]


def queries_for(idx, rng: random.Random) -> list[str]:
    """Queries a person might type: a few words taken from some memory's text."""
    bodies = memory_words(idx)
    return [" ".join(rng.sample(words, min(len(words), rng.randint(3, 6)))) for words in rng.sample(bodies, QUERIES)]


def in_process(fresh, idx, rng: random.Random) -> None:
    from forgemem.recall.rank import Query

    queries = queries_for(idx, random.Random(rng.random()))
    bodies = memory_words(idx)
    for q in queries[:3]:
        fresh.recall(Query(q, k=10), refresh=False)
    only, with_refresh = [], []
    for q in queries:
        started = time.perf_counter()
        fresh.recall(Query(q, k=10), refresh=False)
        only.append(time.perf_counter() - started)
        started = time.perf_counter()
        fresh.recall(Query(q, k=10), refresh=True)
        with_refresh.append(time.perf_counter() - started)
    print(f"in-process     recall p50 {ms(pct(only, .5))} p95 {ms(pct(only, .95))}; "
          f"with the refresh check p50 {ms(pct(with_refresh, .5))} p95 {ms(pct(with_refresh, .95))}")
    # The same queries, alternating: recall as it ranked before the calibrated relevance and the surroundings,
    # then as it does now (new words each time, so the lexical ceiling's document-frequency cache does not help).
    before, plain, now = [], [], []
    for n, q in enumerate(queries):
        words = f"{q} {rng.choice(bodies)[0]}"
        for variant in ((0, 1, 2) if n % 2 else (2, 1, 0)):  # each goes first half the time
            with (before_calibration() if variant == 0 else nullcontext(),
                  no_surroundings() if variant < 2 else nullcontext()):
                started = time.perf_counter()
                fresh.recall(Query(words, k=10), refresh=False)
                (before, plain, now)[variant].append(time.perf_counter() - started)
    print(f"  same run     before (min-max fusion, no surroundings) p50 {ms(pct(before, .5))} p95 {ms(pct(before, .95))}; "
          f"calibrated, no surroundings p50 {ms(pct(plain, .5))} p95 {ms(pct(plain, .95))}; "
          f"now (uncached words) p50 {ms(pct(now, .5))} p95 {ms(pct(now, .95))}")


@contextmanager
def no_surroundings():
    """Recall without its surroundings (no date, neighbour or session term: no session is looked up)."""
    import forgemem.recall.surroundings as module

    saved = module.DATE_WEIGHT, module.NEIGHBOUR_WEIGHTS, module.SESSION_WEIGHT
    module.DATE_WEIGHT, module.NEIGHBOUR_WEIGHTS, module.SESSION_WEIGHT = 0.0, {}, 0.0
    try:
        yield
    finally:
        module.DATE_WEIGHT, module.NEIGHBOUR_WEIGHTS, module.SESSION_WEIGHT = saved


def end_to_end(folder: Path, user: Path, rng: random.Random, idx, baseline: str | None) -> None:
    """`forgemem recall` as a process: cold, warm, after a change; with --baseline, that forgemem first."""
    query = queries_for(idx, random.Random(rng.random()))[0]
    pythons = ([("baseline", baseline)] if baseline else []) + [("this", sys.executable)]
    cold: dict[str, list[float]] = {}
    for _label, python in pythons:  # warm-up: the page cache, and a cache another version wrote last
        timed_runs([python, "-P", "-m", "forgemem", "--repo-dir", str(folder), "--user-dir", str(user), "recall", query],
                   dict(os.environ, FORGEMEM_SERVER="off"), runs=1)
    for _ in range(5):  # pair by pair: a drift of the machine's speed hits both alike
        for label, python in pythons:
            command = [python, "-P", "-m", "forgemem", "--repo-dir", str(folder), "--user-dir", str(user),
                       "recall", query, "-k", "10"]
            cold.setdefault(label, []).extend(timed_runs(command, dict(os.environ, FORGEMEM_SERVER="off"), runs=1))
    python_pass = timed_runs([sys.executable, "-c", "pass"], dict(os.environ))
    for label, python in pythons:
        print(f"first recall   ({label}) no server: p50 {ms(pct(cold[label], .5))} p95 {ms(pct(cold[label], .95))}"
              + (f"  [{python}]" if baseline else ""))
    for label, python in pythons:
        served(folder, user, rng, query, python, label if baseline else "", cold[label])
    grep = timed_runs(["grep", "-ril", query.split()[0], str(folder)], dict(os.environ), runs=5)
    print(f"  baselines    python -c pass p50 {ms(pct(python_pass, .5))}; grep -ril over the files p50 {ms(pct(grep, .5))}")


def served(folder: Path, user: Path, rng: random.Random, query: str, python: str, label: str,
           cold: list[float]) -> None:
    socket_dir = Path(tempfile.mkdtemp(prefix="fm-sock-"))
    env = dict(os.environ, FORGEMEM_SERVER_SOCKET=str(socket_dir / "s.sock"))
    command = [python, "-P", "-m", "forgemem", "--repo-dir", str(folder), "--user-dir", str(user),
               "recall", query, "-k", "10"]
    server = subprocess.Popen([python, "-P", "-m", "forgemem", "serve", "--idle-timeout", "600"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if (socket_dir / "s.sock").exists():
                break
            time.sleep(0.05)
        timed_runs(command, env, runs=2)  # the server loads the model and the index once
        warm = timed_runs(command, env)
        after_change = []
        for _ in range(5):
            touch_one(folder, rng)
            after_change.extend(timed_runs(command, env, runs=1))
    finally:
        subprocess.run([python, "-P", "-m", "forgemem", "serve", "--stop"], env=env, stdout=subprocess.DEVNULL)
        server.wait(10)
        shutil.rmtree(socket_dir, ignore_errors=True)
    print(f"end to end     {f'({label}) ' if label else ''}forgemem recall: warm (server) p50 {ms(pct(warm, .5))} "
          f"p95 {ms(pct(warm, .95))}; first call after a file changed p50 {ms(pct(after_change, .5))} "
          f"max {ms(max(after_change))}; cold (no server) p50 {ms(pct(cold, .5))} p95 {ms(pct(cold, .95))}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sizes", nargs="*", type=int, default=[1_000, 10_000, 100_000])
    parser.add_argument("--keep", type=Path, help="generate stores here and reuse them on later runs")
    parser.add_argument("--keep-index", action="store_true", help="with --keep: reuse their caches too (no build)")
    parser.add_argument("--baseline", metavar="PYTHON", help="also time the process lines with this interpreter")
    args = parser.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from forgemem.index.embedding import SentenceTransformerEmbedder, default_model_dir

    st_model = SentenceTransformerEmbedder(default_model_dir(), "reference").model
    print(f"forgemem bench_recall on {os.cpu_count()} cores, python {sys.version.split()[0]}")
    base = args.keep or Path(tempfile.mkdtemp(prefix="forgemem-recall-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        for n in args.sizes:
            bench(n, base, st_model, args.keep_index, args.baseline)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
