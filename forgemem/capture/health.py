"""Keeping the observer's state from getting stuck: whose pass is running, and a database that cannot be read.

- **A pass whose process died** is run again at once, not after a wait: a claim
  records the process (host, pid and when it started), and a running pass is
  reclaimed as soon as that process is gone, a zombie, or a later process with
  the same pid (`alive`). A claim from another host, or from before processes
  were recorded, is reclaimed after `STALE_SECONDS` as before.
- **A corrupt `observer.sqlite`** (not a database, truncated, malformed, a
  folder in its place) is moved aside with its `-wal` and `-shm` files, renamed
  `observer.sqlite.corrupt-<UTC time>` (never deleted), and a fresh one is
  built (`recover`). What can still be read of the old one (each transcript's
  offset and parser state, the passes not yet run) is carried over, so the
  transcripts are not read and classified again from the start. It is said
  once: to the caller, and as a notice in the new database (`observe --status`).
- `check` is `forgemem doctor`'s look at it.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from forgemem.workspace import Workspace

#: what SQLite says of a file that is not a sound database
CORRUPT = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
LOCK_SECONDS = 60  # how long a process waits for another one that is rebuilding the state

# ------------------------------------------------------------------ processes


@lru_cache(maxsize=1)
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _has_proc() -> bool:
    return Path(f"/proc/{os.getpid()}/stat").exists()


def process_start(pid: int) -> str | None:
    """When process `pid` started, as a token a later process with the same pid never shares ("" when
    this system cannot tell); None when there is no such process, or only its zombie."""
    if not _has_proc():
        return ""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):  # killed, not yet reaped by its parent: dead all the same
        return None
    return f"{_boot_id()}:{fields[19]}"


@lru_cache(maxsize=1)
def me() -> tuple[str, int, str]:
    """(host, pid, start) of this process, as a claim records it."""
    return socket.gethostname(), os.getpid(), process_start(os.getpid()) or ""


def alive(host: str | None, pid: int | None, start: str | None) -> bool | None:
    """Whether the process that made a claim still runs; None when this process cannot tell
    (another host, or a claim that recorded no process)."""
    if not pid or pid <= 0 or host != socket.gethostname():
        return None
    if (host, pid, start) == me():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: it exists
    except OSError:
        return None
    now = process_start(pid)
    return now is not None and (now == "" or now == start)


# ------------------------------------------------------------------ a database that cannot be read


def is_corrupt(exc: BaseException, path: Path) -> bool:
    """An error that says the file at `path` is not a sound database (not: busy, or a folder we cannot write)."""
    if isinstance(exc, sqlite3.DatabaseError):
        name = getattr(exc, "sqlite_errorname", "")
        if name in CORRUPT or "malformed" in str(exc) or "not a database" in str(exc):
            return True
        return name == "SQLITE_CANTOPEN" and path.exists() and not path.is_file()
    return isinstance(exc, IsADirectoryError | NotADirectoryError) or (
        isinstance(exc, OSError) and path.exists() and not path.is_file()
    )


def problem(path: Path, full: bool = False) -> str | None:
    """What is wrong with the database at `path` (None: nothing, or there is none yet)."""
    if not os.path.lexists(path):
        return None
    if path.is_symlink() or not path.is_file():
        return "not a file" if path.exists() else "a broken link"
    for suffix in ("-wal", "-shm"):
        side = Path(f"{path}{suffix}")
        if os.path.lexists(side) and not side.is_file():
            return f"its {suffix} is not a file"
    try:
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=rw", uri=True, timeout=5)  # never creates one
    except sqlite3.Error as exc:
        return f"{type(exc).__name__}: {exc}"
    try:
        rows = conn.execute("PRAGMA integrity_check(5)" if full else "PRAGMA quick_check(1)").fetchall()
        if [tuple(r) for r in rows] != [("ok",)]:
            return "; ".join(str(r[0]) for r in rows)[:300]
        return None
    except sqlite3.Error as exc:
        if is_corrupt(exc, path):
            return f"{type(exc).__name__}: {exc}"
        return None  # busy, say: not a sign of damage
    finally:
        conn.close()


def _aside_name(path: Path) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 2
    while any(os.path.lexists(f"{aside}{s}") for s in ("", "-wal", "-shm")):
        aside = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
        n += 1
    return aside


def recover(path: Path, reason: str) -> str | None:
    """Move a corrupt state aside (renamed, never deleted) and start a fresh one; returns what to say,
    or None when another process had already done it. Run with no connection of ours open on it."""
    from filelock import FileLock

    with FileLock(f"{path}.lock", timeout=LOCK_SECONDS):
        now = problem(path)
        if now is None:  # rebuilt meanwhile by another process, or gone
            return None
        aside = _aside_name(path)
        for suffix in ("-wal", "-shm", ""):  # its log first: a fresh database never replays an old log
            if os.path.lexists(f"{path}{suffix}"):
                os.rename(f"{path}{suffix}", f"{aside}{suffix}")
        from forgemem.capture.state import ObserverState

        fresh = ObserverState(path, check=False)
        carried = _carry_over(aside, fresh)
        message = (f"the observer state {path} could not be read ({now}); moved to {aside.name} and rebuilt"
                   + (f", keeping {carried}" if carried else "; transcripts are read again from the start"))
        fresh.add_notice(message)
        fresh.close()
        return message


def _carry_over(old: Path, fresh) -> str:
    """Copy what can still be read of a corrupt state: offsets and parser state, passes not yet run."""
    kept = []
    try:
        conn = sqlite3.connect(f"{old.absolute().as_uri()}?mode=ro", uri=True, timeout=1)
    except (sqlite3.Error, OSError):
        return ""
    try:
        for table, columns, where in (
            ("transcripts", "path, format, device, inode, offset, state, humans, humans_at_pass, next_turn,"
                            " compactions", ""),
            ("passes", "path, trigger, session, turns, context, created", " WHERE status IN ('pending', 'running')"),
        ):
            try:
                rows = conn.execute(f"SELECT {columns} FROM {table}{where}").fetchall()  # noqa: S608 - our own names
            except sqlite3.Error:
                continue
            marks = ", ".join("?" * len(columns.split(",")))
            fresh.write(lambda rows=rows, table=table, columns=columns, marks=marks: fresh.connection.executemany(
                f"INSERT OR IGNORE INTO {table} ({columns}) VALUES ({marks})", rows))  # noqa: S608
            if rows:
                kept.append(f"{len(rows)} {'transcript offset' if table == 'transcripts' else 'pending pass'}(s)")
    except sqlite3.Error:
        pass
    finally:
        conn.close()
    return " and ".join(kept)


# ------------------------------------------------------------------ forgemem doctor


def check(workspace: Workspace, repair: bool = True) -> dict:
    """The observer state of `workspace`, as `forgemem doctor` reports it: whether it can be read
    (moved aside and rebuilt when not), passes left running by a process that died (run again),
    passes failed or waiting, records skipped, earlier copies moved aside."""
    from forgemem.capture.state import ObserverState, state_path

    path = state_path(workspace)
    report: dict = {"path": str(path), "exists": os.path.lexists(path), "problems": [], "repaired": [],
                    "pending": 0, "failed": 0, "skipped_records": 0,
                    "moved_aside": sorted(p.name for p in path.parent.glob(f"{path.name}.corrupt-*")
                                          if not p.name.endswith(("-wal", "-shm")))}
    if not report["exists"]:
        return {**report, "ok": True}
    found = problem(path, full=True)
    if found:
        report["problems"].append(f"cannot be read ({found})")
        if not repair:
            return {**report, "ok": False}
        said = recover(path, found)
        report["repaired"].append(said or "rebuilt by another process meanwhile")
        report["moved_aside"] = sorted(p.name for p in path.parent.glob(f"{path.name}.corrupt-*")
                                       if not p.name.endswith(("-wal", "-shm")))
    state = ObserverState(path)
    try:
        dead = state.reclaim_dead() if repair else 0
        if dead:
            report["repaired"].append(f"{dead} pass(es) left running by a process that died: run again")
        counts = dict(state.connection.execute("SELECT status, COUNT(*) FROM passes GROUP BY status").fetchall())
        report["pending"], report["failed"] = counts.get("pending", 0), counts.get("failed", 0)
        report["skipped_records"] = state.connection.execute(
            "SELECT COALESCE(SUM(skipped), 0) FROM transcripts").fetchone()[0]
    finally:
        state.close()
    return {**report, "ok": not report["problems"] or bool(report["repaired"])}
