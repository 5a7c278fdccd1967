"""Usage data: which memories recalls returned, and what `forgemem feedback` said of them.

This is the user's own data, not derived from the memory files, so it does not
live in the rebuildable cache: `index --rebuild`, doctor's repair, a corrupt
cache's recovery or a schema bump delete the cache and must not take feedback
with them. Each store's usage sits in `~/.forge/usage/<scope>-<hash of the
store's folder>.sqlite` (private: 0700 folder, 0600 file; never in git, never in
a memory file, so a recall never dirties the working tree).

The access log keeps the newest ACCESS_KEEP recalls; feedback is kept as counts
(read on every recall: a small table). Usage recorded by an older forgemem in the
cache is moved here the first time a store's usage is opened.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from pathlib import Path

from forgemem.config import forge_home
from forgemem.store.folder import Store

ACCESS_KEEP = 100_000
ACCESS_PRUNE_EVERY = 5_000
EVENTS = ("recalled", "useful", "wrong")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS access(memory_id TEXT NOT NULL, at REAL NOT NULL, event TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS access_id ON access(memory_id);
CREATE TABLE IF NOT EXISTS feedback(memory_id TEXT PRIMARY KEY, useful INTEGER NOT NULL, wrong INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def usage_dir() -> Path:
    return forge_home() / "usage"


class Usage:
    """The usage data of one store."""

    def __init__(self, store: Store, folder: Path | None = None):
        self.store = store
        key = hashlib.sha256(str(store.memory_dir.absolute()).encode()).hexdigest()[:16]
        self.path = (folder or usage_dir()) / f"{store.scope}-{key}.sqlite"
        self._db: sqlite3.Connection | None = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = self._open()
        return self._db

    def _open(self) -> sqlite3.Connection:
        from forgemem.permissions import PRIVATE_FILE, make_private, private_dir

        try:
            private_dir(self.path.parent)
            if not self.path.exists():
                import os

                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE))
            make_private(self.path)
            db = sqlite3.connect(self.path, isolation_level=None, timeout=30, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error):  # an unwritable home: usage is kept for this process only
            db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            db.executescript(_SCHEMA)
            return db
        self._adopt_cache_tables(db)
        return db

    def _adopt_cache_tables(self, db: sqlite3.Connection) -> None:
        """Once: move usage an older forgemem kept in the store's cache database here."""
        if db.execute("SELECT 1 FROM meta WHERE key = 'adopted'").fetchone():
            return
        old = self.store.cache_dir / f"{self.store.scope}.sqlite"
        if old.is_file():
            try:
                source = sqlite3.connect(f"file:{old}?mode=ro", uri=True)
                tables = {r[0] for r in source.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                with db:
                    if "access" in tables:
                        db.executemany("INSERT INTO access(memory_id, at, event) VALUES (?, ?, ?)",
                                       source.execute("SELECT memory_id, at, event FROM access"))
                    if "feedback" in tables:
                        db.executemany("INSERT OR IGNORE INTO feedback(memory_id, useful, wrong) VALUES (?, ?, ?)",
                                       source.execute("SELECT memory_id, useful, wrong FROM feedback"))
                source.close()
            except sqlite3.Error:
                pass  # a corrupt old cache: nothing to adopt
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('adopted', ?)", (str(time.time()),))

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    # ------------------------------------------------------------ writing

    def log(self, memory_ids: list[str], event: str) -> None:
        """Record recalls ("recalled") and feedback ("useful", "wrong")."""
        if not memory_ids:
            return
        if event not in EVENTS:
            raise ValueError(f"unknown usage event {event!r}")
        now = time.time()
        with self.db:
            self.db.executemany("INSERT INTO access(memory_id, at, event) VALUES (?, ?, ?)",
                                [(i, now, event) for i in memory_ids])
            if event in ("useful", "wrong"):
                self.db.executemany(
                    f"INSERT INTO feedback(memory_id, useful, wrong) VALUES (?, ?, ?) "
                    f"ON CONFLICT(memory_id) DO UPDATE SET {event} = {event} + 1",
                    [(i, int(event == "useful"), int(event == "wrong")) for i in memory_ids],
                )
                return
            newest = self.db.execute("SELECT max(rowid) FROM access").fetchone()[0] or 0
            if newest % ACCESS_PRUNE_EVERY < len(memory_ids):
                self.db.execute("DELETE FROM access WHERE event = 'recalled' AND rowid <= ?",
                                (newest - ACCESS_KEEP,))

    # ------------------------------------------------------------ reading

    def access_counts(self) -> dict[str, dict[str, float]]:
        """memory id -> {"recalled": count, "last": when last recalled (POSIX seconds), "useful", "wrong"}."""
        result: dict[str, dict[str, float]] = {}
        for memory_id, count, last in self.db.execute(
            "SELECT memory_id, count(*), max(at) FROM access WHERE event = 'recalled' GROUP BY memory_id"
        ):
            result[memory_id] = {"recalled": count, "last": last}
        for memory_id, (useful, wrong) in self.feedback().items():
            entry = result.setdefault(memory_id, {})
            entry.update({k: v for k, v in (("useful", useful), ("wrong", wrong)) if v})
        return result

    def feedback(self) -> dict[str, tuple[int, int]]:
        """memory id -> (useful, wrong) marks from `forgemem feedback`."""
        return {memory_id: (useful, wrong) for memory_id, useful, wrong in
                self.db.execute("SELECT memory_id, useful, wrong FROM feedback")}
