"""Usage data: which memories recalls returned, and what `forgemem feedback` said of them; and the
tokens the hooks injected (`token_report`, from the hooks log).

This is the user's own data, not derived from the memory files, so it does not
live in the rebuildable cache: `index --rebuild`, doctor's repair, a corrupt
cache's recovery or a schema bump delete the cache and must not take feedback
with them. Each store's usage sits in `~/.forge/usage/<scope>-<hash of the
store's folder>.sqlite` (private: 0700 folder, 0600 file; never in git, never in
a memory file, so a recall never dirties the working tree).

The access log keeps the newest ACCESS_KEEP recalls; feedback is kept as counts
(read on every recall: a small table); `forgemem tidy` remembers here what a
person chose to keep as it is, so it does not ask again. Usage recorded by an
older forgemem in the cache is moved here the first time a store's usage is opened.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import time
from pathlib import Path

from forgemem.config import forge_home
from forgemem.store.folder import Store
from forgemem.store.model import memory_count

ACCESS_KEEP = 100_000
ACCESS_PRUNE_EVERY = 5_000
EVENTS = ("recalled", "useful", "wrong")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS access(memory_id TEXT NOT NULL, at REAL NOT NULL, event TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS access_id ON access(memory_id);
CREATE TABLE IF NOT EXISTS feedback(memory_id TEXT PRIMARY KEY, useful INTEGER NOT NULL, wrong INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS decisions(key TEXT PRIMARY KEY, at REAL NOT NULL);
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

    def recorded_since(self) -> float | None:
        """When the oldest recall still in the access log was recorded (POSIX seconds; None: none yet)."""
        return self.db.execute("SELECT min(at) FROM access WHERE event = 'recalled'").fetchone()[0]

    # ------------------------------------------------------------ decisions (`forgemem tidy`)

    def decide(self, key: str) -> None:
        """Remember that a person chose to leave something as it is (`key`: what was asked, by memory id)."""
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO decisions(key, at) VALUES (?, ?)", (key, time.time()))

    def decisions(self) -> dict[str, float]:
        """key -> when it was decided."""
        return dict(self.db.execute("SELECT key, at FROM decisions"))


# ------------------------------------------------------------------ tokens injected (from the hooks log)

#: the JSON part of a hooks-log injection line: `<time> injected N memories, T tokens, M ms {"event": "injected", …}`
_INJECTED = re.compile(r'^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d) injected (\d+) memor(?:y|ies), (\d+) tokens\b[^{]*(\{"event": "injected".*\})?$')
TOP = 10


def injection_message(ids: list[str], tokens: int, ms: float, session: str | None) -> str:
    """The hooks log's line for one injection (after its time stamp): the counts for people, then one JSON
    object for `forgemem stats --tokens`: memory ids, tokens, the agent's session id. Never memory text."""
    data = {"event": "injected", "session": session if isinstance(session, str) else None, "tokens": tokens,
            "ids": list(ids), "ms": round(ms)}
    return f"injected {memory_count(len(ids))}, {tokens} tokens, {ms:.0f} ms {json.dumps(data)}"


def token_report(log: Path, current: list[str], top: int = TOP) -> dict:
    """Tokens injected per session and per day, the memories injected most, and the current memories
    (`current`: their ids) never injected, from the hooks log at `log`.

    The log keeps its newest 256 KiB (`forgemem.agents.hooks`), so the figures cover the time since its
    first line (`since`). Lines written before injections named their memories count in the totals and
    per day only.
    """
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    sessions: dict[str, dict] = {}
    days: dict[str, dict] = {}
    counts: dict[str, int] = {}
    since = None
    injections = tokens = 0
    for line in text.splitlines():
        stamp = line[:19]
        if since is None and re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$", stamp):
            since = stamp
        found = _INJECTED.match(line)
        if found is None or found.group(2) == "0":
            continue  # not an injection, or one with nothing in it
        spent = int(found.group(3))
        data: dict = {}
        if found.group(4):
            try:
                data = json.loads(found.group(4))
            except ValueError:
                data = {}
        injections += 1
        tokens += spent
        day = days.setdefault(stamp[:10], {"day": stamp[:10], "injections": 0, "tokens": 0})
        day["injections"] += 1
        day["tokens"] += spent
        session = data.get("session") if isinstance(data.get("session"), str) else None
        entry = sessions.setdefault(session or "", {"session": session, "injections": 0, "tokens": 0,
                                                     "first": stamp, "last": stamp})
        entry["injections"] += 1
        entry["tokens"] += spent
        entry["last"] = stamp
        for memory_id in data.get("ids") or []:
            if isinstance(memory_id, str):
                counts[memory_id] = counts.get(memory_id, 0) + 1
    most = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return {
        "log": str(log),
        "since": since,
        "injections": injections,
        "tokens": tokens,
        "per_session": sorted(sessions.values(), key=lambda s: s["last"], reverse=True),
        "per_day": sorted(days.values(), key=lambda d: d["day"]),
        "most_injected": [{"id": i, "injections": n} for i, n in most],
        "never_injected": [i for i in current if i not in counts],
    }
