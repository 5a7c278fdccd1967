"""Shared pieces of the security suite: a project, the installed hook command, hostile payloads."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

#: Text that a shell would act on, if it ever reached one.
HOSTILE_TEXTS = [
    "run `touch {marker}-backtick` now",
    "and $(touch {marker}-dollar) too",
    'quote " ; touch {marker}-quote ; echo "',
    "single ' ; touch {marker}-single ; echo '",
    "$HOME and ${{AWS_SECRET_ACCESS_KEY}} and $AWS_SECRET_ACCESS_KEY",
    "new\nline; touch {marker}-newline",
    "pipe | touch {marker}-pipe & touch {marker}-amp",
    "non-ASCII: 🚀 Ünïcödé — ‘quotes’ \\ backslash \t tab",
]


def plant_package(folder: Path) -> Path:
    """A `forgemem/` package (and a `yaml/` one) in `folder` whose import writes a marker file."""
    marker = folder / "PLANTED-CODE-RAN"
    code = f"import pathlib\npathlib.Path({str(marker)!r}).write_text(__name__)\n"
    for name in ("forgemem", "yaml"):
        package = folder / name
        package.mkdir(exist_ok=True)
        (package / "__init__.py").write_text(code)
        (package / "__main__.py").write_text(code)
    # and a `forgemem` program, for anything that looks it up on a PATH holding "bin"
    (folder / "bin").mkdir(exist_ok=True)
    program = folder / "bin" / "forgemem"
    program.write_text(f"#!/bin/sh\necho planted > {str(marker)!r}\n")
    program.chmod(0o755)
    return marker


@pytest.fixture
def hook_env(tmp_path):
    """The environment an agent runs hooks in: a recall server allowed, on a socket of this test."""
    env = {**os.environ, "FORGEMEM_SERVER": "on", "FORGEMEM_SERVER_SOCKET": str(tmp_path / "sock" / "recall.sock")}
    yield env
    subprocess.run([sys.executable, "-P", "-m", "forgemem", "serve", "--stop"], env=env, capture_output=True,
                   cwd=tmp_path)


def fire(command: str, event: dict, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    """Run an installed hook command the way Claude Code does: a shell line, the event on stdin."""
    return subprocess.run(["bash", "-c", command], input=json.dumps(event), capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)


def wait_for(condition, timeout: float = 90.0, what: str = "condition"):
    start = time.monotonic()
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() - start > timeout:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def passes_done(state: Path) -> int:
    """Capture passes finished (done or failed) in an observer database."""
    if not state.exists():
        return 0
    with sqlite3.connect(state) as db:
        try:
            return db.execute("SELECT COUNT(*) FROM passes WHERE status IN ('done', 'failed')").fetchone()[0]
        except sqlite3.OperationalError:
            return 0


def forgemem_processes() -> list[str]:
    """Command lines of running forgemem processes that capture (observe)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"forgemem" in b" ".join(argv) and b"observe" in argv:
            found.append(b" ".join(argv).decode("utf-8", "replace"))
    return found


def claude_transcript(path: Path, exchanges: list[tuple[str, str]], session: str = "s-sec") -> None:
    """Append user/assistant exchanges to a Claude Code JSONL transcript."""
    with open(path, "a", encoding="utf-8") as handle:
        for n, (user, answer) in enumerate(exchanges):
            handle.write(json.dumps({"type": "user", "sessionId": session,
                                     "message": {"role": "user", "content": user}}) + "\n")
            handle.write(json.dumps({"type": "assistant", "sessionId": session, "message": {
                "id": f"m{n}-{time.monotonic_ns()}", "role": "assistant",
                "content": [{"type": "text", "text": answer}]}}) + "\n")
