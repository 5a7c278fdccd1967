"""git's drivers for memory files: a readable diff (textconv) and a merge that understands them.

Both are set up by `forgemem install git` in the repository's *local* git config
(`agents/git_diff.py`), never by a file the repository ships, and both are wrapped in
a shell function there that falls back to git's own behaviour whenever forgemem
cannot run: `git diff` then shows the raw file, `git merge` does its usual text merge.

`textconv` shows a memory one fact a line. `merge` merges three versions of one
memory file: concurrent edge and tag changes are combined (a three-way merge of the
sets: what either side added is kept, what one side removed and the other left alone
goes), `updated_at` becomes the newer of the two, and any other key or the text
changed on only one side takes that change. Conflict markers are left only where both
sides changed the same key differently, or the same lines of the text.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

#: `forgemem merge-driver` exit statuses (the installed wrapper turns them into git's 0 / 1):
MERGED, CONFLICT = 0, 3  # anything else: forgemem did not merge, git's own text merge runs


# ------------------------------------------------------------------ git diff


def textconv(data: bytes, name: str = "") -> str:
    """A memory file as git should diff it: what it says and how it links, one fact a line.

    Used as `diff.forgemem.textconv`; a file that does not parse, or anything going
    wrong, gives the file as it is (control characters shown as `\\xNN` either way).
    """
    try:
        text = _textconv(data, name)
    except Exception:  # noqa: BLE001 - git diff must never fail because of forgemem
        text = data.decode("utf-8", "replace")
    from forgemem.store.model import visible_controls

    # control characters shown as \xNN: an escape sequence in a memory file reaches no terminal through git
    return visible_controls(text.replace("\r\n", "\n"))


def _one(value: Any) -> str:
    """A front-matter value on one line."""
    import json

    if isinstance(value, str) and "\n" not in value:
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _textconv(data: bytes, name: str) -> str:
    from forgemem.store import memfile
    from forgemem.store.model import OPTIONAL_KEYS, format_timestamp

    try:
        memory = memfile.parse_bytes(data, path=Path(name) if name else None)
    except memfile.MemoryFileError:
        return data.decode("utf-8", "replace")
    head = f"memory {memory.id} v{memory.version} · {memory.scope}/{memory.category}"
    if memory.status:
        head += f" · {memory.status}"
    written = f"written {format_timestamp(memory.created_at)} ({memory.trigger}"
    written += f", session {memory.session_id})" if memory.session_id else ")"
    if memory.updated_at != memory.created_at:
        written += f", updated {format_timestamp(memory.updated_at)}"
    lines = [head, written]
    lines += [f"supersedes {old}" for old in memory.supersedes]
    lines += [f"{r.relationship} {r.id}" for r in memory.related]
    if memory.tags:
        lines.append("tags: " + ", ".join(memory.tags))
    if "confidence" in memory.extra:
        lines.append(f"confidence: {_one(memory.extra['confidence'])}")
    source = memory.extra.get("source")
    if isinstance(source, dict):
        where = str(source.get("transcript", ""))
        if source.get("lines"):
            where += f":{source['lines']}"
        lines.append(f"from {where}")
        if source.get("quote"):
            lines.append(f"quote: “{source['quote']}”")
        lines += [f"source {key}: {_one(value)}" for key, value in source.items()
                  if key not in ("transcript", "lines", "quote")]
    elif source:
        lines.append(f"from {source}")
    # keys the format does not know are kept in the file, so a change to one shows here too
    lines += [f"{key}: {_one(value)}" for key, value in memory.extra.items() if key not in OPTIONAL_KEYS]
    lines.append("")
    # one sentence a line: a changed word shows as a changed sentence, not a changed paragraph
    for paragraph in memory.body.split("\n"):
        lines += [s for s in re.split(r"(?<=[.!?;])\s+", paragraph.strip())] if paragraph.strip() else [""]
    return "\n".join(lines).rstrip() + "\n"


def main_textconv(path: str) -> int:
    """`forgemem diff-driver FILE`: the readable memory on stdout, all at once; always exit 0."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        print(f"forgemem: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
        return 1  # the installed wrapper then shows the file with cat, which reports the same
    sys.stdout.buffer.write(textconv(data, path).encode("utf-8", "surrogateescape"))
    sys.stdout.flush()
    return 0


# ------------------------------------------------------------------ git merge


_MISSING = object()


def merge_file(ours: str, base: str, theirs: str, marker_size: int = 7) -> tuple[str, bool]:
    """git's own three-way line merge (`git merge-file`): (the text, whether it merged cleanly)."""
    from forgemem.git.run import git_argv

    with tempfile.TemporaryDirectory(prefix="forgemem-merge-") as folder:
        paths = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(folder) / name
            path.write_text(text, encoding="utf-8")
            paths.append(str(path))
        done = subprocess.run(
            git_argv("merge-file", "-p", f"--marker-size={marker_size}", "-L", "ours", "-L", "base", "-L", "theirs",
                     *paths),
            capture_output=True, check=False,
        )
    if done.returncode < 0 or done.returncode > 127:
        raise RuntimeError(f"git merge-file failed: {done.stderr.decode('utf-8', 'replace').strip()}")
    return done.stdout.decode("utf-8"), done.returncode == 0


def _merge_sets(base: Any, ours: Any, theirs: Any) -> Any:
    """A three-way merge of two lists taken as sets: ours in its order without what theirs removed,
    then what theirs added."""
    def items(value: Any) -> list:
        return list(value) if isinstance(value, list) else []

    def key(item: Any) -> Any:
        return tuple(sorted(item.items())) if isinstance(item, dict) else item

    base_keys = {key(i) for i in items(base)}
    theirs_keys, ours_keys = {key(i) for i in items(theirs)}, {key(i) for i in items(ours)}
    result = [i for i in items(ours) if key(i) in theirs_keys or key(i) not in base_keys]
    result += [i for i in items(theirs) if key(i) not in ours_keys and key(i) not in base_keys]
    if not result and ours is _MISSING and theirs is _MISSING:
        return _MISSING
    return result


def _merge_value(key: str, base: Any, ours: Any, theirs: Any) -> tuple[Any, bool]:
    """(merged value, clean) of one front-matter key; _MISSING means the key is absent."""
    if ours == theirs:
        return ours, True
    if key == "updated_at" and ours is not _MISSING and theirs is not _MISSING:
        return max(ours, theirs), True
    if key in ("related", "tags") and all(v is _MISSING or isinstance(v, list) for v in (base, ours, theirs)):
        return _merge_sets(base, ours, theirs), True
    if ours == base:
        return theirs, True
    if theirs == base:
        return ours, True
    return None, False


def _markers(marker_size: int, ours: str, theirs: str) -> str:
    return f"{'<' * marker_size} ours\n{ours}{'=' * marker_size}\n{theirs}{'>' * marker_size} theirs\n"


def merge(base: bytes, ours: bytes, theirs: bytes, marker_size: int = 7) -> tuple[str, bool] | None:
    """Merge three versions of a memory file: (the text, whether it merged cleanly), or None when
    they are not all memory files of one id (git's own text merge is the right thing then).

    Front matter is merged key by key, the text line by line (`git merge-file`); the result
    is the canonical text of a memory file, with standard conflict markers around each key,
    and each run of text lines, that the two sides changed differently.
    """
    from forgemem.store import memfile

    try:
        texts = [side.decode("utf-8") for side in (base, ours, theirs)]
        plain, plain_clean = merge_file(texts[1], texts[0], texts[2], marker_size)
        old = memfile.parse_text(texts[0]) if texts[0].strip() else None
        mine, other = memfile.parse_text(texts[1]), memfile.parse_text(texts[2])
    except (UnicodeDecodeError, memfile.MemoryFileError):
        return None
    if mine.id != other.id or (old is not None and old.id != mine.id):
        return None
    before = memfile.front_matter(old) if old is not None else {}
    a, b = memfile.front_matter(mine), memfile.front_matter(other)
    front, clean = [], True
    for key in [*a, *(k for k in b if k not in a)]:
        va, vb = a.get(key, _MISSING), b.get(key, _MISSING)
        value, ok = _merge_value(key, before.get(key, _MISSING), va, vb)
        if ok:
            front.append(_dump_key(key, value))
        else:
            clean = False
            front.append(_markers(marker_size, _dump_key(key, va), _dump_key(key, vb)))
    body, body_clean = _merge_value("body", old.body if old is not None else _MISSING, mine.body, other.body)
    if not body_clean:
        body, body_clean = merge_file(mine.body + "\n", (old.body + "\n") if old is not None else "",
                                      other.body + "\n", marker_size)
        body = body.rstrip("\n")
    text = f"---\n{''.join(front)}---\n{body}\n"
    if not (clean and body_clean):
        return text, False
    merged = _parsed(text)
    if merged is None:  # cannot happen with files that parse; git's merge is the safe answer if it does
        return plain, plain_clean
    if plain_clean and _same(_parsed(plain), merged):
        return plain, True  # git's own merge says the same and keeps every byte of both (layout, comments)
    return text, True


def _same(one, other) -> bool:
    from forgemem.store import memfile

    return (one is not None and memfile.front_matter(one) == memfile.front_matter(other)
            and one.body == other.body)


def _dump_key(key: str, value: Any) -> str:
    from forgemem.store import memfile

    return memfile.dump_front_matter({key: value}) if value is not _MISSING else ""


def _parsed(text: str):
    from forgemem.store import memfile

    try:
        return memfile.parse_text(text)
    except memfile.MemoryFileError:
        return None


def main_merge(base: str, ours: str, theirs: str, marker_size: str = "7") -> int:
    """`forgemem merge-driver %O %A %B %L`: the merge written over %A (git's file for ours).

    Exit MERGED or CONFLICT when forgemem wrote %A; any other status leaves %A as it was,
    and the installed wrapper runs git's own text merge instead.
    """
    from forgemem.permissions import atomic_write_text

    try:
        size = int(marker_size)
        result = merge(Path(base).read_bytes(), Path(ours).read_bytes(), Path(theirs).read_bytes(), size)
        if result is None:
            return 2
        text, clean = result
        atomic_write_text(Path(ours), text)
    except Exception as exc:  # noqa: BLE001 - git's own merge runs instead
        print(f"forgemem merge-driver: {type(exc).__name__}: {exc}; leaving it to git's text merge", file=sys.stderr)
        return 2
    return MERGED if clean else CONFLICT
