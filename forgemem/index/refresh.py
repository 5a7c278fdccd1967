"""The incremental rebuild of one store's cache: what changed (by stat, then by hash), its rows, tombstones, vectors."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from forgemem.errors import Problem
from forgemem.index import links
from forgemem.index.database import (
    embed_text,
    fts_current,
    get_meta,
    lexical_text,
    refill_fts,
    select_in,
    set_meta,
    to_record,
)
from forgemem.index.vectors import ProgressFn, embed_missing, missing_reason
from forgemem.store.folder import UNREADABLE, Store
from forgemem.store.model import Memory


@dataclass
class RefreshReport:
    files: int = 0
    added: int = 0
    changed: int = 0
    touched: int = 0  # mtime changed, bytes did not
    deleted: int = 0
    embedded: int = 0
    reused: int = 0  # vectors found by content (seen before on another branch or commit)
    rebuilt_reason: str | None = None
    embedder: str | None = None

    @property
    def unchanged(self) -> bool:
        return not (self.added or self.changed or self.deleted or self.embedded or self.reused or self.touched)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def cached_stats(db: sqlite3.Connection, paths: list[str] | None = None) -> dict[str, tuple[int, int]]:
    """Relative path -> (mtime_ns, size) as last seen, for every file in the cache (or those named)."""
    if paths is None:
        rows = db.execute("SELECT path, mtime_ns, size FROM files").fetchall()
    else:
        rows = select_in(db, "SELECT path, mtime_ns, size FROM files WHERE path IN ({})", paths)
    return {path: (mtime, size) for path, mtime, size in rows}


def diff(db: sqlite3.Connection, store: Store, only: list[str] | None = None):
    """(scan, known, changed, deleted): the files as they are, as cached, and what differs.

    `only` limits both sides to those paths (relative to the store).
    """
    if only is None:
        cached, scan = cached_stats(db), store.stat_files()
        deleted = [p for p in cached if p not in scan]
    else:
        cached, scan = cached_stats(db, only), store.stat_paths(only)
        deleted = [p for p in only if p in cached and p not in scan]
    changed = [p for p, stat in scan.items() if cached.get(p) != stat]
    changed += [p for p in readable_again(db, store) if p in scan and p not in changed]
    return scan, cached, changed, deleted


def readable_again(db: sqlite3.Connection, store: Store) -> list[str]:
    """Files cached as unreadable that this process may read now: a `chmod` changes no mtime, so these
    few are tried again on every refresh (an unchanged result writes nothing)."""
    rows = db.execute(
        "SELECT path FROM files WHERE problems IS NOT NULL AND sha256 LIKE ?", (f"{UNREADABLE}%",)
    ).fetchall()
    return [p for (p,) in rows if os.path.isfile(store.memory_dir / p) and os.access(store.memory_dir / p, os.R_OK)]


#: meta key: the problems of the files that give no memory hold the ids they still name in `supersedes`
BROKEN_SUPERSEDES = "broken_supersedes"


def _read_broken_again(db: sqlite3.Connection) -> None:
    """Once per cache: mark the files cached as giving no memory changed, so the next refresh reads them again and
    keeps what their `supersedes` names (a cache written before it was kept); takes its own transaction."""
    db.execute("BEGIN IMMEDIATE")
    try:
        if get_meta(db, BROKEN_SUPERSEDES) is None:
            db.execute("UPDATE files SET mtime_ns = -1, sha256 = '' WHERE problems IS NOT NULL "
                       "AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.path = files.path)")
            set_meta(db, BROKEN_SUPERSEDES, "1")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def update(
    db: sqlite3.Connection,
    store: Store,
    lock: Callable[[], AbstractContextManager],
    embedder,
    progress: ProgressFn | None,
    only: Iterable[str] | None,
) -> RefreshReport:
    """Bring the database up to date with the files, under `lock()` when anything changed."""
    if get_meta(db, BROKEN_SUPERSEDES) is None:
        with lock():
            _read_broken_again(db)
    scan, cached, changed, deleted = diff(db, store, None if only is None else list(only))
    vector_reason = missing_reason(db, embedder)
    report = RefreshReport(files=len(scan), embedder=embedder.id if embedder else None)
    if not changed and not deleted and not vector_reason and links.current(db) and links.indexed(db) \
            and fts_current(db):
        return report
    with lock():
        if not links.current(db):  # a cache from before the links were kept, or written by such a forgemem
            links.fill(db)
        elif not links.indexed(db):  # a cache from before the session index
            links.create(db)
        if not fts_current(db):  # lexical rows written another way (before camelCase names were split)
            refill_fts(db)
        # Another process may have applied some of this while we waited for the lock.
        cached = cached_stats(db, None if only is None else sorted(set(changed) | set(deleted)))
        retry = set(readable_again(db, store))
        changed = [p for p in changed if cached.get(p) != scan[p] or p in retry]
        deleted = [p for p in deleted if p in cached]
        gen = int(get_meta(db, "generation") or 0) + 1  # stamped on every row this refresh writes
        if changed or deleted:
            _apply_files(db, store, gen, changed, deleted, cached, report)
        vector_reason = missing_reason(db, embedder)
        if vector_reason:
            if vector_reason.startswith("embedder"):
                report.rebuilt_reason = vector_reason
            reused, embedded = embed_missing(db, embedder, gen, progress)
            report.reused += reused
            report.embedded += embedded
        if not report.unchanged:
            db.execute("BEGIN IMMEDIATE")
            set_meta(db, "generation", str(gen))
            links.mark(db, gen)  # every row this refresh wrote wrote its links too
            db.execute("COMMIT")
    return report


def _apply_files(
    db: sqlite3.Connection,
    store: Store,
    gen: int,
    changed: list[str],
    deleted: list[str],
    cached: dict[str, tuple[int, int]],
    report: RefreshReport,
) -> None:
    hashes = dict(select_in(db, "SELECT path, sha256 FROM files WHERE path IN ({})", changed))
    updates: list[tuple[str, int, int, str, Memory | None, list[Problem] | None, bool]] = []
    for rel, read in zip(changed, store.read_many(changed), strict=True):
        if read is None:  # vanished since the scan
            deleted.append(rel)
            continue
        old = cached.get(rel)
        if old is not None and hashes.get(rel) == read.sha256:
            if old == (read.mtime_ns, read.size):  # tried again (`readable_again`): still the same
                continue
            updates.append((rel, read.mtime_ns, read.size, read.sha256, None, None, True))
            report.touched += 1
            continue
        updates.append((rel, read.mtime_ns, read.size, read.sha256, read.memory, read.problems, False))
        if old is None:
            report.added += 1
        else:
            report.changed += 1
    db.execute("BEGIN IMMEDIATE")
    try:
        for rel in deleted:
            if rel in cached:
                _delete_memory(db, rel, gen)
                db.execute("DELETE FROM files WHERE path = ?", (rel,))
                report.deleted += 1
        for rel, mtime, size, sha, memory, problems, touched in updates:
            if touched:
                db.execute("UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?", (mtime, size, rel))
                continue
            db.execute(
                "INSERT OR REPLACE INTO files(path, mtime_ns, size, sha256, problems) VALUES (?, ?, ?, ?, ?)",
                (rel, mtime, size, sha, json.dumps([_problem_json(p) for p in problems]) if problems else None),
            )
            if memory is None:
                _delete_memory(db, rel, gen)
                continue
            _upsert_memory(db, rel, memory, gen)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _delete_memory(db: sqlite3.Connection, rel: str, gen: int) -> None:
    row = db.execute("SELECT rowid FROM memories WHERE path = ?", (rel,)).fetchone()
    if row:
        db.execute("DELETE FROM fts WHERE rowid = ?", (row[0],))
        db.execute("DELETE FROM vectors WHERE rowid = ?", (row[0],))
        db.execute("DELETE FROM memories WHERE rowid = ?", (row[0],))
        links.write(db, row[0], None)
        db.execute("INSERT OR REPLACE INTO tombstones(rowid, gen) VALUES (?, ?)", (row[0], gen))


def _upsert_memory(db: sqlite3.Connection, rel: str, memory: Memory, gen: int) -> None:
    text = embed_text(memory)
    text_hash = hashlib.sha256(text.encode("utf-8")).hexdigest()
    row = db.execute("SELECT rowid, text_hash FROM memories WHERE path = ?", (rel,)).fetchone()
    record = to_record(memory)
    if row is None:
        cursor = db.execute(
            "INSERT INTO memories(path, id, record, text_hash, gen) VALUES (?, ?, ?, ?, ?)",
            (rel, memory.id, record, text_hash, gen),
        )
        new = cursor.lastrowid
        assert new is not None
        db.execute("INSERT INTO fts(rowid, text) VALUES (?, ?)", (new, lexical_text(memory)))
        links.write(db, new, memory)
        return
    rowid, old_hash = row
    links.write(db, rowid, memory)
    if old_hash == text_hash:  # front matter changed only: keep the vector
        db.execute("UPDATE memories SET id = ?, record = ?, gen = ? WHERE rowid = ?", (memory.id, record, gen, rowid))
        return
    db.execute(
        "UPDATE memories SET id = ?, record = ?, text_hash = ?, gen = ? WHERE rowid = ?",
        (memory.id, record, text_hash, gen, rowid),
    )
    db.execute("DELETE FROM vectors WHERE rowid = ?", (rowid,))
    db.execute("DELETE FROM fts WHERE rowid = ?", (rowid,))
    db.execute("INSERT INTO fts(rowid, text) VALUES (?, ?)", (rowid, lexical_text(memory)))


def _problem_json(problem: Problem) -> dict:
    found = {"line": problem.line, "id": problem.memory_id, "reason": problem.reason}
    return {**found, "supersedes": list(problem.supersedes)} if problem.supersedes else found
