"""Plain JSONL: one `{"role", "content"}` object per line."""

from __future__ import annotations

from forgemem.capture.formats.base import (
    Builder,
    blocks,
    clean_text,
    read_jsonl,
    text_of,
)
from forgemem.capture.formats.registry import Format


def _plain_line(builder: Builder, record: dict, line: int, byte_start: int, byte_end: int) -> None:
    role = record.get("role")
    content = record.get("content")
    if isinstance(content, list):
        content = "\n\n".join(text_of(b.get("text")) for b in blocks(content) if b.get("type") in ("text", None))
    if not isinstance(content, str):
        return
    if isinstance(record.get("session_id"), str | int) and record["session_id"]:
        builder.state["session"] = str(record["session_id"])
    timestamp = record.get("timestamp")
    if role == "user":
        text = clean_text(content)
        if text:
            builder.human(text, timestamp, line, byte_start, byte_end)
    elif role == "assistant":
        builder.assistant(clean_text(content), timestamp, line, byte_start, byte_end)
    elif role == "compaction" or record.get("type") == "compaction":
        builder.compaction(timestamp, line)


def _read(path, offset: int, state: dict, limit: int | None = None):
    return read_jsonl(path, offset, state, _plain_line, limit)


FORMAT = Format("jsonl", read=_read,
                record=lambda record: "role" in record and "content" in record)
