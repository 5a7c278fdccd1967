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
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from forgemem.capture.announce import create_table as create_announcements
from forgemem.index.database import busy
from forgemem.store.model import PROPOSED

if TYPE_CHECKING:
    from forgemem.capture.capturer import PassResult
    from forgemem.workspace import Workspace

T = TypeVar("T")

STATE_NAME = "observer.sqlite"
STALE_SECONDS = 900  # a pass running this long, by a process that cannot be checked, is run again
MAX_ATTEMPTS = 3  # a pass whose process died this many times is failed, not started again
LAST_WRITES = 10  # memories `--status` lists under its last writes
PATIENCE = 60.0  # seconds a write waits for another observer holding the lock before giving up for now
FINISH_PATIENCE = 600.0  # ... and a pass's result, which is not read again from the transcript
BUSY_SECONDS = 5.0  # SQLite's own wait (busy_timeout) within each try
SCHEMA_VERSION = 2

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS transcripts (
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
)""",
    """CREATE TABLE IF NOT EXISTS arc (
    path TEXT NOT NULL,
    turn INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (path, turn)
)""",
    """CREATE TABLE IF NOT EXISTS passes (
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
)""",
    "CREATE INDEX IF NOT EXISTS passes_pending ON passes (status, id)",
    "CREATE TABLE IF NOT EXISTS notices (id INTEGER PRIMARY KEY AUTOINCREMENT, time REAL NOT NULL, message TEXT NOT NULL)",
)
#: columns added since the first schema: (table, column, declaration)
_ADDED = (
    ("transcripts", "skipped", "INTEGER NOT NULL DEFAULT 0"),  # records that could not be read, passed over
    ("passes", "host", "TEXT"),  # the process running the pass: host, pid, when it started
    ("passes", "pid", "INTEGER"),
    ("passes", "pid_start", "TEXT"),
    ("passes", "attempts", "INTEGER NOT NULL DEFAULT 0"),
)


class StateBusy(Exception):
    """Another observer held the state's write lock for longer than this one's patience."""


def state_path(workspace: Workspace) -> Path:
    """The observer's database: in the repo cache when there is a repo store, else the user's."""
    return workspace.capture_store().cache_dir / STATE_NAME


class ObserverState:
    """The observer's SQLite database (one connection per thread).

    Every write runs in `write` (a lock held by another observer is waited for, with
    backoff, up to `patience` seconds, then `StateBusy`); a database that cannot be
    read is moved aside and rebuilt when it is opened (`forgemem.capture.health`),
    and `on_notice` hears it once.
    """

    def __init__(self, path: Path, on_notice: Callable[[str], None] | None = None, patience: float = PATIENCE,
                 check: bool = True):
        from forgemem.capture import health
        from forgemem.permissions import private_dir

        self.path = path
        self.patience = patience
        self._local = threading.local()
        private_dir(path.parent)
        gitignore = path.parent / ".gitignore"
        if not gitignore.exists():
            gitignore.write_text("*\n", encoding="utf-8")
        found = health.problem(path) if check else None
        if found is not None:
            said = health.recover(path, found)
            if said and on_notice is not None:
                on_notice(said)
        try:
            self._open()
        except (sqlite3.DatabaseError, OSError) as exc:
            if not check or not health.is_corrupt(exc, path):
                raise
            self.close()
            said = health.recover(path, f"{type(exc).__name__}: {exc}")
            if said and on_notice is not None:
                on_notice(said)
            self._open()

    def _open(self) -> None:
        from forgemem.permissions import PRIVATE_FILE, make_private

        if not os.path.lexists(self.path):  # created private: it holds conversation text (redacted, but still)
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE))
        make_private(self.path)
        version = self._retry(lambda: self.connection.execute("PRAGMA user_version").fetchone()[0])
        if version < SCHEMA_VERSION:
            self.write(self._migrate)

    def _migrate(self) -> None:
        conn = self.connection
        for statement in _SCHEMA:
            conn.execute(statement)
        for table, column, declaration in _ADDED:
            if column not in {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @property
    def connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=min(BUSY_SECONDS, self.patience), isolation_level=None)
            conn.row_factory = sqlite3.Row
            try:
                self._retry(lambda: conn.execute("PRAGMA journal_mode=WAL"))
                conn.execute("PRAGMA synchronous=NORMAL")
            except BaseException:
                conn.close()
                raise
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Close this thread's connection (the next use opens another)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            self._local.conn = None
            conn.close()

    def _retry(self, attempt: Callable[[], T], patience: float | None = None) -> T:
        """`attempt()`, tried again with backoff while another process holds the lock; StateBusy past `patience`."""
        waited_until = time.monotonic() + (self.patience if patience is None else patience)
        delay = 0.02
        while True:
            try:
                return attempt()
            except sqlite3.OperationalError as exc:
                if not busy(exc):
                    raise
                left = waited_until - time.monotonic()
                if left <= 0:
                    raise StateBusy(f"the observer state {self.path} stayed locked by another process") from exc
                time.sleep(min(delay * random.uniform(0.5, 1.5), left))
                delay = min(delay * 2, 1.0)

    def write(self, work: Callable[[], T], patience: float | None = None) -> T:
        """Run `work` in one write transaction: all of it is stored, or none of it."""
        conn = self.connection
        self._retry(lambda: conn.execute("BEGIN IMMEDIATE"), patience)
        try:
            result = work()
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return result

    def adopt(self, other: Path, targets: list[Path]) -> int:
        """Take over, from another state database, what it knows of the transcripts under `targets` that this one
        does not know: a repository's first capture keeps its state in the user's cache (the repository's store did
        not exist yet), and a later run, in the repository's cache, goes on from there instead of reading it all
        again (and writing back what was purged since), whichever transcript it reads first. Returns how many
        transcripts were taken over."""
        conn = self.connection
        if not targets or not other.is_file() or other.resolve() == self.path.resolve():
            return 0
        # a target file, or a file under a target folder (compared as text: "_" and "%" in a path are not wildcards)
        match = " OR ".join("path = ? OR substr(path, 1, ?) = ?" for _ in targets)
        folders = [str(target).rstrip("/") + "/" for target in targets]
        args: list[str | int] = [a for target, folder in zip(targets, folders) for a in (str(target), len(folder), folder)]

        def work() -> int:  # under the write lock: another observer may have read meanwhile
            paths = [r[0] for r in conn.execute(
                f"SELECT path FROM other.transcripts WHERE ({match}) AND path NOT IN (SELECT path FROM main.transcripts)",
                args)]
            if not paths:
                return 0
            which = ", ".join("?" for _ in paths)
            create_announcements(conn)  # what that run wrote and no prompt said yet, this project's next says
            for table in ("transcripts", "arc", "passes", "announcements"):
                here = [r[1] for r in conn.execute(f"PRAGMA main.table_info({table})")]
                there = {r[1] for r in conn.execute(f"PRAGMA other.table_info({table})")}
                if columns := ", ".join(c for c in here if c in there and not (table == "passes" and c == "id")):
                    conn.execute(f"INSERT OR IGNORE INTO main.{table} ({columns}) SELECT {columns} "
                                 f"FROM other.{table} WHERE path IN ({which})", paths)
                if columns and table == "announcements":  # and only it: the user's cache is no project's
                    conn.execute(f"UPDATE other.announcements SET announced = ? WHERE announced IS NULL AND path IN "
                                 f"({which})", (time.time(), *paths))
            return len(paths)

        try:
            conn.execute("ATTACH DATABASE ? AS other", (str(other),))  # not inside a transaction
        except sqlite3.Error:
            return 0
        try:
            return self.write(work)
        except (sqlite3.Error, StateBusy):
            return 0  # read again from the start: slower, never wrong (duplicates are not written twice)
        finally:
            conn.execute("DETACH DATABASE other")

    def transcript(self, path: str) -> sqlite3.Row | None:
        return self._retry(lambda: self.connection.execute(
            "SELECT * FROM transcripts WHERE path = ?", (path,)).fetchone())

    def transcripts(self) -> list[sqlite3.Row]:
        return self._retry(lambda: self.connection.execute("SELECT * FROM transcripts ORDER BY path").fetchall())

    def pending(self, limit: int = 1000) -> list[sqlite3.Row]:
        """Passes waiting to run, oldest first (with any left running by a process that died)."""
        self.reclaim_dead()
        return self._retry(lambda: self.connection.execute(
            "SELECT * FROM passes WHERE status = 'pending' ORDER BY id LIMIT ?", (limit,)).fetchall())

    def reclaim_dead(self) -> int:
        """Passes left running by a process that is gone go back to pending at once (failed after
        MAX_ATTEMPTS: a pass that kills its process is not started forever); returns how many."""
        from forgemem.capture.health import alive

        rows = self._retry(lambda: self.connection.execute(
            "SELECT id, host, pid, pid_start, started, attempts FROM passes WHERE status = 'running'").fetchall())
        stale = time.time() - STALE_SECONDS
        dead = [r for r in rows if alive(r["host"], r["pid"], r["pid_start"]) is False
                or (alive(r["host"], r["pid"], r["pid_start"]) is None and (r["started"] or 0) < stale)]
        if not dead:
            return 0

        def work() -> int:
            count = 0
            for r in dead:
                guard = (r["id"], r["pid"], r["started"])
                if r["attempts"] >= MAX_ATTEMPTS:
                    cursor = self.connection.execute(
                        "UPDATE passes SET status = 'failed', finished = ?, error = ? WHERE id = ?"
                        " AND status = 'running' AND pid IS ? AND started IS ?",
                        (time.time(), f"the process running it died {r['attempts']} times", *guard))
                else:
                    cursor = self.connection.execute(
                        "UPDATE passes SET status = 'pending', host = NULL, pid = NULL, pid_start = NULL"
                        " WHERE id = ? AND status = 'running' AND pid IS ? AND started IS ?", guard)
                count += cursor.rowcount
            return count

        try:
            return self.write(work, patience=min(self.patience, 5.0))
        except StateBusy:
            return 0  # the next look reclaims them

    def passes(self, path: str | None = None, limit: int = 20) -> list[sqlite3.Row]:
        args: tuple
        if path is None:
            sql, args = "SELECT * FROM passes ORDER BY id DESC LIMIT ?", (limit,)
        else:
            sql, args = "SELECT * FROM passes WHERE path = ? ORDER BY id DESC LIMIT ?", (path, limit)
        return self._retry(lambda: self.connection.execute(sql, args).fetchall())

    def claim(self, pass_id: int) -> bool:
        """Take a pending pass for this process; False if another observer has it, or has one of
        the same transcript running (one transcript's passes never run at the same time), or the
        state stayed locked (the pass waits for the next look)."""
        from forgemem.capture.health import me

        host, pid, start = me()
        try:
            cursor = self.write(lambda: self.connection.execute(
                "UPDATE passes SET status = 'running', started = ?, host = ?, pid = ?, pid_start = ?,"
                " attempts = attempts + 1 WHERE id = ? AND status = 'pending'"
                " AND NOT EXISTS (SELECT 1 FROM passes AS other WHERE other.path = passes.path"
                " AND other.id != passes.id AND other.status = 'running')",
                (time.time(), host, pid, start, pass_id),
            ))
        except StateBusy:
            return False
        return cursor.rowcount == 1

    def add_notice(self, message: str) -> None:
        """Something `observe --status` shows (a rebuilt state, say)."""
        self.write(lambda: self.connection.execute(
            "INSERT INTO notices (time, message) VALUES (?, ?)", (time.time(), message)))

    def notices(self, limit: int = 5) -> list[dict]:
        rows = self._retry(lambda: self.connection.execute(
            "SELECT time, message FROM notices ORDER BY id DESC LIMIT ?", (limit,)).fetchall())
        return [{"time": _utc(r["time"]), "message": r["message"]} for r in rows]

    def finish(self, pass_id: int, result: PassResult | None, error: str | None = None) -> None:
        """Store a pass's result (or its failure), waiting up to FINISH_PATIENCE for the lock."""
        self.write(lambda: self._finish(pass_id, result, error), patience=max(self.patience, FINISH_PATIENCE))

    def _finish(self, pass_id: int, result: PassResult | None, error: str | None) -> None:
        from forgemem.store.redact import redact

        conn = self.connection
        if result is None:
            conn.execute(
                "UPDATE passes SET status = 'failed', finished = ?, error = ? WHERE id = ?",
                (time.time(), redact(error or "")[0], pass_id),
            )
            return
        conn.execute(  # the result and its announcements are stored together
            "UPDATE passes SET status = 'done', finished = ?, classifier = ?, chars_sent = ?, seconds = ?,"
            " written = ?, skipped = ?, notes = ?, turns = '[]', context = '[]' WHERE id = ?",
            (
                time.time(),
                result.classifier,
                result.chars_sent,
                result.seconds,
                json.dumps([{"id": m.id, "category": m.category, "scope": m.scope, "text": m.body,
                             **({"status": m.status} if m.status else {})} for m in result.written]),
                len(result.skipped),
                json.dumps([redact(note)[0] for note in result.notes]),
                pass_id,
            ),
        )
        if result.written:  # the next prompt says what was saved, once (forgemem.announce)
            from forgemem.capture.announce import record

            row = conn.execute("SELECT path FROM passes WHERE id = ?", (pass_id,)).fetchone()
            record(conn, pass_id, row["path"] if row else None, result.written)


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
        size: int | None = None
        changed: str | None = None
        try:
            info = os.stat(row["path"])
            size, changed = info.st_size, _utc(info.st_mtime)
        except OSError:
            pass
        transcripts.append(
            {
                "path": row["path"],
                "format": row["format"],
                "offset": row["offset"],
                "size": size,
                "changed": changed,  # when the transcript was last written to (UTC), None when it is gone
                "exchanges": row["humans"],
                "since_last_pass": row["humans"] - row["humans_at_pass"],
                "compactions": row["compactions"],
                "skipped_records": row["skipped"],
                "passes": {k: counts.get(k, 0) for k in ("pending", "running", "done", "failed")},
                "chars_sent": cost[0],
                "classifier_seconds": round(cost[1], 3),
                "recent": [_pass_summary(p) for p in passes],
            }
        )
    # the session being worked in first: transcript files are named by UUID, so their dates are what tells them apart
    transcripts.sort(key=lambda t: t["changed"] or "", reverse=True)
    return {
        "state": str(state.path),
        "cadence_turns": cadence,
        "targets": targets,
        "transcripts": transcripts,
        "writes": last_writes(state),
        "notices": state.notices(),
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
                "proposed": memory.get("status") == PROPOSED,  # waiting for `forgemem review --accept`
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
