"""Gemini CLI sessions: one JSON object per session (`messages[]`)."""

from __future__ import annotations

import json
from pathlib import Path

from forgemem.capture.formats.base import (
    Builder,
    ReadResult,
    clean_text,
    skip_note,
    text_of,
)
from forgemem.capture.formats.registry import Format

MAX_SESSION_BYTES = 64 * 1024 * 1024  # a session file larger than this is not parsed (said, not fatal)


def _read_gemini(path: Path, offset: int, state: dict, limit: int | None = None) -> ReadResult:
    """Gemini CLI rewrites one JSON object per session: re-read it, emit new messages.

    `offset` is the file size seen; state["messages"] counts messages consumed.
    A message that cannot be read is skipped (named in `skipped`), never fatal.
    """
    builder = Builder(path, state)
    if not isinstance(state.get("messages"), int):
        state["messages"] = 0
    try:
        size = path.stat().st_size
        if size > MAX_SESSION_BYTES:
            return ReadResult([], size, state, [f"the session file is over {MAX_SESSION_BYTES} bytes; not read"])
        data = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError, OSError):
        return ReadResult([], offset, state)  # half-written: try again on the next change
    except (RecursionError, ValueError) as exc:  # nested too deeply, a number too long: said, read again when rewritten
        return ReadResult([], offset, state, [f"the session cannot be read ({type(exc).__name__})"])
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        return ReadResult([], size, state)
    if isinstance(data.get("sessionId"), str) and data["sessionId"]:
        state["session"] = data["sessionId"]
    messages = data["messages"]
    if len(messages) < state["messages"]:
        state["messages"] = 0  # the file was replaced by a shorter session
    skipped: list[str] = []
    for number, message in enumerate(messages[state["messages"] :], start=state["messages"] + 1):
        if not isinstance(message, dict):
            continue
        try:
            _message(builder, message, number, size)
        except Exception as exc:  # noqa: BLE001 - one odd message never stops a session
            skipped.append(skip_note(number, 0, size, f"message cannot be read ({type(exc).__name__})"))
    state["messages"] = len(messages)
    state["line"] = len(messages)
    return ReadResult(builder.events, size, state, skipped)


def _message(builder: Builder, message: dict, number: int, size: int) -> None:
    content = message.get("content")
    if isinstance(content, list):
        content = "\n".join(text_of(p.get("text")) for p in content if isinstance(p, dict))
    if not isinstance(content, str):
        return
    kind, timestamp = message.get("type"), message.get("timestamp")
    if kind == "user":
        text = clean_text(content)
        if text:
            builder.human(text, timestamp, number, 0, size)
    elif kind in ("gemini", "model", "assistant"):
        builder.assistant(clean_text(content), timestamp, number, 0, size)
    elif kind == "compression" or message.get("compressed"):
        builder.compaction(timestamp, number)


def _is_gemini(name: str, head: str) -> bool | None:
    if name.endswith(".json"):
        return '"messages"' in head and '"sessionId"' in head
    return None


FORMAT = Format("gemini", read=_read_gemini, file=_is_gemini)
