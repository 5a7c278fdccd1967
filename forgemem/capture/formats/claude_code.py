"""Claude Code session JSONL (subagent files, the older layout with inline sidechains)."""

from __future__ import annotations

from forgemem.capture.formats.base import (
    Builder,
    blocks,
    clean_text,
    digest,
    human_text,
    read_jsonl,
    text_of,
)
from forgemem.capture.formats.registry import Format


def _claude_line(builder: Builder, record: dict, line: int, byte_start: int, byte_end: int) -> None:
    state = builder.state
    kind = record.get("type")
    if record.get("sessionId") and isinstance(record["sessionId"], str):
        state["session"] = record["sessionId"]
    timestamp = record.get("timestamp")
    if kind == "system" and record.get("subtype") == "compact_boundary":
        builder.compaction(timestamp, line)
        state["compacted_at"] = line
        return
    if kind == "queue-operation":
        # text typed while the agent was busy; it may never appear as a user line
        content = record.get("content")
        if record.get("operation") == "enqueue" and isinstance(content, str):
            text = human_text(content)
            if text:
                builder.human(text, timestamp, line, byte_start, byte_end)
                queued = state.setdefault("queued", [])
                queued.append(digest(text))  # a digest: the state never holds the words
                del queued[:-20]
        return
    if kind not in ("user", "assistant"):
        return  # progress, summary, file-history-snapshot, unknown types
    if record.get("isSidechain"):
        return  # a subagent: its "user" is the parent model, its answers go to that model
    message = record.get("message")
    if not isinstance(message, dict):
        return
    if kind == "assistant":
        text = "\n\n".join(
            clean_text(text_of(b.get("text"))) for b in blocks(message.get("content")) if b.get("type") == "text"
        )
        builder.assistant(text, timestamp, line, byte_start, byte_end)
        return
    if record.get("isCompactSummary"):
        # the model-written summary; a compaction unless its boundary came just before
        if state.get("compacted_at") is None or line - state["compacted_at"] > 3:
            builder.compaction(timestamp, line)
        state["compacted_at"] = None
        return
    if record.get("isMeta") or record.get("toolUseResult") is not None:
        return
    content = blocks(message.get("content"))
    if any(b.get("type") == "tool_result" for b in content):
        return
    parts = [human_text(text_of(b.get("text"))) for b in content if b.get("type") == "text"]
    text = "\n\n".join(p for p in parts if p)
    if not text:
        return
    queued = state.get("queued") or []
    if digest(text) in queued:
        queued.remove(digest(text))  # already counted when it was queued
        return
    builder.human(text, timestamp, line, byte_start, byte_end)


def _read(path, offset: int, state: dict, limit: int | None = None):
    return read_jsonl(path, offset, state, _claude_line, limit)


FORMAT = Format("claude-code", read=_read,
                record=lambda record: "sessionId" in record or record.get("type") in (
                    "summary", "file-history-snapshot", "queue-operation", "user", "assistant", "progress"))
