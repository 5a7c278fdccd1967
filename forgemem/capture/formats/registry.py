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


def detect(path: Path) -> str | None:
    """The format of a transcript from its name and first lines; None when unknown."""
    import json

    name = path.name
    try:
        with open(path, "rb") as handle:
            head = handle.read(65536).decode("utf-8", errors="replace")
    except OSError:
        return None
    for fmt in formats().values():
        if fmt.file is not None:
            verdict = fmt.file(name, head)
            if verdict is not None:
                return fmt.name if verdict else None
    for line in head.splitlines()[:20]:
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
