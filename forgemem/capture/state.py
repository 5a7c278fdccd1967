"""The observer's state: `observer.sqlite` in the cache (never in memory files).

- `transcripts`: per file its format, (device, inode), byte offset, parser
  state, human turns seen and the count at the last cadence pass — so a
  restart never re-reads a byte or re-captures an exchange;
- `arc`: the turns since the last compaction (the "goal arc" a compaction
  pass reads), capped at ARC_TURNS;
- `passes`: every pass with its own copy of the turns it covers, pending
  until the worker has run it, then its result and cost.

Also what `forgemem observe --status` reports from it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from forgemem.capture.capturer import PassResult
    from forgemem.workspace import Workspace

STATE_NAME = "observer.sqlite"
STALE_SECONDS = 900  # a pass "running" this long belongs to an observer that died: run it again
LAST_WRITES = 10  # memories `--status` lists under its last writes

_SCHEMA = """
CREATE TABLE IF NOT EXISTS transcripts (
    path TEXT PRIMARY KEY,
    format TEXT NOT NULL,
    device INTEGER, inode INTEGER,
    offset INTEGER NOT NULL DEFAULT 0,
    size INTEGER NOT NULL DEFAULT 0,
    mtime_ns INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL DEFAULT '{}',
    humans INTEGER NOT NULL DEFAULT 0,
    humans_at_pass INTEGER NOT NULL DEFAULT 0,
    next_turn INTEGER NOT NULL DEFAULT 0,
    compactions INTEGER NOT NULL DEFAULT 0,
    updated REAL
);
CREATE TABLE IF NOT EXISTS arc (
    path TEXT NOT NULL,
    turn INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (path, turn)
);
CREATE TABLE IF NOT EXISTS passes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    path TEXT NOT NULL,
    trigger TEXT NOT NULL,
    session TEXT,
    turns TEXT NOT NULL,
    context TEXT NOT NULL DEFAULT '[]',
    status TEXT NOT NULL DEFAULT 'pending',
    created REAL NOT NULL,
    started REAL,
    finished REAL,
    classifier TEXT,
    chars_sent INTEGER,
    seconds REAL,
    written TEXT,
    skipped INTEGER,
    notes TEXT,
    error TEXT
);
CREATE INDEX IF NOT EXISTS passes_pending ON passes (status, id);
"""


def state_path(workspace: Workspace) -> Path:
    """The observer's database: in the repo cache when there is a repo store, else the user's."""
    store = workspace.stores.get("repo") or workspace.stores["user"]
    return store.cache_dir / STATE_NAME


class ObserverState:
    """The observer's SQLite database (one connection per thread)."""

    def __init__(self, path: Path):
        from forgemem.permissions import PRIVATE_FILE, make_private, private_dir

        self.path = path
        private_dir(path.parent)
        gitignore = path.parent / ".gitignore"
        if not gitignore.exists():
            gitignore.write_text("*\n", encoding="utf-8")
        if not path.exists():  # created private: it holds conversation text (redacted, but still)
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE))
        make_private(path)
        self._local = threading.local()
        self.connection.executescript(_SCHEMA)

    @property
    def connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    def transcript(self, path: str) -> sqlite3.Row | None:
        return self.connection.execute("SELECT * FROM transcripts WHERE path = ?", (path,)).fetchone()

    def transcripts(self) -> list[sqlite3.Row]:
        return self.connection.execute("SELECT * FROM transcripts ORDER BY path").fetchall()

    def pending(self, limit: int = 1000) -> list[sqlite3.Row]:
        """Passes waiting to run (and any left "running" by an observer that died), oldest first."""
        return self.connection.execute(
            "SELECT * FROM passes WHERE status = 'pending' OR (status = 'running' AND started < ?)"
            " ORDER BY id LIMIT ?",
            (time.time() - STALE_SECONDS, limit),
        ).fetchall()

    def passes(self, path: str | None = None, limit: int = 20) -> list[sqlite3.Row]:
        args: tuple
        if path is None:
            sql, args = "SELECT * FROM passes ORDER BY id DESC LIMIT ?", (limit,)
        else:
            sql, args = "SELECT * FROM passes WHERE path = ? ORDER BY id DESC LIMIT ?", (path, limit)
        return self.connection.execute(sql, args).fetchall()

    def claim(self, pass_id: int) -> bool:
        """Take a pending pass for this process; False if another observer has it, or has one of
        the same transcript running (one transcript's passes never run at the same time)."""
        now = time.time()
        cursor = self.connection.execute(
            "UPDATE passes SET status = 'running', started = ? WHERE id = ?"
            " AND (status = 'pending' OR (status = 'running' AND started < ?))"
            " AND NOT EXISTS (SELECT 1 FROM passes AS other WHERE other.path = passes.path"
            " AND other.id != passes.id AND other.status = 'running' AND other.started >= ?)",
            (now, pass_id, now - STALE_SECONDS, now - STALE_SECONDS),
        )
        return cursor.rowcount == 1

    def finish(self, pass_id: int, result: PassResult | None, error: str | None = None) -> None:
        from forgemem.store.redact import redact

        if result is None:
            self.connection.execute(
                "UPDATE passes SET status = 'failed', finished = ?, error = ? WHERE id = ?",
                (time.time(), redact(error or "")[0], pass_id),
            )
            return
        conn = self.connection
        conn.execute("BEGIN IMMEDIATE")  # the result and its announcements are stored together
        try:
            conn.execute(
                "UPDATE passes SET status = 'done', finished = ?, classifier = ?, chars_sent = ?, seconds = ?,"
                " written = ?, skipped = ?, notes = ?, turns = '[]', context = '[]' WHERE id = ?",
                (
                    time.time(),
                    result.classifier,
                    result.chars_sent,
                    result.seconds,
                    json.dumps([{"id": m.id, "category": m.category, "scope": m.scope, "text": m.body}
                                for m in result.written]),
                    len(result.skipped),
                    json.dumps([redact(note)[0] for note in result.notes]),
                    pass_id,
                ),
            )
            if result.written:  # the next prompt says what was saved, once (forgemem.announce)
                from forgemem.capture.announce import record

                row = conn.execute("SELECT path FROM passes WHERE id = ?", (pass_id,)).fetchone()
                record(conn, pass_id, row["path"] if row else None, result.written)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def status_report(state: ObserverState, wanted: set[str] | None, cadence: int, targets: list[str]) -> dict:
    """What is watched, how far each transcript was read, pending passes, recent results and cost
    (`wanted`: the transcripts to report, None for all)."""
    rows = state.transcripts()
    transcripts = []
    for row in rows:
        if wanted is not None and row["path"] not in wanted:
            continue
        passes = state.passes(row["path"], limit=5)
        counts = dict(
            state.connection.execute(
                "SELECT status, COUNT(*) FROM passes WHERE path = ? GROUP BY status", (row["path"],)
            ).fetchall()
        )
        cost = state.connection.execute(
            "SELECT COALESCE(SUM(chars_sent), 0), COALESCE(SUM(seconds), 0) FROM passes WHERE path = ?",
            (row["path"],),
        ).fetchone()
        try:
            size = os.stat(row["path"]).st_size
        except OSError:
            size = None
        transcripts.append(
            {
                "path": row["path"],
                "format": row["format"],
                "offset": row["offset"],
                "size": size,
                "exchanges": row["humans"],
                "since_last_pass": row["humans"] - row["humans_at_pass"],
                "compactions": row["compactions"],
                "passes": {k: counts.get(k, 0) for k in ("pending", "running", "done", "failed")},
                "chars_sent": cost[0],
                "classifier_seconds": round(cost[1], 3),
                "recent": [_pass_summary(p) for p in passes],
            }
        )
    return {
        "state": str(state.path),
        "cadence_turns": cadence,
        "targets": targets,
        "transcripts": transcripts,
        "writes": last_writes(state),
    }


def last_writes(state: ObserverState, limit: int = LAST_WRITES) -> list[dict]:
    """The newest memories capture wrote, across every transcript of this state, newest first:
    when, from which transcript, the memory (id, scope, category, first words), whether a
    prompt has announced it yet (None: written before announcements were kept)."""
    from forgemem.capture.announce import first_words

    conn = state.connection
    writes: list[dict] = []
    rows = conn.execute(
        "SELECT id, path, finished, written FROM passes WHERE status = 'done' AND written IS NOT NULL"
        " AND written != '[]' ORDER BY id DESC LIMIT ?",
        (limit,),
    ).fetchall()
    for row in rows:
        for memory in reversed(json.loads(row["written"])):
            writes.append({
                "time": _utc(row["finished"]),
                "transcript": Path(row["path"]).name,
                "path": row["path"],
                "pass": row["id"],
                "id": memory["id"],
                "scope": memory["scope"],
                "category": memory["category"],
                "text": first_words(memory["text"]),
            })
    writes = writes[:limit]
    announced: dict[str, float | None] = {}
    if writes:
        marks = ", ".join("?" * len(writes))
        try:
            announced = dict(conn.execute(
                f"SELECT memory, announced FROM announcements WHERE memory IN ({marks})",
                [w["id"] for w in writes],
            ).fetchall())
        except sqlite3.OperationalError:  # no announcements table yet
            pass
    for write in writes:
        write["announced"] = (announced[write["id"]] is not None) if write["id"] in announced else None
    return writes


def _pass_summary(row: sqlite3.Row) -> dict:
    written = json.loads(row["written"]) if row["written"] else []
    return {
        "id": row["id"],
        "trigger": row["trigger"],
        "status": row["status"],
        "finished": _utc(row["finished"]),
        "classifier": row["classifier"],
        "written": written,
        "skipped": row["skipped"],
        "chars_sent": row["chars_sent"],
        "seconds": round(row["seconds"], 3) if row["seconds"] is not None else None,
        "error": row["error"],
        "notes": json.loads(row["notes"]) if row["notes"] else [],
    }


def _utc(stamp: float | None) -> str | None:
    """A stored time as forgemem writes times: UTC, ISO-8601, seconds, `Z`."""
    if stamp is None:
        return None
    from datetime import datetime

    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
