"""The memory record: what one memory file holds, independent of any file.

The vocabulary here (categories, relationships, scopes, triggers) is the
normative one from the file format; every other module imports it from here.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

CATEGORIES = (
    "coding-preferences",
    "project-conventions",
    "architectural-decisions",
    "user-facts",
    "corrections",
)
RELATIONSHIPS = ("refines", "contradicts", "relates-to")
EDGE_TYPES = ("supersedes",) + RELATIONSHIPS
SCOPES = ("repo", "user")
TRIGGERS = ("cadence", "compaction", "manual", "import")

#: Front-matter keys in the order they are always written.
REQUIRED_KEYS = (
    "id",
    "created_at",
    "updated_at",
    "version",
    "scope",
    "category",
    "supersedes",
    "related",
    "session_id",
    "trigger",
)
#: Optional keys the format knows; written after the required ones, in this order.
OPTIONAL_KEYS = ("tags", "confidence", "source", "status")

#: Every file with this ending below a memory folder is a memory.
SUFFIX = ".md"
#: Larger files are reported as a problem and never read.
MAX_FILE_BYTES = 1024 * 1024

#: `status` of a memory written by `forgemem forget`.
RETRACTED = "retracted"
PROPOSED = "proposed"  # captured with capture_review: true, waiting for `forgemem review --accept`

ID_PATTERN = re.compile(
    r"^mem_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
)


def new_id() -> str:
    return f"mem_{uuid.uuid4()}"


def is_valid_id(value: object) -> bool:
    return isinstance(value, str) and bool(ID_PATTERN.match(value))


def utc_now() -> datetime:
    return to_utc(datetime.now(UTC))


def to_utc(value: datetime) -> datetime:
    """UTC, second precision; a naive datetime is taken to be UTC already."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).replace(microsecond=0)


def format_timestamp(value: datetime) -> str:
    return to_utc(value).strftime("%Y-%m-%dT%H:%M:%SZ")


def normalize_body(text: str) -> str:
    """The canonical body: LF line endings, no surrounding blank space."""
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


# A terminal escape sequence (CSI "ESC [ … final", OSC "ESC ] … BEL or ESC \\", a two-character
# escape), then any other C0 or C1 control character but tab and newline, and DEL.
_ESCAPE_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def without_controls(text: str) -> str:
    """The text without terminal escape sequences and control characters (tab and newline stay; a
    carriage return becomes a newline): what forgemem writes into a new memory. Pasted terminal output
    keeps its words and loses its colours; nothing in a memory can set a title or move a cursor."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", _ESCAPE_SEQUENCE.sub("", text))


def visible_controls(text: str) -> str:
    """The text with each control character but tab and newline shown as `\\xNN`: how forgemem prints
    text it did not write (a hand-made or cloned memory file) to a terminal or an agent's context."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


@dataclass(frozen=True)
class Relation:
    """A typed edge from one memory to another (`related` in the file)."""

    id: str
    relationship: str


@dataclass(frozen=True)
class Source:
    """Where a memory came from: the typed reading of `source` in the file.

    The file holds a mapping (`transcript`: a path relative to the project or
    `~/…`, `lines`: one line or a range such as `412-430`, `quote`: a few
    verbatim words) or a plain string (a document, a URL: `text` here). Keys
    this version does not know are kept in `other`, in their order. The file's
    own value is what is written back (`Memory.extra["source"]`), so loading and
    saving a file changes no byte; `front_matter()` is the value for a new memory.
    """

    transcript: str | None = None
    lines: str | None = None
    quote: str | None = None
    text: str | None = None
    other: dict[str, Any] = field(default_factory=dict)

    KEYS: ClassVar[tuple[str, ...]] = ("transcript", "lines", "quote")

    @classmethod
    def parse(cls, value: Any) -> Source | None:
        """The source from its front-matter value (None when there is none). A known key whose value is not
        a single value (a list, a mapping) is kept in `other`, as it is."""
        if value is None or value == "" or value == {}:
            return None
        if not isinstance(value, dict):
            return cls(text=str(value))
        known: dict[str, str] = {}
        other: dict[str, Any] = {}
        for key, item in value.items():
            if key in cls.KEYS and item is not None and not isinstance(item, (dict, list)):
                known[key] = str(item)  # `lines: 12` is read as a number
            else:
                other[key] = item
        return cls(**known, other=other)

    def front_matter(self) -> str | dict[str, Any]:
        """The value written under `source` for a new memory: the known keys in their order, then the others."""
        if self.text is not None:
            return self.text
        value: dict[str, Any] = {key: getattr(self, key) for key in self.KEYS if getattr(self, key) is not None}
        value.update((key, item) for key, item in self.other.items() if key not in value)
        return value

    @property
    def where(self) -> str:
        """The transcript (or the imported `file`) and its lines (`path:412-430`), or the plain-string source."""
        if self.text is not None:
            return self.text
        return (self.transcript or self._file or "") + (f":{self.lines}" if self.lines else "")

    @property
    def _file(self) -> str | None:
        """An imported file (`forgemem import` writes `file:`), when no transcript is named."""
        value = self.other.get("file")
        return str(value) if value is not None and not isinstance(value, (dict, list)) else None

    def describe(self) -> str:
        """The one line people read: where, the quote, then any other key (`path:12 — “words” · key: value`)."""
        parts = [self.where] if self.where else []
        if self.quote:
            parts.append(f"“{self.quote}”")
        line = " — ".join(parts)
        for key, item in self.other.items():
            if item is not None and not (key == "file" and self.transcript is None and self._file is not None):
                line += f"{' · ' if line else ''}{key}: {_jsonable(item)}"
        return line


@dataclass
class Memory:
    """One memory. `path` is where it was loaded from (None before it is written)."""

    id: str
    body: str
    scope: str
    category: str
    created_at: datetime
    updated_at: datetime
    version: int = 1
    supersedes: tuple[str, ...] = ()
    related: tuple[Relation, ...] = ()
    session_id: str | None = None
    trigger: str = "manual"
    #: Optional known keys (tags, confidence, source, status) and any unknown
    #: keys, in the order they will be written.
    extra: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None

    @classmethod
    def from_front_matter(cls, meta: dict, body: str, path: Path | None = None) -> Memory:
        """The record from front matter already checked (`memfile`) or cached from a checked file
        (`index`): the one place a `Memory` is built from its keys. Timestamps may be datetimes
        or ISO-8601 text; unknown keys are kept, in their order, after the optional ones."""
        supersedes = meta["supersedes"]
        extra = {key: meta[key] for key in OPTIONAL_KEYS if key in meta}
        extra.update((k, v) for k, v in meta.items() if k not in REQUIRED_KEYS and k not in OPTIONAL_KEYS)
        return cls(
            id=meta["id"],
            body=body,
            scope=meta["scope"],
            category=meta["category"],
            created_at=_stamp(meta["created_at"]),
            updated_at=_stamp(meta["updated_at"]),
            version=meta["version"],
            supersedes=() if supersedes is None else (supersedes,) if isinstance(supersedes, str) else tuple(supersedes),
            related=tuple(r if isinstance(r, Relation) else Relation(r["id"], r["relationship"])
                          for r in meta.get("related") or ()),
            session_id=meta.get("session_id"),
            trigger=meta["trigger"],
            extra=extra,
            path=path,
        )

    @property
    def tags(self) -> list[str]:
        tags = self.extra.get("tags") or []
        return [str(t) for t in tags] if isinstance(tags, list) else []

    @property
    def confidence(self) -> float | None:
        value = self.extra.get("confidence")
        return float(value) if isinstance(value, (int, float)) else None

    @property
    def status(self) -> str | None:
        value = self.extra.get("status")
        return str(value) if value is not None else None

    @property
    def source(self) -> Source | None:
        """Where it came from, typed (`extra["source"]` holds the file's own value)."""
        return Source.parse(self.extra.get("source"))

    @property
    def retracted(self) -> bool:
        return self.status == RETRACTED

    @property
    def title(self) -> str:
        """The first line of the body (the graph's JSON, a retraction's text); listings use `one_line`."""
        return self.body.split("\n", 1)[0]

    def short_id(self) -> str:
        return short(self.id)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view, for `--json` output and the Python API."""
        data: dict[str, Any] = {
            "id": self.id,
            "scope": self.scope,
            "category": self.category,
            "version": self.version,
            "created_at": format_timestamp(self.created_at),
            "updated_at": format_timestamp(self.updated_at),
            "supersedes": list(self.supersedes),
            "related": [
                {"id": r.id, "relationship": r.relationship} for r in self.related
            ],
            "session_id": self.session_id,
            "trigger": self.trigger,
        }
        for key, value in self.extra.items():
            data[key] = _jsonable(value)
        data["path"] = str(self.path) if self.path else None
        data["content"] = self.body
        return data


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return format_timestamp(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def memory_count(n: int, kind: str = "") -> str:
    """"1 memory", "3 memories" (with `kind`: "1 captured memory")."""
    return f"{n} {kind + ' ' if kind else ''}memor{'y' if n == 1 else 'ies'}"


def one_line(what: Memory | str, width: int | None = None) -> str:
    """A memory's text (or any text) on one line for people: each run of blank space, line breaks
    included, one space; longer than `width` characters: cut there, "…" the last of them. Every
    listing of memories renders them with this (the context block has its own, fence-safe form)."""
    text = " ".join((what.body if isinstance(what, Memory) else what).split())
    if width is None or len(text) <= width:
        return text
    return text[: width - 1].rstrip() + "…"


def short(memory_id: str) -> str:
    """The 8 hex digits people see for an id (`mem_9f7ab1bf-…` -> `9f7ab1bf`); `short_ids` makes
    them unambiguous where a listing needs it, and every command accepts either back."""
    return memory_id.removeprefix("mem_")[:8]


def short_ids(ids, length: int = 8) -> dict[str, str]:
    """For each id, the shortest prefix (without `mem_`, at least `length` characters)
    that no other of these ids shares: what a chat pane shows and `resolve` accepts."""
    bare = sorted({i.removeprefix("mem_") for i in ids})
    result = {}
    for n, memory_id in enumerate(bare):
        need = length
        for other in (bare[n - 1] if n else "", bare[n + 1] if n + 1 < len(bare) else ""):
            common = 0
            while common < min(len(other), len(memory_id)) and other[common] == memory_id[common]:
                common += 1
            need = max(need, common + 1)
        result[f"mem_{memory_id}"] = memory_id[:need]
    for memory_id in ids:  # also under the exact spelling given (with or without mem_)
        result[memory_id] = result[f"mem_{memory_id.removeprefix('mem_')}"]
    return result


def _stamp(value) -> datetime:
    return to_utc(value if isinstance(value, datetime) else datetime.fromisoformat(value))
