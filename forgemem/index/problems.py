"""Memory files that could not be read, as a store's cache recorded them, and the one line that says so.

`recall`, `context`, `list`, the hooks and `/memory` leave such a file out (it has no memory
to give), and say in one line how many there are and how to see why (`forgemem validate`).
`unreadable` reads the cache read-only, without opening or repairing anything: a command
answered by the recall server can still count them in a few milliseconds. `notice_once` is
the hooks' version: the line only when the set of such files changed since it was last shown
(recorded beside the cache, `<scope>-unreadable.said`), not on every prompt.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
from collections.abc import Iterable

from forgemem.errors import UsageError
from forgemem.store.folder import Store

HOW_TO_SEE = "run `forgemem validate` to see why"


def unreadable(store: Store) -> list[tuple[str, str]] | None:
    """(path relative to the store, first reason) of each file the cache holds no memory for because
    the file could not be read or parsed; None when there is no cache to ask (nothing is created)."""
    path = store.cache_dir / f"{store.scope}.sqlite"
    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=2)
    except sqlite3.Error:
        return None
    try:
        rows = db.execute(
            "SELECT f.path, f.problems FROM files f WHERE f.problems IS NOT NULL "
            "AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.path = f.path) ORDER BY f.path"
        ).fetchall()
    except sqlite3.Error:
        return None
    finally:
        db.close()
    found = []
    for rel, problems in rows:
        try:
            reason = json.loads(problems)[0]["reason"]
        except (ValueError, LookupError, TypeError):
            reason = "?"
        found.append((rel, reason))
    return found


def held_back(db: sqlite3.Connection) -> list[tuple[str, str]]:
    """(old id, path relative to the store) for each id a file that gives no memory still names in `supersedes`
    (`MemoryGraph.held_back`): read from the cache's problems, the same rows `unreadable` counts."""
    rows = db.execute(
        "SELECT f.path, f.problems FROM files f WHERE f.problems IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.path = f.path) ORDER BY f.path"
    ).fetchall()
    found = []
    for rel, problems in rows:
        try:
            named = {old for problem in json.loads(problems) for old in problem.get("supersedes") or ()}
        except (ValueError, TypeError, AttributeError):
            continue
        found += [(old, rel) for old in sorted(named) if isinstance(old, str)]
    return found


def summary(unreadable: int, others: int = 0) -> str | None:
    """The one line: how many memory files could not be read (and other problems), and what to run."""
    if unreadable and others:
        return (f"{_files(unreadable)} could not be read, and {others} other problem(s) were found; "
                f"run `forgemem validate` to see them")
    if unreadable:
        return f"{_files(unreadable)} could not be read (left out of recall); {HOW_TO_SEE}"
    if others:
        return f"{others} problem(s) in the memory files; run `forgemem validate` to see them"
    return None


def snapshot_line(snap) -> str | None:
    """The line for a loaded `Snapshot`: files that gave no memory, and every other problem."""
    broken = set(snap.unreadable)
    return summary(len(broken), sum(1 for p in snap.problems if p.path not in broken))


def broken_file_error(snap, ref: str) -> UsageError | None:
    """When `ref` (an id or its prefix, no memory has it) is the id of a file of `snap` that could not be
    read, by its `id:` line (kept in its problems) or the short id its name ends with: the error that names
    the file and its first problem (`Snapshot.resolve`)."""
    if not ref.removeprefix("mem_"):
        return None
    prefix = ref if ref.startswith("mem_") else f"mem_{ref}"
    for path in snap.unreadable:
        reasons = [p for p in snap.problems if p.path == path]
        full = next((p.memory_id for p in reasons if p.memory_id and p.memory_id.startswith("mem_")), None)
        named = re.search(r"-([0-9a-f]{8})\.md$", path.name)
        if full is not None:
            hit = full.startswith(prefix)
        else:  # the name holds the first 8 hex digits: the prefix agrees with them as far as both go
            short = f"mem_{named.group(1)}" if named else None
            hit = short is not None and (short.startswith(prefix) or prefix.startswith(short))
        if hit:
            why = reasons[0].reason if reasons else "it cannot be read"
            line = f"line {reasons[0].line}: " if reasons and reasons[0].line else ""
            more = f", and {len(reasons) - 1} more problem(s)" if len(reasons) > 1 else ""
            return UsageError(f"{ref!r} is the memory in {path}, which could not be read ({line}{why}{more}); "
                              "fix the file, then `forgemem validate` checks it")
    return None


def _files(n: int) -> str:
    return "1 memory file" if n == 1 else f"{n} memory files"


def count(stores: Iterable[Store]) -> int:
    """How many memory files of these stores could not be read, by their caches (0 where there is none)."""
    return sum(len(found or []) for found in (unreadable(s) for s in stores if s.exists()))


def notice_once(stores: Iterable[Store]) -> str | None:
    """The line for the hooks: only when the unreadable files of these stores changed since it was last
    shown (any store's set, by path and reason); None otherwise, and when none is unreadable."""
    total, news = 0, False
    for store in stores:
        if not store.exists():
            continue
        found = unreadable(store)
        if found is None:
            continue
        total += len(found)
        mark = store.cache_dir / f"{store.scope}-unreadable.said"
        seen = hashlib.sha256(json.dumps(found).encode()).hexdigest() if found else ""
        try:
            before = mark.read_text(encoding="utf-8").strip()
        except OSError:
            before = ""
        if seen == before:
            continue
        news = news or bool(found)
        try:
            if seen:
                from forgemem.permissions import atomic_write_text

                atomic_write_text(mark, seen + "\n", private=True)
            else:
                os.unlink(mark)
        except OSError:
            pass  # said again next time: better than never
    return summary(total) if news and total else None
