"""A new user's first ten minutes, as the README tells them: init, install claude-code, observe --backfill,
status, review; then the installed hook puts what was reviewed into the next prompt. Real git repository,
real CLI processes (the console script), a past Claude Code session where Claude Code keeps it."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from forgemem.capture.observer import claude_code_folder

from .conftest import ROOT, git


def forgemem_argv() -> list[str]:
    script = Path(sys.executable).parent / "forgemem"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "forgemem"]


def run(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run([*forgemem_argv(), *args], cwd=cwd, input=stdin, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    assert done.returncode == 0, f"forgemem {' '.join(args)}: {done.stderr}"
    return done


def past_session(project: Path, home: Path) -> Path:
    """A Claude Code session from before forgemem was installed."""
    said = ["From now on always use uv, never pip, in this repository.",
            "Please never commit directly to the main branch; open a pull request instead."]
    lines = []
    for n, text in enumerate(said):
        lines.append({"type": "user", "sessionId": "past-1", "timestamp": f"2026-10-01T10:0{n}:00Z", "cwd": str(project),
                      "message": {"role": "user", "content": text}})
        lines.append({"type": "assistant", "sessionId": "past-1", "timestamp": f"2026-10-01T10:0{n}:30Z",
                      "message": {"id": f"m{n}", "role": "assistant", "content": [{"type": "text", "text": "Okay."}]}})
    folder = claude_code_folder(project, home)
    folder.mkdir(parents=True)
    path = folder / "past-1.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.mark.slow
def test_a_new_users_first_ten_minutes(git_repo, isolated_home):
    project = git_repo
    past_session(project, isolated_home)

    init = run(project, "init")
    assert "created" in init.stdout and (project / ".forge" / "memory").is_dir()
    config = project / ".forge" / "config.yaml"  # review everything capture writes before it counts
    config.write_text(config.read_text().replace("  # capture_review: false", "  capture_review: true"))
    # the first hook loads the model and starts the server: on a loaded CI machine that can take longer than
    # the 2 s a prompt waits, and then nothing is injected (by design); this test is about the flow, not the wait
    config.write_text(config.read_text().replace("  # hook_timeout_ms: 2000", "  hook_timeout_ms: 60000"))
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "forgemem store")

    run(project, "install", "claude-code")
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert "UserPromptSubmit" in settings["hooks"]

    backfill = run(project, "observe", "--backfill")
    assert "1 transcript(s): 1 captured now" in backfill.stdout
    assert re.search(r"waits? for you in `forgemem review`", backfill.stdout)
    assert "[1/1] claude-code past-1.jsonl" in backfill.stderr  # the line per transcript, off a terminal

    status = json.loads(run(project, "status", "--json").stdout)
    proposed = status["stores"]["repo"]["proposed"]
    assert proposed >= 2 and status["stores"]["repo"]["current"] == 0
    assert status["next"] == f"{proposed} proposed memories wait: forgemem review"
    assert {(i["agent"], i["where"]): i["state"] for i in status["installs"]}[("claude-code", "project")] == "installed"
    assert status["observer"]["transcripts"] == 1 and status["not_captured"] == 0
    assert "next: " in run(project, "status").stdout

    review = run(project, "review")
    ids = re.findall(r"^- `([0-9a-f]{8})` repo/", review.stdout, re.M)
    assert len(ids) == proposed and "uv" in review.stdout and "**proposed**" in review.stdout
    run(project, "review", *[arg for i in ids for arg in ("--accept", i)])
    after = json.loads(run(project, "status", "--json").stdout)
    assert after["stores"]["repo"]["proposed"] == 0 and after["stores"]["repo"]["current"] == proposed
    assert after["next"] != status["next"]

    # the next prompt in Claude Code: the hook exactly as install wrote it
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    event = {"session_id": "new-1", "cwd": str(project), "hook_event_name": "UserPromptSubmit",
             "prompt": "which package manager do we use here, pip or uv?"}
    hook = subprocess.run(shlex.split(command), input=json.dumps(event), capture_output=True, text=True,
                          cwd=project, timeout=300)
    assert hook.returncode == 0
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "uv" in context and "<forgemem-context>" in context
    tokens = json.loads(run(project, "stats", "--tokens", "--json").stdout)
    assert [s["session"] for s in tokens["per_session"]] == ["new-1"] and tokens["tokens"] > 0
