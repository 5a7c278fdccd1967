"""aider's `.aider.chat.history.md`."""

from __future__ import annotations

import re
from pathlib import Path

from forgemem.capture.formats.base import (
    HUMAN,
    MAX_LINE_BYTES,
    MAX_TURN_TEXT,
    Builder,
    Lines,
    ReadResult,
    skip_note,
)
from forgemem.capture.formats.registry import Format

_AIDER_START = re.compile(r"^# aider chat started at (.+?)\s*$")
#: commands whose following unprefixed lines are program output, not the model
_AIDER_RUN = re.compile(r"^/(run|test|lint|git|commit|diff|tokens|ls|help|settings|map)\b|^!")
_AIDER_MODELINE = re.compile(r"^-\*-.*-\*-\s*$")
_AIDER_AUTO = ("# Fix any errors below", "Fix any errors below")


def _read_aider(path: Path, offset: int, state: dict, limit: int | None = None) -> ReadResult:
    """Human lines start with `#### `, tool output with `> `; the rest is the model.

    Consecutive `####` lines are one message; it is emitted when a line of
    another kind follows, so a message is never split between reads.
    """
    builder = Builder(path, state)
    state.setdefault("human", None)  # the human message being collected
    state.setdefault("mode", "model")  # model | output (after /run, /test …)
    if state.get("session") is None:
        state["session"] = f"aider:{path.name}"
    lines = Lines(path, offset, state, limit)
    skipped: list[str] = []
    for byte_start, byte_end, raw in lines:
        state["line"] += 1
        line_no = state["line"]
        if raw is None:
            skipped.append(skip_note(line_no, byte_start, byte_end, f"longer than {MAX_LINE_BYTES} bytes"))
            continue
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if line.startswith("####"):
            content = line[5:] if line.startswith("#### ") else line[4:]
            pending = state["human"]
            if pending is None:
                builder.flush()
                state["human"] = {"lines": [content.rstrip()], "line": line_no, "byte_start": byte_start,
                                  "chars": len(content)}
            elif pending.get("chars", 0) < MAX_TURN_TEXT:  # past it the message keeps its start
                pending["lines"].append(content.rstrip())
                pending["chars"] = pending.get("chars", 0) + len(content)
            state["human"]["line_end"], state["human"]["byte_end"] = line_no, byte_end
            continue
        _aider_end_human(builder, state)
        started = _AIDER_START.match(line)
        if started:
            builder.flush()
            state["session"] = f"aider:{started.group(1)}"
            state["started"] = started.group(1)
            state["mode"] = "output"  # the start-up banner follows
        elif line.startswith(">") or _AIDER_MODELINE.match(line):
            continue
        elif state["mode"] == "model" and line.strip():
            builder.assistant(line, state.get("started"), line_no, byte_start, byte_end)
        elif state["mode"] == "model" and state.get("pending"):
            state["pending"]["text"] += "\n"
    return ReadResult(builder.events, lines.offset, state, skipped, lines.more)


def _aider_end_human(builder: Builder, state: dict) -> None:
    pending = state["human"]
    if pending is None:
        return
    state["human"] = None
    text = "\n".join(pending["lines"]).strip()
    if not text or text.startswith(_AIDER_AUTO):
        state["mode"] = "model"
        return  # aider's own lint/test feedback, written as if the user typed it
    state["mode"] = "output" if _AIDER_RUN.match(text) else "model"
    builder._emit(  # noqa: SLF001 - one human message spanning several lines
        HUMAN,
        text,
        state.get("started"),
        pending["line"],
        pending["line_end"],
        pending["byte_start"],
        pending["byte_end"],
    )


def _is_aider(name: str, head: str) -> bool | None:
    if name.endswith(".aider.chat.history.md"):
        return True
    if name.endswith(".md"):
        return bool(re.search(r"^# aider chat started at ", head, re.M))
    return None


FORMAT = Format("aider", read=_read_aider, file=_is_aider, end_turn=lambda builder, state: (
    _aider_end_human(builder, state) if "human" in state else None))
