"""`forgemem status` on generated stores of 1K and 10K memories, beside a cached load in the same run.

    python benchmarks/bench_status.py             # 1K, 10K
    python benchmarks/bench_status.py 1000 5000   # chosen sizes

The store is bench_load's (every category, version chains, edges) inside a git
repository, and one memory in ten names a backticked path (half of them gone),
so stale memories are looked for as in a real repository. The cache is built
first; then, over a warm page cache:

- status: the whole `forgemem status` report (stores from the cache read-only,
  stale memories, observer, server, installs, next action);
- stores: only the counts, conflicts, broken files and index freshness;
- stale: only the stale-memory check (git log and git grep per name);
- baseline `load`: `Workspace.load()` of the unchanged store, what `list` and
  `stats` pay before they print (stat every file, cached records, graph).
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_load import generate  # noqa: E402

from forgemem.agents.status import status  # noqa: E402
from forgemem.curate.status import stale_report, stores_report  # noqa: E402
from forgemem.workspace import Workspace  # noqa: E402


def make_repo(root: Path, n: int) -> None:
    memory = root / ".forge" / "memory"
    generate(memory, n)
    rng = random.Random(3)
    files = sorted(memory.rglob("*.md"))
    (root / "src").mkdir(parents=True)
    for k, path in enumerate(files[:: 10]):
        name = f"src/module_{k}.py"
        if k % 2:
            (root / name).write_text("def handler():\n    return 1\n")
        text = path.read_text(encoding="utf-8")
        path.write_text(text.rstrip("\n") + f" See `{name}`.\n", encoding="utf-8")
    rng.shuffle(files)
    for command in (["init", "-q", "-b", "main"], ["add", "-A"],
                    ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "store"]):
        subprocess.run(["git", *command], cwd=root, check=True, capture_output=True)


def timed(work, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main(sizes: list[int]) -> None:
    print(f"forgemem bench_status on {os.cpu_count()} cores, python {sys.version.split()[0]}")
    print(f"{'memories':>9} | {'status':>8} | {'stores':>8} | {'stale':>8} | {'load (baseline)':>15}")
    print("-" * 62)
    with tempfile.TemporaryDirectory(prefix="forgemem-bench-") as tmp:
        os.environ["HOME"] = str(Path(tmp) / "home")  # no user store, installs or server of the real user's
        os.environ["FORGEMEM_SERVER"] = "off"
        os.environ.pop("FORGEMEM_USER_DIR", None)
        os.environ.pop("FORGEMEM_REPO_DIR", None)
        for n in sizes:
            root = Path(tmp) / f"repo-{n}"
            make_repo(root, n)
            workspace = Workspace.open(cwd=root)
            workspace.load()  # the cache, as the first recall builds it
            snap = stores_report(Workspace.open(cwd=root), root)[1]
            whole = timed(lambda root=root: status(Workspace.open(cwd=root), root))
            stores = timed(lambda root=root: stores_report(Workspace.open(cwd=root), root))
            stale = timed(lambda root=root, snap=snap: stale_report(Workspace.open(cwd=root), snap))
            load = timed(lambda root=root: Workspace.open(cwd=root).load())
            print(f"{n:>9} | {whole:>7.2f}s | {stores:>7.2f}s | {stale:>7.2f}s | {load:>14.2f}s")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1_000, 10_000])
