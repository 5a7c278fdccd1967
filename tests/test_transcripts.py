"""Transcript adapters: small fixtures of our own, then the real transcripts in ../shared/eval/."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from forgemem.capture.transcripts import Compaction, Turn, detect_format, read_all, read_new

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "transcripts"
REAL = Path(__file__).resolve().parents[2] / "shared" / "eval" / "transcripts"
real = pytest.mark.skipif(not REAL.is_dir(), reason="../shared/eval/transcripts is not here")


def humans(events) -> list[str]:
    return [e.text for e in events if isinstance(e, Turn) and e.role == "user"]


def assistants(events) -> list[str]:
    return [e.text for e in events if isinstance(e, Turn) and e.role == "assistant"]


# ------------------------------------------------------------------ own fixtures


def test_claude_code_fixture_keeps_only_what_people_and_the_agent_said():
    events = read_all(FIXTURES / "claude_small.jsonl")
    assert humans(events) == [
        "Add a test for the parser.",  # system reminder stripped
        "also use pytest fixtures, not setUp",  # queued while the agent was busy
        "/review the parser tests",  # slash command keeps its arguments
        "This screenshot shows the failure.",  # image stripped
    ]
    # two lines of msg_1 and msg_2 between the same human turns form one turn; thinking and tool use dropped
    assert assistants(events) == ["I'll add it.\n\nDone: tests/test_parser.py."]
    compactions = [e for e in events if isinstance(e, Compaction)]
    assert [c.line for c in compactions] == [13]  # boundary and summary are one compaction
    assert {e.session_id for e in events} == {"s-1"}
    turns = [e for e in events if isinstance(e, Turn)]
    assert [t.index for t in turns] == list(range(len(turns)))
    assert turns[0].line_start == 2 and turns[1].line_start == 3 and turns[1].line_end == 6


def test_reading_in_pieces_gives_the_same_turns_and_waits_for_a_newline(tmp_path):
    source = (FIXTURES / "claude_small.jsonl").read_bytes()
    whole = read_all(FIXTURES / "claude_small.jsonl")
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    events, offset, state = [], 0, {}
    # append in uneven chunks, cutting lines in the middle
    for start in range(0, len(source), 97):
        with open(path, "ab") as handle:
            handle.write(source[start:start + 97])
        result = read_new(path, "claude-code", offset, state)
        assert result.offset <= path.stat().st_size
        assert source[:result.offset].endswith(b"\n") or result.offset == 0
        events += result.events
        offset, state = result.offset, json.loads(json.dumps(result.state))  # survives a restart
    assert humans(events) == humans(whole)
    assert len([e for e in events if isinstance(e, Compaction)]) == 1


def test_a_truncated_last_line_is_not_read_until_complete(tmp_path):
    path = tmp_path / "s.jsonl"
    line = json.dumps({"type": "user", "sessionId": "x", "message": {"role": "user", "content": "hello there"}})
    path.write_text(line)  # no newline yet
    result = read_new(path, "claude-code")
    assert result.events == [] and result.offset == 0
    path.write_text(line + "\n")
    result = read_new(path, "claude-code", result.offset, result.state)
    assert humans(result.events) == ["hello there"] and result.offset == len(line) + 1


def test_plain_jsonl_format():
    events = read_all(FIXTURES / "plain.jsonl")
    assert detect_format(FIXTURES / "plain.jsonl") == "jsonl"
    assert humans(events) == ["We always squash-merge pull requests in this repo.", "Thanks!"]
    assert assistants(events) == ["Noted."]
    assert events[0].session_id == "p-1"


def test_aider_fixture(tmp_path):
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(
        "\n# aider chat started at 2024-08-05 19:33:32\n\n> aider --model x\n> Added a.py to the chat.\n\n"
        "#### Use the Spinner class\n#### in utils.py  \n\nSure, here is the change.\n\n"
        "> Applied edit to a.py\n\n#### /run pytest\n> 1 failed\nplatform linux -- Python 3.12\n\n"
        "#### # Fix any errors below, if possible.\n#### E   NameError\n\nFixed.\n\n"
        "#### never add print statements\n"
    )
    assert detect_format(path) == "aider"
    events = read_all(path)
    assert humans(events) == ["Use the Spinner class\nin utils.py", "/run pytest", "never add print statements"]
    assert assistants(events) == ["Sure, here is the change.", "Fixed."]  # test output after /run is not the model
    assert events[0].session_id == "aider:2024-08-05 19:33:32"


def test_gemini_session_rewritten_whole(tmp_path):
    path = tmp_path / "session-1.json"
    messages = [{"id": "1", "type": "user", "content": "hi", "timestamp": "t1"},
                {"id": "2", "type": "gemini", "content": "", "toolCalls": [{"name": "ls"}]},
                {"id": "3", "type": "gemini", "content": "Hello!"}]
    path.write_text(json.dumps({"sessionId": "g-1", "messages": messages}))
    assert detect_format(path) == "gemini"
    first = read_new(path, "gemini")
    assert humans(first.events) == ["hi"]
    messages.append({"id": "4", "type": "user", "content": "Prefer tabs, always."})
    path.write_text(json.dumps({"sessionId": "g-1", "messages": messages}))
    second = read_new(path, "gemini", first.offset, first.state)
    assert humans(second.events) == ["Prefer tabs, always."]
    assert assistants(second.events) == ["Hello!"]  # the pending answer, ended by the next human turn
    path.write_text('{"sessionId": "g-1", "messages": [')  # half-written: nothing, no error
    assert read_new(path, "gemini", second.offset, second.state).events == []


def test_damaged_and_unknown_lines_are_skipped(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"type":"user","sessionId":"x","message":{"role":"user","content":"first"}}\n'
        "this is not json\n[1, 2]\n"
        '{"type":"brand-new-type","sessionId":"x"}\n'
        '{"type":"user","sessionId":"x","message":{"role":"user","content":"second"}}\n'
    )
    assert humans(read_all(path, "claude-code")) == ["first", "second"]


# ------------------------------------------------------------------ the real transcripts


@real
def test_real_claude_short_session():
    events = read_all(REAL / "claude-code/marot-spotter/short.jsonl")
    # tool results and "[Request interrupted by user for tool use]" are not human; /model is a system line
    assert humans(events) == ["mix phx.server doesnt seem to start"]
    assert assistants(events) == ["Let me check the project structure and try running the server to see the error."]


@real
def test_real_claude_queue_operation_and_meta_lines():
    events = read_all(REAL / "claude-code/marot-spotter/tool_heavy.jsonl")
    texts = humans(events)
    assert texts[0] == "start phoenix in background"
    assert texts.count("/mcp") == 1  # typed while busy (enqueue), then replayed as a command: counted once
    assert texts[-1].startswith("scrolling back in xterm.js still does not work")
    assert not any("Caveat" in t or "local-command-stdout" in t or "Reconnected" in t for t in texts)


@real
def test_real_claude_request_only_inside_command_args():
    events = read_all(REAL / "claude-code/marot-spotter/subagent.jsonl")
    texts = humans(events)
    assert texts[0].startswith("/handgemacht:create-beads websearch to learn how to fastest setup credo")
    assert texts[1:] == ["create the beads"]  # the skill expansion (isMeta) is not human
    assert not any("SCOPE" in t for t in texts)


@real
def test_real_claude_compaction():
    events = read_all(REAL / "claude-code/marot-spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.lines-1472-1495.jsonl")
    compactions = [e for e in events if isinstance(e, Compaction)]
    assert [c.line for c in compactions] == [10]  # compact_boundary; its summary line is not a second one
    texts = humans(events)
    assert texts == ["/compact and continue with the reamining tasks", "continue implementation"]
    assert not any("being continued from a previous conversation" in t for t in texts)


@real
def test_real_claude_subagent_files_hold_no_human_turns():
    folder = REAL / "claude-code/marot-spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents"
    for path in folder.glob("*.jsonl"):
        assert humans(read_all(path)) == [], path.name  # the first "user" line is the parent model


@real
def test_real_claude_old_layout_with_inline_sidechains():
    events = read_all(REAL / "claude-code/d-kimuson-claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl")
    assert humans(events) == ["/orchestrator @CLAUDE.md を最新の状態にアップデートしてください"]
    assert not any("Examine the package.json" in t for t in assistants(events) + humans(events))


@real
def test_real_claude_init_only_session():
    events = read_all(REAL / "claude-code/d-kimuson-claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl")
    assert humans(events) == ["/init"]


@real
def test_real_codex_rollout():
    path = next((REAL / "codex").rglob("rollout-*.jsonl"))
    assert detect_format(path) == "codex"
    events = read_all(path)
    assert humans(events) == ["show tools", "let's update the defailt context compart to 90 in env var"]
    assert not any("AGENTS.md" in t or "permissions" in t for t in humans(events))
    assert all(e.session_id == "019e1625-789d-76c0-80ab-3724b5ddb799" for e in events)
    assert len(assistants(events)) == 2  # commentary messages of one turn joined


@real
def test_real_gemini_session():
    path = next((REAL / "gemini").rglob("session-*.json"))
    assert detect_format(path) == "gemini"
    assert detect_format(path.with_name("logs.json")) is None  # prompts only, not a session
    events = read_all(path)
    assert humans(events) == [
        "hi",
        "Explain what this is",
        "Make a copy of lead_memory.txt name it as lead_gemini.txt and optimize this instructions to be "
        "shorter, consice but without loosing functionality",
    ]
    assert len(assistants(events)) == 3  # tool-call-only messages hold no text


@real
def test_real_aider_history_starts_mid_session_and_skips_lint_lines(tmp_path):
    path = next((REAL / "aider").rglob("chat-history*.md"))
    assert detect_format(path) == "aider"
    events = read_all(path)
    texts = humans(events)
    assert "don't use --no-git in those tests" in texts
    assert "pass --yes to those new tests" in texts
    assert not any(t.startswith("# Fix any errors below") for t in texts)
    assert not any("hook id: flake8" in t for t in texts)  # the lint block at the top is aider's own
    assert len({e.session_id for e in events}) > 20  # one per "# aider chat started at" header with turns
    # reading it in two halves (cut mid-line) gives the same human turns
    copy = tmp_path / "history.md"
    data = path.read_bytes()
    copy.write_bytes(data[: len(data) // 2 + 7])
    first = read_new(copy, "aider")
    copy.write_bytes(data)
    second = read_new(copy, "aider", first.offset, first.state)
    assert humans(first.events + second.events) == texts[: len(humans(first.events + second.events))]
    assert len(humans(first.events + second.events)) >= len(texts) - 1  # the very last waits for its end


@real
def test_every_real_transcript_has_a_detected_format():
    for path in REAL.rglob("*"):
        if path.suffix in (".jsonl",) or path.name.startswith("session-") or "chat-history" in path.name:
            assert detect_format(path) is not None, path
    assert detect_format(REAL / "PROVENANCE.md") is None
    shutil.disk_usage(REAL)  # the folder is readable


def test_codex_fixture_injected_context_tool_calls_and_compaction():
    path = FIXTURES / "codex_small.jsonl"
    assert detect_format(path) == "codex"
    events = read_all(path)
    assert humans(events) == ["we always use pnpm, never npm", "continue"]  # said once, not per copy
    assert assistants(events) == ["Switching the scripts to pnpm."]
    [compaction] = [e for e in events if isinstance(e, Compaction)]
    assert compaction.line == 10 and compaction.session_id == "cx-1"
    assert all(e.session_id == "cx-1" for e in events)


def test_a_transcript_whose_first_prompt_is_a_long_pasted_log_is_still_recognised(tmp_path):
    """The first line holds a 100 KB pasted log: detection reads whole lines, not only the first 64 KiB."""
    log = "\n".join(f"2026-11-26 12:00:{n % 60:02d} ERROR worker {n}: connection reset by peer" for n in range(1600))
    path = tmp_path / "session.jsonl"
    lines = [{"type": "user", "sessionId": "s1", "message": {"role": "user", "content": f"this keeps happening:\n{log}"}},
             {"type": "assistant", "sessionId": "s1",
              "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "Looking."}]}},
             {"type": "user", "sessionId": "s1", "message": {"role": "user", "content": "always add an alembic migration"}}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert len(path.read_text().splitlines()[0]) > 100_000
    assert detect_format(path) == "claude-code"
    assert humans(read_all(path))[-1] == "always add an alembic migration"
