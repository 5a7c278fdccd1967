"""The SQLite database of one store's cache: opening it privately, its schema and version, the meta table, a row's record."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from datetime import datetime
from pathlib import Path

from forgemem.store.memfile import front_matter
from forgemem.store.model import Memory, format_timestamp

SCHEMA_VERSION = "3"
#: how `lexical_text` reads a memory; a cache whose `meta.fts` differs has its FTS rows made again
FTS_FORMAT = "3"
_CAMEL = re.compile(r"\b[A-Za-z0-9]*(?:[a-z0-9][A-Z]|[A-Z][A-Z][a-z])[A-Za-z0-9]*")
_CAMEL_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def embed_text(memory: Memory) -> str:
    """The text indexed for a memory (lexical and vector): its body, then its tags (if any)."""
    if memory.tags:
        return f"{memory.body}\nTags: {', '.join(memory.tags)}"
    return memory.body


def lexical_text(memory: Memory) -> str:
    """The text of a memory's lexical (FTS5) row: `embed_text`, then the words inside its camelCase names
    (`GitTemporaryDirectory` -> Git Temporary Directory), so "temporary directory" finds it; the name
    itself stays, whole. snake_case and kebab-case need nothing: FTS5 splits them already. Then the words a
    question uses for what the tools it names are for (`names.asked_as`: "use uv, not poetry" gets "package
    manager … dependencies install"), so "which package manager?" finds it."""
    from forgemem.names import asked_as

    text = embed_text(memory)
    parts = [" ".join(_CAMEL_PART.findall(name)) for name in dict.fromkeys(_CAMEL.findall(text))]
    row = f"{text}\n{' '.join(parts)}" if parts else text
    return f"{row}{_ASKED}{words}" if (words := asked_as(memory.body)) else row


#: what sets the words for what a memory's tools are for apart at the end of its lexical row (a control character:
#: FTS5's tokenizer reads it as a space)
_ASKED = "\n\x1e"


def vector_text(row: str) -> str:
    """What a memory's vector is made of: its lexical row without the words for what its tools are for (they help
    a question find it by its words, and would move it in meaning towards every other memory of that kind)."""
    return row.split(_ASKED, 1)[0]


def refill_fts(db: sqlite3.Connection) -> None:
    """Make every FTS row again from the records (a cache written with another FTS_FORMAT); takes its own
    transaction. Vectors are not touched."""
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("DELETE FROM fts")
        rows = [(rowid, lexical_text(from_record(record, Path(path))))
                for rowid, path, record in db.execute("SELECT rowid, path, record FROM memories")]
        db.executemany("INSERT INTO fts(rowid, text) VALUES (?, ?)", rows)
        set_meta(db, "fts", FTS_FORMAT)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def fts_current(db: sqlite3.Connection) -> bool:
    return get_meta(db, "fts") == FTS_FORMAT


# ----------------------------------------------------------------- records


def to_record(memory: Memory) -> str:
    meta = front_matter(memory)
    for key in ("created_at", "updated_at"):
        meta[key] = format_timestamp(meta[key])
    return json.dumps({"meta": meta, "body": memory.body}, ensure_ascii=False, default=_json_default)


def _json_default(value):
    if isinstance(value, datetime):
        return format_timestamp(value)
    raise TypeError(f"cannot cache a value of type {type(value).__name__}")


def from_record(record: str, path: Path) -> Memory:
    data = json.loads(record)
    return Memory.from_front_matter(data["meta"], data["body"], path)


# ----------------------------------------------------------------- the database


#: seconds a statement waits for another process's write to the cache before SQLite says "database is locked"
BUSY_TIMEOUT = 30.0


def busy(exc: sqlite3.Error) -> bool:
    """SQLite's answer while another connection holds the database ("database is locked"): not a damaged file."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in str(exc) or "busy" in str(exc)


def connect(db_path: Path, memory_dir: Path) -> sqlite3.Connection:
    """Open the database file (created private, WAL) with its schema.

    Raises sqlite3.DatabaseError when the file is not a cache of this schema
    version for this memory folder (the caller deletes it and opens it again).
    """
    from forgemem.permissions import PRIVATE_FILE, make_private

    if not db_path.exists():  # created private; SQLite gives its -wal/-shm the same mode
        os.close(os.open(db_path, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE))
    make_private(db_path)
    db = sqlite3.connect(db_path, isolation_level=None, timeout=BUSY_TIMEOUT, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    create(db, memory_dir)
    if get_meta(db, "schema") != SCHEMA_VERSION or get_meta(db, "memory_dir") != str(memory_dir):
        db.close()
        raise sqlite3.DatabaseError("the cache belongs to another version or folder")
    return db


def connect_in_memory(memory_dir: Path) -> sqlite3.Connection:
    """A database that lives in this process only (when the cache folder cannot be written)."""
    db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    create(db, memory_dir)
    return db


def create(db: sqlite3.Connection, memory_dir: Path) -> None:
    """The tables (if missing), and the meta of a new database."""
    db.executescript(
        """
        CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS files(
            path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
            sha256 TEXT NOT NULL, problems TEXT);
        CREATE TABLE IF NOT EXISTS memories(
            rowid INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT UNIQUE NOT NULL, id TEXT NOT NULL,
            record TEXT NOT NULL, text_hash TEXT NOT NULL, gen INTEGER NOT NULL);
        CREATE INDEX IF NOT EXISTS memories_gen ON memories(gen);
        CREATE INDEX IF NOT EXISTS files_problems ON files(path) WHERE problems IS NOT NULL;
        CREATE TABLE IF NOT EXISTS vectors(
            rowid INTEGER PRIMARY KEY, vector BLOB NOT NULL, gen INTEGER NOT NULL);
        CREATE INDEX IF NOT EXISTS vectors_gen ON vectors(gen);
        CREATE TABLE IF NOT EXISTS tombstones(rowid INTEGER PRIMARY KEY, gen INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS embedded(
            text_hash TEXT PRIMARY KEY, vector BLOB NOT NULL, used REAL NOT NULL);
        CREATE INDEX IF NOT EXISTS tombstones_gen ON tombstones(gen);
        CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
            text, tokenize='porter unicode61 remove_diacritics 2');
        """
    )
    if get_meta(db, "schema") is None:
        from forgemem.index import links

        links.create(db)
        db.execute("BEGIN")
        set_meta(db, "schema", SCHEMA_VERSION)
        set_meta(db, "memory_dir", str(memory_dir))
        set_meta(db, "generation", "0")
        set_meta(db, "vectors_epoch", "0")
        set_meta(db, "fts", FTS_FORMAT)
        links.mark(db, 0)
        db.execute("COMMIT")


def get_meta(db: sqlite3.Connection, key: str) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def set_meta(db: sqlite3.Connection, key: str, value: str) -> None:
    db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))


def select_in(db: sqlite3.Connection, sql: str, values: list) -> list[tuple]:
    """Rows of `sql`, whose `IN ({})` is filled with `values`, in chunks SQLite accepts."""
    rows: list[tuple] = []
    for start in range(0, len(values), 500):
        chunk = values[start : start + 500]
        rows += db.execute(sql.format(",".join("?" * len(chunk))), chunk).fetchall()
    return rows
