"""What the raw text of a memory file says when it does not parse: a git conflict marker, its id, what it supersedes.

A file that gives no memory is reported with its path and reason, never dropped without a word; these few
things are still read from its text so that `show` can point at the file by its id, and so that the version it
superseded does not become current again while it is broken (`MemoryGraph.held_back`).
"""

from __future__ import annotations

import re

from forgemem.yamlsafe import MAX_FRONT_MATTER_CHARS

#: A git conflict marker: seven (or more) '<', '>' or '|' at the start of a line, then a space and a
#: label, or nothing. (`=======` alone is also markdown's setext underline: it is never taken for one.)
_CONFLICT_MARKER = re.compile(r"^(?:<{7,}|>{7,}|\|{7,})(?:[ \t][^\n]*)?\r?$", re.MULTILINE)
MERGE_FIX = ("keep one side of each conflict, or combine them, and delete the marker lines; or install the merge "
             "driver, which merges memory files itself: `forgemem install git`")
_MEMORY_ID = r"mem_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![0-9a-f-])"
#: An `id:` line, found in the raw text of a file that does not parse
_ID_LINE = re.compile(rf"^id:[ \t]*[\"']?({_MEMORY_ID})", re.MULTILINE)
#: The ids named under `supersedes:` in the raw front matter: on its line (`supersedes: mem_…`, `[mem_…, mem_…]`)
#: or as the list items right below it; both sides of a git conflict are read
_SUPERSEDES_BLOCK = re.compile(r"^supersedes:[^\n]*(?:\n[ \t]*-[^\n]*)*", re.MULTILINE)


def conflict_marker(text: str) -> tuple[int, str] | None:
    """(line, the line) of the first git conflict marker in a text, or None."""
    match = _CONFLICT_MARKER.search(text)
    if match is None:
        return None
    return text.count("\n", 0, match.start()) + 1, match.group(0).rstrip("\r")


def _head(data: bytes | str) -> str:
    """The start of the file, where the front matter is, as text (undecodable bytes replaced)."""
    head = data[: MAX_FRONT_MATTER_CHARS + 1024]
    text = head.decode("utf-8", "replace") if isinstance(head, bytes) else head
    return text.lstrip("\ufeff").replace("\r\n", "\n")


def recover_id(data: bytes | str) -> str | None:
    """The id a file that does not parse still names on an `id:` line (`show` can then point at the file)."""
    match = _ID_LINE.search(_head(data))
    return match.group(1) if match else None


def recover_supersedes(data: bytes | str) -> tuple[str, ...]:
    """The ids a file that does not parse still names under `supersedes:` (every block, each id once)."""
    text = _head(data)
    if text.startswith("---\n"):  # the front matter only: a body may quote such a line
        end = re.search(r"^---[ \t]*$", text[4:], re.MULTILINE)
        text = text[: 4 + end.start()] if end else text
    own = recover_id(text)
    found = (i for block in _SUPERSEDES_BLOCK.finditer(text) for i in re.findall(_MEMORY_ID, block.group(0))
             if i != own)
    return tuple(dict.fromkeys(found))
