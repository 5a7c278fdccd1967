"""Codex rollout JSONL (`~/.codex/sessions/**/rollout-*.jsonl`)."""

from __future__ import annotations

from forgemem.capture.formats.base import (
    INJECTED_PREFIXES,
    Builder,
    clean_text,
    read_jsonl,
)
from forgemem.capture.formats.registry import Format


def _codex_line(builder: Builder, record: dict, line: int, byte_start: int, byte_end: int) -> None:
    state = builder.state
    kind = record.get("type")
    payload: dict = record["payload"] if isinstance(record.get("payload"), dict) else {}
    timestamp = record.get("timestamp")
    if kind == "session_meta":
        if isinstance(payload.get("id"), str) and payload["id"]:
            state["session"] = payload["id"]
    elif kind == "compacted":
        builder.compaction(timestamp, line)
    elif kind == "event_msg":
        # the event stream holds exactly what the person typed and what the agent said;
        # the response_item copies also hold injected AGENTS.md / environment context
        message = payload.get("message")
        if not isinstance(message, str):
            return
        if payload.get("type") == "user_message":
            text = clean_text(message)
            if text and not text.startswith(INJECTED_PREFIXES):
                builder.human(text, timestamp, line, byte_start, byte_end)
        elif payload.get("type") == "agent_message":
            builder.assistant(message, timestamp, line, byte_start, byte_end)


def _read(path, offset: int, state: dict, limit: int | None = None):
    return read_jsonl(path, offset, state, _codex_line, limit)


FORMAT = Format("codex", read=_read,
                record=lambda record: "payload" in record and record.get("type") in (
                    "session_meta", "response_item", "event_msg", "turn_context", "compacted"))
