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
import sqlite3
from collections.abc import Iterable

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
