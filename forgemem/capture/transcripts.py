"""Agent transcripts in, a stream of human and assistant turns out.

Each supported format has a small parser that reads the *new* part of a file
(from a byte offset kept by the observer) and yields:

- `Turn`: one human or assistant message (tool calls, tool output, model-written
  "user" lines and injected context are never turns), with the session id,
  a running turn index, a timestamp and where in the file it came from;
- `Compaction`: the agent compacted its context here.

Parsers keep a small JSON-able `state` between reads (the pending assistant
turn, the session id, line numbers), so reading a file in pieces gives the
same turns as reading it whole; a last line without its newline waits for it.

Formats: `claude-code` (session JSONL, subagent files, the older layout with
inline sidechains), `codex` (rollout JSONL), `aider` (`.aider.chat.history.md`),
`gemini` (one session JSON object), `jsonl` (plain `{"role", "content"}` lines).
"""

from __future__ import annotations

from pathlib import Path

from forgemem.capture.formats import registry
from forgemem.capture.formats.base import (
    ASSISTANT,
    HUMAN,
    Builder,
    Compaction,
    Event,
    ReadResult,
    Turn,
    clean_text,
    human_text,
    storable_state,
)

__all__ = ["ASSISTANT", "FORMATS", "HUMAN", "Compaction", "Event", "ReadResult", "Turn", "clean_text",
           "detect_format", "flush", "human_text", "read_all", "read_new", "recorded_cwd", "storable_state"]

FORMATS = registry.names()


def detect_format(path: Path) -> str | None:
    """The format of a transcript from its name and first lines; None when unknown."""
    return registry.detect(path)


def recorded_cwd(path: Path) -> str | None:
    """The folder the session ran in, when its transcript records one."""
    return registry.recorded_cwd(path)


def read_new(path: Path, fmt: str, offset: int = 0, state: dict | None = None, limit: int | None = None) -> ReadResult:
    """Parse what was appended to `path` since `offset` (state from the previous read).

    With `limit`, about that many bytes at most (whole lines; `more` says whether it stopped there).
    What the file holds never makes it raise: a record that cannot be read is skipped and named in
    `skipped`, and the offset moves past it.
    """
    return registry.get(fmt).read(path, offset, dict(state or {}), limit)


def flush(path: Path, fmt: str, state: dict) -> list[Event]:
    """End the turn in progress (the pending answer, aider's unfinished message): a compaction
    or the end of a session says it is complete even though no next turn came."""
    builder = Builder(path, state)
    end_turn = registry.get(fmt).end_turn
    if end_turn is not None:
        end_turn(builder, state)
    builder.flush()
    return builder.events


def read_all(path: Path, fmt: str | None = None) -> list[Event]:
    """Every event of a whole file, the pending assistant turn included."""
    fmt = fmt or detect_format(path)
    if fmt is None:
        raise ValueError(f"cannot tell the format of {path}")
    result = read_new(path, fmt)
    return result.events + flush(path, fmt, result.state)
