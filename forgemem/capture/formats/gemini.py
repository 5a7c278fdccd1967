"""Gemini CLI sessions: one JSON object per session (`messages[]`)."""

from __future__ import annotations

import json
from pathlib import Path

from forgemem.capture.formats.base import (
    Builder,
    ReadResult,
    clean_text,
)
from forgemem.capture.formats.registry import Format


def _read_gemini(path: Path, offset: int, state: dict) -> ReadResult:
    """Gemini CLI rewrites one JSON object per session: re-read it, emit new messages.

    `offset` is the file size seen; state["messages"] counts messages consumed.
    """
    builder = Builder(path, state)
    state.setdefault("messages", 0)
    try:
        data = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError, OSError):
        return ReadResult([], offset, state)  # half-written: try again on the next change
    size = path.stat().st_size
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        return ReadResult([], size, state)
    state["session"] = data.get("sessionId") or state.get("session")
    messages = data["messages"]
    if len(messages) < state["messages"]:
        state["messages"] = 0  # the file was replaced by a shorter session
    for number, message in enumerate(messages[state["messages"] :], start=state["messages"] + 1):
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
        if not isinstance(content, str):
            continue
        kind, timestamp = message.get("type"), message.get("timestamp")
        if kind == "user":
            text = clean_text(content)
            if text:
                builder.human(text, timestamp, number, 0, size)
        elif kind in ("gemini", "model", "assistant"):
            builder.assistant(clean_text(content), timestamp, number, 0, size)
        elif kind == "compression" or message.get("compressed"):
            builder.compaction(timestamp, number)
    state["messages"] = len(messages)
    state["line"] = len(messages)
    return ReadResult(builder.events, size, state)


def _is_gemini(name: str, head: str) -> bool | None:
    if name.endswith(".json"):
        return '"messages"' in head and '"sessionId"' in head
    return None


FORMAT = Format("gemini", read=_read_gemini, file=_is_gemini)
