"""One memory file in and out.

`parse_file` turns the bytes of a file into a `Memory` or a list of every
problem found in it; `dumps` turns a `Memory` into its canonical text; and
`write_new` / `rewrite` put that text on disk atomically. The canonical text
is deterministic (fixed key order, UTC `Z` timestamps, LF, one trailing
newline), so loading and saving an untouched file gives the same bytes.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml
from frontmatter.default_handlers import YAMLHandler

from forgemem.errors import ForgememError, Problem, UsageError, unknown_choice
from forgemem.permissions import atomic_write_text
from forgemem.store.model import (
    CATEGORIES,
    MAX_FILE_BYTES,
    OPTIONAL_KEYS,
    RELATIONSHIPS,
    REQUIRED_KEYS,
    SCOPES,
    SUFFIX,
    TRIGGERS,
    Memory,
    Relation,
    format_timestamp,
    is_valid_id,
    normalize_body,
    to_utc,
)
from forgemem.store.rawtext import MERGE_FIX, conflict_marker, recover_id, recover_supersedes
from forgemem.yamlsafe import MAX_FRONT_MATTER_CHARS, unsafe_yaml

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_HANDLER = YAMLHandler()


class MemoryFileError(ForgememError):
    """A memory file that cannot be used; `problems` says every reason."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


# --------------------------------------------------------------------- reading

def _with_id(exc: MemoryFileError, data: bytes | str) -> MemoryFileError:
    """The same problems, each naming the memory id and the `supersedes` ids still readable in the raw text."""
    found, older = recover_id(data), recover_supersedes(data)
    if found is None and not older:
        return exc
    return MemoryFileError([replace(p, memory_id=p.memory_id or found, supersedes=p.supersedes or older)
                            for p in exc.problems])


def read_file(path: Path) -> Memory:
    """Parse one memory file; raises `MemoryFileError` listing every problem."""
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):  # a FIFO would block the read for ever
            raise MemoryFileError([Problem(path, not_a_file(st.st_mode))])
        size = st.st_size
        if size > MAX_FILE_BYTES:
            with path.open("rb") as handle:
                head = handle.read(MAX_FRONT_MATTER_CHARS + 1024)
            raise _with_id(MemoryFileError([Problem(path, too_large(size))]), head)
        data = path.read_bytes()
    except OSError as exc:
        raise MemoryFileError([Problem(path, cannot_read(exc, path))]) from None
    return parse_bytes(data, path)


_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a device", stat.S_IFBLK: "a device"}


def not_a_file(mode: int) -> str:
    """Why an entry named `*.md` that is no regular file is not read."""
    if stat.S_ISDIR(mode):
        return "a folder, not a memory file"
    return f"not a regular file ({_KINDS.get(stat.S_IFMT(mode), 'a special file')}), so it is never read"


def cannot_read(exc: OSError, path: Path) -> str:
    """Why a file cannot be read, in words (a link says where it leads)."""
    reason = exc.strerror or type(exc).__name__
    if path.is_symlink():
        try:
            return f"cannot read: {reason} (a link to {os.readlink(path)})"
        except OSError:
            pass
    return f"cannot read: {reason}"


def too_large(size: int) -> str:
    return f"file is larger than 1 MiB ({size} bytes)"


def parse_bytes(data: bytes, path: Path | None = None) -> Memory:
    try:
        return _parse_bytes(data, path)
    except MemoryFileError as exc:
        raise _with_id(exc, data) from None


def _parse_bytes(data: bytes, path: Path | None) -> Memory:
    if len(data) > MAX_FILE_BYTES:
        raise MemoryFileError([Problem(path, too_large(len(data)))])
    if b"\x00" in data:
        raise MemoryFileError([Problem(path, "binary file (it contains NUL bytes)")])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise MemoryFileError(
            [
                Problem(
                    path,
                    f"not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                    line,
                )
            ]
        ) from None
    return parse_text(text, path)


def parse_text(text: str, path: Path | None = None) -> Memory:
    text = text.lstrip("\ufeff")
    marker = conflict_marker(text)
    if marker is not None:  # before anything else: the front matter may not even start with '---' now
        line, shown = marker
        raise MemoryFileError(
            [Problem(path, f"unfinished git merge (conflict marker {shown[:40]!r}): {MERGE_FIX}", line)]
        )
    if not _HANDLER.detect(text):
        raise MemoryFileError(
            [Problem(path, "no YAML front matter (the file must start with a '---' line)", 1)]
        )
    try:
        front, body = _HANDLER.split(text)
    except ValueError:
        raise MemoryFileError(
            [Problem(path, "the front matter is not closed by a '---' line", 1)]
        ) from None
    if len(front) > MAX_FRONT_MATTER_CHARS:
        raise MemoryFileError(
            [Problem(path, f"the front matter is longer than {MAX_FRONT_MATTER_CHARS // 1024} KiB", 1)]
        )
    unsafe = unsafe_yaml(front)
    if unsafe is not None:
        reason, line = unsafe
        raise MemoryFileError([Problem(path, reason, line)])
    try:
        meta = yaml.load(front, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None  # `front` starts on the '---' line
        reason = getattr(exc, "problem", None) or str(exc).split("\n")[0]
        context, context_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
        if context and context_mark is not None:
            reason += f" ({context} that starts at line {context_mark.line + 1})"
        raise MemoryFileError([Problem(path, f"invalid YAML: {reason}", line)]) from None
    if not isinstance(meta, dict):
        raise MemoryFileError(
            [Problem(path, "the front matter is not a mapping of keys to values", 2)]
        )
    memory, problems = record_from_meta(meta, body, path)
    if problems:
        # Only now is it worth finding the line of each key, to point at it.
        _, problems = record_from_meta(meta, body, path, _key_lines(front))
        raise MemoryFileError(problems)
    assert memory is not None
    return memory


def _key_lines(front: str) -> dict[str, int]:
    """File line of each top-level key, so problems can point at it."""
    lines: dict[str, int] = {}
    for number, line in enumerate(front.split("\n")):
        match = re.match(r"^([A-Za-z_][\w-]*)\s*:", line)
        if match:
            lines.setdefault(match.group(1), number + 1)
    # `front` starts right after the opening '---' line, usually with "\n".
    offset = 1 if front.startswith("\n") else 2
    return {key: n + offset - 1 for key, n in lines.items()}


def record_from_meta(
    meta: dict[str, Any], body: str, path: Path | None, lines: dict[str, int] | None = None
) -> tuple[Memory | None, list[Problem]]:
    """Check the front matter of one file and build the record from it."""
    lines = lines or {}
    problems: list[Problem] = []
    memory_id = meta.get("id") if isinstance(meta.get("id"), str) else None

    def problem(key: str | None, reason: str) -> None:
        problems.append(Problem(path, reason, lines.get(key) if key else None, memory_id))

    for key in REQUIRED_KEYS:
        if key not in meta:
            problem(None, f"missing required key '{key}'")

    if "id" in meta and not is_valid_id(meta["id"]):
        problem("id", f"id {meta['id']!r} is not 'mem_' followed by a UUID")

    stamps: dict[str, datetime] = {}
    for key in ("created_at", "updated_at"):
        if key in meta:
            stamp = _timestamp(meta[key])
            if stamp is None:
                problem(key, f"'{key}' is not an ISO-8601 timestamp: {meta[key]!r}")
            else:
                stamps[key] = stamp

    version = meta.get("version")
    if "version" in meta and (
        not isinstance(version, int) or isinstance(version, bool) or version < 1
    ):
        problem("version", f"'version' must be a whole number from 1 up, not {version!r}")

    for key, allowed in (("scope", SCOPES), ("category", CATEGORIES), ("trigger", TRIGGERS)):
        if key in meta and meta[key] not in allowed:
            problem(key, unknown_choice(key, meta[key], allowed))

    supersedes: tuple[str, ...] = ()
    raw = meta.get("supersedes")
    if isinstance(raw, str):
        supersedes = (raw,)
    elif isinstance(raw, list) and raw and all(isinstance(x, str) for x in raw):
        supersedes = tuple(raw)
    elif raw is not None:
        problem("supersedes", "'supersedes' must be null, an id, or a list of ids")
    for target in supersedes:
        if not is_valid_id(target):
            problem("supersedes", f"'supersedes' names {target!r}, which is not a memory id")

    related: list[Relation] = []
    raw = meta.get("related")
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        problem("related", "'related' must be a list of {id, relationship} entries")
        raw = []
    for entry in raw:
        if not isinstance(entry, dict) or set(entry) != {"id", "relationship"}:
            problem("related", f"each 'related' entry needs exactly 'id' and 'relationship', got {entry!r}")
            continue
        if entry["relationship"] not in RELATIONSHIPS:
            problem("related", unknown_choice("relationship", entry["relationship"], RELATIONSHIPS))
            continue
        if not is_valid_id(entry["id"]):
            problem("related", f"'related' names {entry['id']!r}, which is not a memory id")
            continue
        related.append(Relation(entry["id"], entry["relationship"]))

    session_id = meta.get("session_id")
    if session_id is not None and not isinstance(session_id, str):
        problem("session_id", "'session_id' must be a string or null")

    _check_optional(meta, problem)

    text = normalize_body(body)
    if not text:
        problem(None, "the memory has no text after the front matter")

    if problems:
        return None, problems

    memory = Memory.from_front_matter(
        {**meta, "created_at": stamps["created_at"], "updated_at": stamps["updated_at"],
         "supersedes": list(supersedes) or None, "related": related, "session_id": session_id},
        text, path,
    )
    return memory, []


def _check_optional(meta: dict[str, Any], problem) -> None:
    tags = meta.get("tags")
    if "tags" in meta and not (
        isinstance(tags, list) and all(isinstance(t, str) and t for t in tags)
    ):
        problem("tags", "'tags' must be a list of non-empty strings")
    confidence = meta.get("confidence")
    if "confidence" in meta and not (
        isinstance(confidence, (int, float))
        and not isinstance(confidence, bool)
        and 0 <= confidence <= 1
    ):
        problem("confidence", f"'confidence' must be a number from 0 to 1, not {confidence!r}")
    if "status" in meta and not isinstance(meta["status"], str):
        problem("status", "'status' must be a string")
    if "source" in meta and not isinstance(meta["source"], (str, dict)):
        problem("source", "'source' must be a string or a mapping")


def _timestamp(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return to_utc(value)
    if isinstance(value, date):
        return None  # a date alone has no time of day
    if isinstance(value, str):
        try:
            return to_utc(datetime.fromisoformat(value))
        except ValueError:
            return None
    return None


# --------------------------------------------------------------------- writing


class _Dumper(yaml.SafeDumper):
    pass


def _represent_datetime(dumper: yaml.SafeDumper, value: datetime) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:timestamp", format_timestamp(value))


_UNICODE_BREAKS = ("\x85", "\u2028", "\u2029")


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    # PyYAML writes NEL and the Unicode line/paragraph separators raw, and its
    # reader then folds them into spaces; double quotes escape them (\N, \L, \P).
    style = '"' if any(ch in value for ch in _UNICODE_BREAKS) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(datetime, _represent_datetime)
_Dumper.add_representer(str, _represent_str)


def front_matter(memory: Memory) -> dict[str, Any]:
    """The front matter of a memory, keys in their fixed order."""
    if not memory.supersedes:
        supersedes: Any = None
    elif len(memory.supersedes) == 1:
        supersedes = memory.supersedes[0]
    else:
        supersedes = list(memory.supersedes)
    meta: dict[str, Any] = {
        "id": memory.id,
        "created_at": to_utc(memory.created_at),
        "updated_at": to_utc(memory.updated_at),
        "version": memory.version,
        "scope": memory.scope,
        "category": memory.category,
        "supersedes": supersedes,
        "related": [{"id": r.id, "relationship": r.relationship} for r in memory.related],
        "session_id": memory.session_id,
        "trigger": memory.trigger,
    }
    for key in OPTIONAL_KEYS:
        if key in memory.extra:
            meta[key] = memory.extra[key]
    for key, value in memory.extra.items():
        if key not in meta:
            meta[key] = value
    return meta


def dumps(memory: Memory) -> str:
    """The canonical text of a memory file; refuses what `parse_text` would not read back (a file over
    1 MiB, front matter over its limit, a line git would take for a conflict marker)."""
    body = normalize_body(memory.body)
    if not body:
        raise ForgememError("a memory needs some text; the body is empty")
    if "\x00" in body:
        raise ForgememError("a memory's text cannot contain NUL characters")
    check_text_size(body)
    front = dump_front_matter(front_matter(memory))
    if len(front) > MAX_FRONT_MATTER_CHARS:
        raise UsageError(f"the front matter would be longer than {MAX_FRONT_MATTER_CHARS // 1024} KiB "
                         f"({len(front)} characters); shorten its tags or source")
    text = f"---\n{front}---\n{body}\n"
    size = len(text.encode("utf-8"))
    if size > MAX_FILE_BYTES:
        raise UsageError(f"the memory file would be {size} bytes; {LIMIT_ADVICE}")
    marker = conflict_marker(text)
    if marker is not None:
        raise UsageError(f"the line {marker[1][:40]!r} would be read as a git conflict marker (an unfinished merge); "
                         "indent it or change it")
    return text


LIMIT_ADVICE = ("a memory file holds at most 1 MiB: split the text into several memories, or keep the document "
                "in the repository and remember where it is")


def check_text_size(text: str) -> None:
    """A usage error when a memory's text alone is over the file limit (checked before anything else is done;
    `dumps` checks the whole file)."""
    size = len(text.encode("utf-8", "replace"))
    if size > MAX_FILE_BYTES:
        raise UsageError(f"the text is {size} bytes; {LIMIT_ADVICE}")


def dump_front_matter(meta: dict[str, Any]) -> str:
    """Front-matter keys as the canonical text writes them (between the `---` lines). Each
    top-level key's lines stand alone: dumping keys one by one and joining gives the same text."""
    return yaml.dump(meta, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False,
                     width=1_000_000)


def write_new(memory: Memory, path: Path) -> Path:
    """Write a memory to a new file; an existing file is never replaced."""
    if path.exists():
        raise ForgememError(f"{path} already exists; refusing to overwrite it")
    atomic_write_text(path, dumps(memory))
    memory.path = path
    return path


def rewrite(memory: Memory) -> Path:
    """Replace a memory's own file, but only if that file still parses.

    A file the tool cannot parse is someone's unfinished edit: it is never
    overwritten.
    """
    if memory.path is None:
        raise ForgememError(f"memory {memory.id} has no file to rewrite")
    current = read_file(memory.path)  # raises MemoryFileError if broken
    if current.id != memory.id:
        raise ForgememError(
            f"{memory.path} now holds {current.id}, not {memory.id}; refusing to overwrite it"
        )
    atomic_write_text(memory.path, dumps(memory))
    return memory.path


# ------------------------------------------------------------------ file names


def slugify(text: str, max_words: int = 7, max_length: int = 60) -> str:
    """A readable, ASCII, lower-case slug of the first words of a text."""
    ascii_text = (
        unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    )
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    slug = ""
    for word in words[:max_words]:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > max_length:
            break
        slug = candidate
    return slug or "memory"


def file_name(memory: Memory) -> str:
    """`<slug of the text>-<first 8 hex digits of the id>.md`; never renamed later."""
    return f"{slugify(memory.body)}-{memory.short_id()}{SUFFIX}"
