"""Import and export: how long `forgemem import` and `forgemem export` take on large inputs.

    python benchmarks/bench_interop.py [--rules N]

Each figure beside a baseline measured in the same run:
1. Parsing: `rules_of` over a 1 MB instruction file (the largest import accepts), beside
   `str.splitlines()` over the same text (the floor: touching every line once).
2. Import of N rules into a fresh repo store (offline patterns heads, no embedding model),
   beside writing the same N texts with `Workspace.add` (the floor: the files themselves);
   then importing the unchanged file again (nothing to write), and once more after one
   rule changed.
3. Export of those memories into AGENTS.md, and a second run (identical bytes, no write).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["FORGEMEM_NO_EMBEDDINGS"] = "1"
os.environ["FORGEMEM_SERVER"] = "off"

from forgemem.interop.exporter import export_file  # noqa: E402
from forgemem.interop.importer import import_files  # noqa: E402
from forgemem.interop.markdown import rules_of  # noqa: E402
from forgemem.workspace import Workspace, init_forge_dir  # noqa: E402

TOPICS = ("migrations", "handlers", "tests", "logging", "payments", "caching", "queues", "auth")


def claude_md(rules: int) -> str:
    lines = ["# CLAUDE.md", ""]
    for n in range(rules):
        if n % 12 == 0:
            lines += ["", f"## {TOPICS[(n // 12) % len(TOPICS)].title()} {n // 12}", ""]
        topic = TOPICS[n % len(TOPICS)]
        lines.append(f"- Rule {n}: keep the {topic} code in `src/{topic}/` and run `make test-{topic}` before "
                     f"pushing; never skip it for {topic} number {n}.")
    return "\n".join(lines) + "\n"


def timed(action):
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def fresh_repo(folder: Path) -> Path:
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    init_forge_dir(folder / ".forge")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rules", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HOME"] = tmp
        os.environ["FORGEMEM_USER_DIR"] = f"{tmp}/user/.forge/memory"
        big = claude_md(1_000_000 // 150)
        big = big[: 1024 * 1024 - 1]
        floor, lines = timed(big.splitlines)
        took, found = timed(lambda: rules_of(big, "CLAUDE.md"))
        print(f"1. parse {len(big) / 1024:.0f} KB, {len(lines)} lines: rules_of {took * 1000:.0f} ms "
              f"({len(found)} rules)  | baseline splitlines {floor * 1000:.1f} ms")

        text = claude_md(args.rules)
        repo = fresh_repo(Path(tmp) / "imported")
        (repo / "CLAUDE.md").write_text(text)
        floor_repo = fresh_repo(Path(tmp) / "floor")
        floor_ws = Workspace.open(cwd=floor_repo)
        texts = [r.text for r in rules_of(text, "CLAUDE.md")]
        floor, _ = timed(lambda: [floor_ws.add(t, scope="repo", category="project-conventions") for t in texts])
        took, report = timed(lambda: import_files(Workspace.open(cwd=repo), [], repo, embedder=None))
        print(f"2. import {report.count('new')} rules: {took:.2f} s  | baseline Workspace.add x{len(texts)} "
              f"{floor:.2f} s")
        again, report = timed(lambda: import_files(Workspace.open(cwd=repo), [], repo, embedder=None))
        print(f"   again, unchanged ({report.count('unchanged')}): {again:.2f} s")
        (repo / "CLAUDE.md").write_text(text.replace("Rule 7:", "Rule seven:"))
        changed, report = timed(lambda: import_files(Workspace.open(cwd=repo), [], repo, embedder=None))
        print(f"   after one edit ({report.count('changed')} changed): {changed:.2f} s")

        (repo / "CLAUDE.md").unlink()
        first, result = timed(lambda: export_file(Workspace.open(cwd=repo), "agents-md", repo, max_tokens=None))
        second, again_result = timed(lambda: export_file(Workspace.open(cwd=repo), "agents-md", repo,
                                                         max_tokens=None))
        print(f"3. export {len(result.selection.memories)} memories: {first:.2f} s; second run "
              f"{second:.2f} s (written: {again_result.written})")


if __name__ == "__main__":
    main()
