"""The transcript format registry: one module per format, each defining a `Format`.

Supporting a new agent's transcripts means adding one module to `forgemem/capture/formats/`
and its name to `MODULES`: a reader of what was appended since an offset, and how to
recognise the format (by file name and start, or by a JSONL record).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path


@dataclass(frozen=True)
class Format:
    name: str
    read: Callable  # (path, offset, state, limit=None) -> ReadResult; never raises on what the file holds
    record: Callable[[dict], bool] | None = None  # a JSONL record of this format?
    file: Callable[[str, str], bool | None] | None = None  # (file name, its start) -> yes / no / cannot tell
    end_turn: Callable | None = None  # (builder, state): finish what the format holds open


#: in the order they are tried when detecting a format
MODULES = ("aider", "gemini", "codex", "claude_code", "jsonl")


@lru_cache(maxsize=1)
def formats() -> dict[str, Format]:
    found = {}
    for module in MODULES:
        fmt = importlib.import_module(f"forgemem.capture.formats.{module}").FORMAT
        found[fmt.name] = fmt
    return found


def names() -> tuple[str, ...]:
    return tuple(formats())


def get(name: str) -> Format:
    try:
        return formats()[name]
    except KeyError:
        raise ValueError(f"unknown transcript format {name!r} (known: {', '.join(names())})") from None


#: what format detection reads: the head a file-name check looks at, then up to this many whole lines of at
#: most this many bytes in all (a first prompt holding a pasted log is one line of 100 KB or more); a line longer
#: than that is passed over (read, not kept), up to SKIP_BYTES in all, so a transcript whose first prompt holds a
#: pasted dump of many megabytes is still known by the records after it
HEAD_BYTES = 65536
RECORD_LINES = 20
RECORD_BYTES = 4 * 1024 * 1024
SKIP_BYTES = 256 * 1024 * 1024
_CHUNK = 1024 * 1024


def _first_lines(handle, count: int, budget: int, skip: int = SKIP_BYTES) -> list[bytes]:
    """Up to `count` whole lines from `handle`, reading at most `budget` bytes of lines kept; a line longer than
    what is left of the budget is passed over, reading at most `skip` bytes of such lines in all."""
    lines: list[bytes] = []
    while len(lines) < count and budget > 0:
        line = handle.readline(budget)
        if not line:
            break
        if line.endswith(b"\n") or len(line) < budget:  # whole, or the file's last line
            lines.append(line)
            budget -= len(line)
            continue
        skip -= len(line)
        while skip > 0 and not line.endswith(b"\n"):
            line = handle.readline(min(skip, _CHUNK))
            if not line:
                return lines
            skip -= len(line)
        if skip <= 0:
            break
    return lines


def detect(path: Path) -> str | None:
    """The format of a transcript from its name and first lines; None when unknown."""
    import json

    name = path.name
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES).decode("utf-8", errors="replace")
            handle.seek(0)
            lines = [line.decode("utf-8", errors="replace") for line in _first_lines(handle, RECORD_LINES,
                                                                                      RECORD_BYTES)]
    except OSError:
        return None
    for fmt in formats().values():
        if fmt.file is not None:
            verdict = fmt.file(name, head)
            if verdict is not None:
                return fmt.name if verdict else None
    for line in lines:
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, a number too long, nested too deeply
            continue
        if not isinstance(record, dict):
            continue
        for fmt in formats().values():
            if fmt.record is not None and fmt.record(record):
                return fmt.name
    return None


def recorded_cwd(path: Path) -> str | None:
    """The folder the session ran in, as its transcript records it (Claude Code: "cwd" on its records; Codex: the
    session_meta payload's "cwd"); None when it records none."""
    import json
    import os

    try:
        with open(path, "rb") as handle:
            lines = _first_lines(handle, RECORD_LINES, RECORD_BYTES)
    except OSError:
        return None
    for raw in lines:
        try:
            record = json.loads(raw.decode("utf-8", errors="replace"))
        except (ValueError, RecursionError):
            continue
        for holder in (record, record.get("payload")) if isinstance(record, dict) else ():
            if isinstance(holder, dict) and isinstance(holder.get("cwd"), str) and os.path.isabs(holder["cwd"]):
                return holder["cwd"]
    return None
