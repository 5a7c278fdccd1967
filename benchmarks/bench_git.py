"""Memory in git at scale: review, branch switches, consolidation.

    python benchmarks/bench_git.py [N] [CHANGED]      (default: 10000 1000)

A git repository with N generated memories on `main`; a branch `feature`
supersedes CHANGED of them with new versions (new texts). Printed, each beside
a baseline from the same run:

- `forgemem review main..feature` (a fresh process) vs `git diff --stat main..feature`;
- refresh after `git checkout feature` and back to `main`: memories embedded,
  vectors found by content, seconds — vs embedding those CHANGED texts cold;
- `forgemem consolidate --dry-run` (vectors from the cache) vs encoding every head.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_load import generate  # noqa: E402


def timed(command: list[str], cwd: Path, env: dict) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    changed = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000
    from forgemem.recall.engine import RecallEngine
    from forgemem.store import memfile
    from forgemem.store.model import new_id, utc_now
    from forgemem.workspace import Workspace

    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        store = repo / ".forge" / "memory"
        from forgemem.index.embedding import model_cache_dir

        env = {**os.environ, "HOME": str(Path(tmp) / "home"), "FORGEMEM_SERVER": "off",
               "FORGEMEM_MODEL_CACHE": str(model_cache_dir()),  # the exported model, not a second export
               "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
               "GIT_COMMITTER_EMAIL": "b@b"}
        git = lambda *a: subprocess.run(["git", *a], cwd=repo, env=env, check=True, capture_output=True)  # noqa: E731
        repo.mkdir()
        git("init", "-q", "-b", "main")
        generate(store, n)
        git("add", "-A")
        git("commit", "-q", "-m", "memories")
        ws = Workspace.open(cwd=repo)
        engine = RecallEngine(ws)
        started = time.perf_counter()
        engine.refresh()
        print(f"== {n:,} memories; a branch with {changed:,} new versions")
        print(f"first index build                 {time.perf_counter() - started:8.1f} s")
        git("checkout", "-q", "-b", "feature")
        heads = [m for m in ws.load().heads()][:changed]
        for memory in heads:
            new = memfile.Memory(
                id=new_id(), body=memory.body + " Revised: also covers the batch path.", scope=memory.scope,
                category=memory.category, created_at=utc_now(), updated_at=utc_now(), version=memory.version + 1,
                supersedes=(memory.id,), trigger="manual",
            )
            path = store / new.category / memfile.file_name(new)
            path.write_text(memfile.dumps(new), encoding="utf-8")
        git("add", "-A")
        git("commit", "-q", "-m", "new versions")
        git("checkout", "-q", "main")
        forgemem = [sys.executable, "-m", "forgemem"]
        review = timed([*forgemem, "review", "--json", "main..feature"], repo, env)
        stat = timed(["git", "diff", "--stat", "main..feature"], repo, env)
        print(f"review main..feature (process)    {review:8.2f} s   vs git diff --stat {stat:.2f} s")

        rows = []
        for branch in ("feature", "main", "feature"):
            git("checkout", "-q", branch)
            started = time.perf_counter()
            report = engine.refresh()["repo"]
            rows.append((branch, time.perf_counter() - started, report.embedded, report.reused))
        texts = [m.body + " cold" for m in heads]
        started = time.perf_counter()
        engine.embedder.encode(texts)
        cold = time.perf_counter() - started
        for branch, seconds, embedded, reused in rows:
            print(f"checkout {branch:8} + refresh        {seconds:8.2f} s   embedded {embedded:5d}, "
                  f"reused by content {reused:5d}")
        print(f"baseline: embedding {changed:,} texts cold {cold:8.2f} s")

        consolidate = timed([*forgemem, "consolidate", "--dry-run", "--json"], repo, env)
        all_heads = ws.load().heads()
        started = time.perf_counter()
        engine.embedder.encode([m.body for m in all_heads])
        encode_all = time.perf_counter() - started
        print(f"consolidate --dry-run (process)   {consolidate:8.2f} s   vs encoding all {len(all_heads):,} "
              f"heads {encode_all:.2f} s")


if __name__ == "__main__":
    main()
