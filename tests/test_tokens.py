"""`forgemem stats --tokens`: what the hooks injected, from the hooks log; the log line itself."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from forgemem.agents import claude_code, hooks
from forgemem.usage import injection_message, token_report
from forgemem.workspace import Workspace


def prompt(project, text: str, session: str) -> dict:
    event = {"session_id": session, "transcript_path": "/tmp/none.jsonl", "cwd": str(project),
             "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": text}
    output = claude_code.claude_code(json.dumps(event), timeout_ms=60_000)
    return json.loads(output) if output else {}


@pytest.fixture
def here(project, monkeypatch, isolated_home):
    monkeypatch.chdir(project)
    # what is measured here is the log, not the hook's speed: a loaded machine must not time the recall out
    (isolated_home / ".forge").mkdir(exist_ok=True)
    (isolated_home / ".forge" / "config.yaml").write_text("memory:\n  hook_timeout_ms: 60000\n")
    return project


def test_real_hook_injections_add_up_per_session_and_day(cli, here, real_embedder):
    asked = [("how do I run the tests?", "s-1"), ("how do we deploy to staging?", "s-1"),
             ("which package manager for the web frontend?", "s-2"), ("thanks!", "s-2")]
    for text, session in asked:
        prompt(here, text, session)
    lines = [line for line in hooks.log_path().read_text().splitlines() if " injected " in line]
    everything = [json.loads(line[line.index("{"):]) for line in lines]
    assert [r["session"] for r in everything] == ["s-1", "s-1", "s-2", "s-2"]  # one line per prompt
    records = [r for r in everything if r["ids"]]
    assert len(records) == 3  # "thanks!" matched nothing: nothing injected, nothing counted as injected
    assert [r["session"] for r in records] == ["s-1", "s-1", "s-2"]
    snap = Workspace.open(cwd=here).load()
    log_text = hooks.log_path().read_text()
    for memory in snap.memories:  # the log never holds memory text
        assert memory.body[:40] not in log_text
    report = cli("stats", "--tokens", "--json").json()
    assert report["injections"] == 3 and report["tokens"] == sum(r["tokens"] for r in records) > 0
    sessions = {s["session"]: s for s in report["per_session"]}
    assert sessions["s-1"]["injections"] == 2 and sessions["s-1"]["tokens"] == records[0]["tokens"] + records[1]["tokens"]
    assert sessions["s-2"]["tokens"] == records[2]["tokens"]
    [day] = report["per_day"]
    assert day["tokens"] == report["tokens"] and day["day"] == lines[0][:10]
    counts: dict[str, int] = {}
    for r in records:
        for memory_id in r["ids"]:
            counts[memory_id] = counts.get(memory_id, 0) + 1
    top = report["most_injected"]
    assert top[0]["injections"] == max(counts.values()) and {t["id"] for t in top} <= set(counts)
    current = {m.id for m in snap.heads() if m.status is None}
    assert set(report["never_injected"]) == current - set(counts) and report["never_injected"]
    text = cli("stats", "--tokens").out
    assert "per session" in text and "s-1" in text and "injected most" in text
    assert f"{len(report['never_injected'])} of {len(current)} current memories never injected" in text


def test_older_lines_a_cut_first_line_and_odd_session_ids(tmp_path):
    log = tmp_path / "hooks.log"
    odd = 'a "quoted"\nsession'
    log.write_text(
        'ted 2 memories, 50 tokens, 3 ms {"event": "injected", "session": "x"'  # the half the log cut kept
        "\n2026-11-20T09:00:00 recall failed: TimeoutError\n"
        "2026-11-20T10:00:00 injected 3 memories, 120 tokens, 40 ms\n"  # before lines named their memories
        f"2026-11-21T10:00:00 {injection_message(['mem_a', 'mem_b'], 80, 12.3, odd)}\n"
        f"2026-11-21T11:00:00 {injection_message(['mem_a'], 30, 5, None)}\n"
        "2026-11-21T12:00:00 injected 0 memories, 0 tokens, 4 ms\n")
    assert len(log.read_text().splitlines()) == 6  # the odd session id stayed on its line
    assert injection_message(["mem_a"], 30, 5, None).startswith("injected 1 memory, 30 tokens")  # read back below
    report = token_report(log, ["mem_a", "mem_b", "mem_c"])
    assert report["since"] == "2026-11-20T09:00:00"
    assert report["injections"] == 3 and report["tokens"] == 230
    assert [(d["day"], d["tokens"]) for d in report["per_day"]] == [("2026-11-20", 120), ("2026-11-21", 110)]
    sessions = {s["session"]: s["tokens"] for s in report["per_session"]}
    assert sessions == {None: 150, odd: 80}
    assert report["most_injected"] == [{"id": "mem_a", "injections": 2}, {"id": "mem_b", "injections": 1}]
    assert report["never_injected"] == ["mem_c"]
    assert token_report(tmp_path / "missing.log", ["mem_a"])["injections"] == 0


def test_no_log_yet_says_how_to_get_one(cli, here):
    result = cli("stats", "--tokens")
    assert result.code == 0 and "no injections in the hooks log" in result.out
    assert re.search(r"\d+ of \d+ current memories never injected", result.out)


def test_the_hook_line_goes_through_the_console_script_too(here, isolated_home):
    """The real `forgemem hook claude-code` process: stdin in, one log line with the session out."""
    event = {"session_id": "proc-1", "cwd": str(here), "hook_event_name": "UserPromptSubmit",
             "prompt": "how do I run the tests?"}
    done = subprocess.run([sys.executable, "-m", "forgemem", "hook", "claude-code"], input=json.dumps(event),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "additionalContext" in done.stdout
    [line] = [line for line in hooks.log_path().read_text().splitlines() if " injected " in line]
    assert json.loads(line[line.index("{"):])["session"] == "proc-1"
