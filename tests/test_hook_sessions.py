"""The prompt hook injects a memory once per session: again after a change, a compaction or in a new session."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from forgemem.agents import sessions
from forgemem.recall import context as context_module

PROMPT = "how do I run the tests?"


@pytest.fixture
def hook(cli, project, isolated_home, monkeypatch, tmp_path, model_cache):
    """The installed hook command, run as Claude Code runs it (a shell, JSON on stdin), in-process recall."""
    monkeypatch.chdir(project)
    (isolated_home / ".forge").mkdir(exist_ok=True)
    (isolated_home / ".forge" / "config.yaml").write_text("memory:\n  hook_timeout_ms: 60000\n")
    assert cli("install", "claude-code").code == 0
    assert cli("index").code == 0
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}

    def fire(event: str, session: str, transcript: Path | None = None, **fields) -> str:
        payload = {"session_id": session, "transcript_path": str(transcript or tmp_path / f"{session}.jsonl"),
                   "cwd": str(project), "permission_mode": "default", "hook_event_name": event, **fields}
        done = subprocess.run(command, shell=True, input=json.dumps(payload), capture_output=True, text=True,
                              cwd=project, env=env, timeout=120)
        assert done.returncode == 0 and done.stderr == ""
        if not done.stdout:
            return ""
        return json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]

    return fire


def lines(block: str) -> list[str]:
    return [line for line in block.splitlines() if line.startswith("- [")]


def test_a_memory_is_injected_once_per_session_until_it_changes_or_the_context_restarts(
        hook, project, isolated_home, tmp_path):
    session = "5c1d6a3e-8f2b-4c1e-9a77-0d4f2b9e1a10"
    first = hook("UserPromptSubmit", session, prompt=PROMPT)
    assert "make test" in first and first.startswith(context_module.OPEN)
    assert hook("UserPromptSubmit", session, prompt=PROMPT) == ""  # the same prompt: nothing new
    rephrased = hook("UserPromptSubmit", session, prompt="thanks, how do I run the tests again?")
    assert not set(lines(rephrased)) & set(lines(first))  # only what the session does not have yet

    # another session has none of it
    other = hook("UserPromptSubmit", "9e0b7c55-1d2a-4f3b-8c6d-7e8f9a0b1c2d", prompt=PROMPT)
    assert lines(other) == lines(first)

    # a memory that changed comes again, alone
    label = lines(first)[0][3:].split()[0]
    memory = next(p for p in (project / ".forge" / "memory").rglob("*.md") if p.read_text().startswith(f"---\nid: mem_{label}"))
    memory.write_text(memory.read_text().rstrip("\n") + " Edited by hand.\n")
    changed = hook("UserPromptSubmit", session, prompt=PROMPT)
    assert lines(changed) == [lines(first)[0] + " Edited by hand."]

    # a compaction (PreCompact) forgets what the context had: everything relevant comes again
    hook("PreCompact", session, trigger="auto", custom_instructions="")
    again = hook("UserPromptSubmit", session, prompt=PROMPT)
    assert len(lines(again)) == len(lines(first)) and "Edited by hand." in again
    hook("UserPromptSubmit", session, prompt="thanks, how do I run the tests again?")
    assert hook("UserPromptSubmit", session, prompt=PROMPT) == ""

    # a compaction seen only in the transcript does too
    transcript = tmp_path / "compacted.jsonl"
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": PROMPT}}) + "\n")
    third = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
    assert hook("UserPromptSubmit", third, transcript, prompt=PROMPT)
    assert hook("UserPromptSubmit", third, transcript, prompt=PROMPT) == ""
    with open(transcript, "a") as handle:
        handle.write(json.dumps({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted"})
                     + "\n")
    assert len(lines(hook("UserPromptSubmit", third, transcript, prompt=PROMPT))) == len(lines(first))
    assert hook("UserPromptSubmit", third, transcript, prompt=PROMPT) == ""

    # SessionStart (a new or compacted context) forgets it too
    hook("SessionStart", session, source="startup")
    assert len(lines(hook("UserPromptSubmit", session, prompt=PROMPT))) == len(lines(first))

    # the records: private, in the user cache, never memory text, never in the repository
    folder = isolated_home / ".forge" / "cache" / "sessions"
    records = list(folder.glob("*.json"))
    assert len(records) == 3 and stat.S_IMODE(folder.stat().st_mode) == 0o700
    for record in records:
        assert stat.S_IMODE(record.stat().st_mode) == 0o600
        text = record.read_text()
        assert "make" not in text and session not in text
    assert not list(project.rglob("sessions"))


def test_hook_repeat_memories_injects_on_every_prompt(hook, isolated_home):
    (isolated_home / ".forge" / "config.yaml").write_text(
        "memory:\n  hook_timeout_ms: 60000\n  hook_repeat_memories: true\n")
    first = hook("UserPromptSubmit", "s-repeat", prompt=PROMPT)
    assert first and hook("UserPromptSubmit", "s-repeat", prompt=PROMPT) == first


def test_records_are_pruned_after_a_week_and_bounded(isolated_home):
    old = sessions.load("old-session")
    assert old is not None
    old.add({"mem_a": "1"})
    old.save()
    week_ago = time.time() - sessions.KEEP_SECONDS - 60
    os.utime(old.path, (week_ago, week_ago))
    fresh = sessions.load("new-session")
    assert fresh is not None
    fresh.add({f"mem_{n}": "h" for n in range(sessions.MAX_ENTRIES + 5)})
    assert len(fresh.injected) == sessions.MAX_ENTRIES and "mem_0" not in fresh.injected
    fresh.save()  # a new record prunes the old ones
    assert not old.path.exists() and fresh.path.exists()
    assert sessions.load("new-session").injected == fresh.injected
    fresh.path.write_text("not json")
    assert sessions.load("new-session").injected == {}  # a broken record only means injecting again
    assert sessions.load(None) is None and sessions.load("x" * 300) is None


def test_the_injection_line_skips_the_redactor_only_when_forgemem_made_all_of_it(isolated_home):
    """An injection line of ids, numbers and a plain session id is written without loading the redactor
    (0.1-0.2 s of every hook); any other line, or a session id of another shape, is redacted as ever."""
    code = """
import sys
from forgemem.agents.hooks import PLAIN_SESSION, log, log_path
from forgemem.usage import injection_message
log(injection_message(["mem_0b5c8a3e-2f0e-4d8e-9a57-3f7a1c2b9d10"], 120, 41.0,
                      "5f0c6a5e-8d2b-4c1e-9a7f-2b3c4d5e6f70"), generated=True)
print("redactor loaded:", "forgemem.store.redact" in sys.modules)
token = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"
print("plain:", bool(PLAIN_SESSION.fullmatch(token)), bool(PLAIN_SESSION.fullmatch("bench-3")))
log("recall failed: token " + token)
print(log_path().read_text())
"""
    done = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "HOME": str(isolated_home)})
    assert "redactor loaded: False" in done.stdout and "plain: False True" in done.stdout
    assert '"session": "5f0c6a5e-8d2b-4c1e-9a7f-2b3c4d5e6f70"' in done.stdout
    assert "ghp_aB3d" not in done.stdout and "REDACTED" in done.stdout
