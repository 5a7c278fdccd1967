"""The edges of one store's cache, by row: so a fresh process can answer a recall without parsing every record.

`memories` rows carry each record's whole text, so anything that reads every row (the full snapshot:
JSON, `Memory` objects, the graph) costs seconds at 100K memories. A recall needs the graph only around
its few hundred candidates, so the cache also keeps, written in the same transactions as the records:

    links(source, target, type)  one row per edge in the file's order: `source` is the memories.rowid of
                                 the memory that names `target` (a memory id) in `supersedes` or `related`
    memories_id                  index: a memory by its id
    memories_created             index: the newest `created_at`, read without opening a record
    memories_session             index: the memories of one capture session (recall's session neighbours)

`meta.links` is the generation the links were written for. A cache written by a forgemem that did not
keep them (an older version sharing the folder) has moved past it, and the links are made again from
the records (`fill`); until then a reader uses the full snapshot. A cache from before the session index
gets it on the next refresh (`indexed`); an older forgemem sharing the folder leaves it alone.
"""

from __future__ import annotations

import json
import sqlite3

from forgemem.index.database import get_meta, select_in, set_meta
from forgemem.store.model import Memory

SUPERSEDES = "supersedes"
NEWEST = "json_extract(record, '$.meta.created_at')"  # the same text in the index and the query uses it
SESSION = "json_extract(record, '$.meta.session_id')"


def create(db: sqlite3.Connection) -> None:
    """The table and indexes (if missing); the caller holds the write lock or owns a new database."""
    db.executescript(
        f"""
        CREATE TABLE IF NOT EXISTS links(source INTEGER NOT NULL, target TEXT NOT NULL, type TEXT NOT NULL);
        CREATE INDEX IF NOT EXISTS links_source ON links(source);
        CREATE INDEX IF NOT EXISTS links_target ON links(target, type);
        CREATE INDEX IF NOT EXISTS memories_id ON memories(id);
        CREATE INDEX IF NOT EXISTS memories_created ON memories({NEWEST});
        CREATE INDEX IF NOT EXISTS memories_session ON memories({SESSION}) WHERE {SESSION} IS NOT NULL;
        """
    )


def current(db: sqlite3.Connection) -> bool:
    """Whether the links hold every edge of the records as of the current generation."""
    return get_meta(db, "links") == (get_meta(db, "generation") or "0")


def indexed(db: sqlite3.Connection) -> bool:
    """Whether the cache has every index `create` makes (the newest: memories by capture session)."""
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'memories_session'").fetchone() \
        is not None


def mark(db: sqlite3.Connection, generation: int | str) -> None:
    """Record (inside the caller's transaction) that the links are complete for `generation`."""
    set_meta(db, "links", str(generation))


def edges(memory: Memory) -> list[tuple[str, str]]:
    """(target, type) of a memory's edges in the file's order: what `MemoryGraph` adds for it."""
    return [(t, SUPERSEDES) for t in memory.supersedes] + [(r.id, r.relationship) for r in memory.related]


def write(db: sqlite3.Connection, rowid: int, memory: Memory | None) -> None:
    """Replace the links of row `rowid` (None: the row is gone)."""
    db.execute("DELETE FROM links WHERE source = ?", (rowid,))
    if memory is not None:
        db.executemany("INSERT INTO links(source, target, type) VALUES (?, ?, ?)",
                       [(rowid, target, kind) for target, kind in edges(memory)])


def fill(db: sqlite3.Connection) -> None:
    """Make the links again from every record (a cache from before they were kept); takes its own transaction."""
    create(db)
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("DELETE FROM links")
        rows = []
        for rowid, record in db.execute("SELECT rowid, record FROM memories"):
            meta = json.loads(record)["meta"]
            supersedes = meta.get("supersedes") or ()
            for target in (supersedes,) if isinstance(supersedes, str) else supersedes:
                rows.append((rowid, target, SUPERSEDES))
            for relation in meta.get("related") or ():
                rows.append((rowid, relation["id"], relation["relationship"]))
        db.executemany("INSERT INTO links(source, target, type) VALUES (?, ?, ?)", rows)
        mark(db, get_meta(db, "generation") or "0")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


# ----------------------------------------------------------------- reading (one store)


def row_by_id(db: sqlite3.Connection, memory_id: str) -> tuple[str, str] | None:
    """(path, record) of the memory with this id (the first by path, should there be two)."""
    return db.execute("SELECT path, record FROM memories WHERE id = ? ORDER BY path LIMIT 1", (memory_id,)).fetchone()


def exists(db: sqlite3.Connection, memory_id: str) -> bool:
    return db.execute("SELECT 1 FROM memories WHERE id = ? LIMIT 1", (memory_id,)).fetchone() is not None


def superseders(db: sqlite3.Connection, target: str) -> list[str]:
    """Ids of the memories that supersede `target`, in path order."""
    return [i for (i,) in db.execute(
        "SELECT m.id FROM links l JOIN memories m ON m.rowid = l.source WHERE l.target = ? AND l.type = ? "
        "ORDER BY m.path, l.rowid", (target, SUPERSEDES))]


def outgoing(db: sqlite3.Connection, memory_id: str) -> list[tuple[str, str]]:
    """(target, type) of the edges the memory `memory_id` names, in the file's order."""
    return list(db.execute(
        "SELECT l.target, l.type FROM memories m JOIN links l ON l.source = m.rowid WHERE m.id = ? "
        "ORDER BY l.rowid", (memory_id,)))


def incoming(db: sqlite3.Connection, target: str) -> list[tuple[str, str]]:
    """(source id, type) of the edges that point at `target`, in path order."""
    return list(db.execute(
        "SELECT m.id, l.type FROM links l JOIN memories m ON m.rowid = l.source WHERE l.target = ? "
        "ORDER BY m.path, l.rowid", (target,)))


def contradictions(db: sqlite3.Connection) -> list[tuple[str, str]]:
    """(source id, target) of every `contradicts` edge, in path order."""
    return list(db.execute(
        "SELECT m.id, l.target FROM links l JOIN memories m ON m.rowid = l.source WHERE l.type = 'contradicts' "
        "ORDER BY m.path, l.rowid"))


def may_conflict(db: sqlite3.Connection) -> bool:
    """Whether the store has a `contradicts` edge or an id that two edges supersede (a fork, maybe)."""
    return db.execute(
        "SELECT EXISTS (SELECT 1 FROM links WHERE type = 'contradicts') OR EXISTS (SELECT 1 FROM links "
        "WHERE type = ? GROUP BY target HAVING count(*) > 1)", (SUPERSEDES,)).fetchone()[0] == 1


def newest(db: sqlite3.Connection) -> str | None:
    """The newest `created_at` of the store (as the records hold it: UTC, ISO 8601)."""
    return db.execute(f"SELECT max({NEWEST}) FROM memories").fetchone()[0]


def session(db: sqlite3.Connection, session_id: str) -> list[tuple[int, str, str]]:
    """(rowid, path, created_at) of the memories written in capture session `session_id`."""
    return list(db.execute(f"SELECT rowid, path, {NEWEST} FROM memories WHERE {SESSION} = ?", (session_id,)))


def count(db: sqlite3.Connection) -> int:
    return db.execute("SELECT count(*) FROM memories").fetchone()[0]


def has_duplicate_ids(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT 1 FROM memories GROUP BY id HAVING count(*) > 1 LIMIT 1").fetchone() is not None


def ids_in(db: sqlite3.Connection, ids: list[str]) -> list[str]:
    """Which of these ids the store holds."""
    return [i for (i,) in select_in(db, "SELECT id FROM memories WHERE id IN ({})", ids)]


def all_ids(db: sqlite3.Connection) -> list[str]:
    return [i for (i,) in db.execute("SELECT id FROM memories")]
