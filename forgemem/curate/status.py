"""The state of things, read without changing anything: what `forgemem status` shows (but the agents' installs,
which `forgemem.agents.status` adds).

- **Stores**: each scope's memories loaded from its cache where the cache still
  agrees with a file (same mtime and size), parsed from the file where it does
  not, so the counts are the files' own and no cache is written; current
  memories, older versions, proposed ones waiting for review, retracted ones;
  conflicts and forks; files that do not parse; stale memories
  (`forgemem.curate.stale`).
- **Index freshness**: which files the cache has not seen (new, changed,
  deleted) and how many memories still wait for their vector; the next recall
  brings it up to date.
- **Observer**: its state database (`forgemem.capture.state`), opened read-only:
  transcripts, passes waiting, failed (the newest failures), the last pass, the
  newest memories capture wrote, passes running in a live process.
- **Recall server**: whether one answers on its socket (a `ping`; none is started).

Nothing here writes: SQLite databases are opened read-only (`immutable` when no
write-ahead log is open beside them, so no `-wal`/`-shm` file is created), and
nothing is created, refreshed or repaired.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from forgemem.errors import Problem
from forgemem.store.folder import Store, find_repo_root
from forgemem.store.model import PROPOSED, Memory
from forgemem.workspace import Snapshot, Workspace

RECENT_FAILURES = 3
LAST_CAPTURES = 5
STALE_SHOWN = 5


@contextmanager
def read_only(path: Path) -> Iterator[sqlite3.Connection | None]:
    """A read-only connection to the SQLite database at `path` that creates no file (None: none, or unreadable)."""
    if not path.is_file():
        yield None
        return
    uri = path.absolute().as_uri()
    wal = Path(f"{path}-wal")
    # With an open write-ahead log (a writer running), read through it; else the file alone is the whole database
    live = wal.is_file() and wal.stat().st_size > 0 and Path(f"{path}-shm").is_file()
    try:
        conn = sqlite3.connect(f"{uri}?mode=ro" if live else f"{uri}?immutable=1", uri=True, timeout=2)
    except sqlite3.Error:
        yield None
        return
    try:
        conn.row_factory = sqlite3.Row
        yield conn
    finally:
        conn.close()


# ------------------------------------------------------------------ stores


def load_store(store: Store) -> tuple[list[Memory], list[Problem], dict]:
    """One store's memories and problems (cached records where the cache agrees with the file), and the
    cache's freshness: {"state": fresh | stale | missing | unreadable, "new", "changed", "deleted", "unembedded"}."""
    from forgemem.index.database import SCHEMA_VERSION, from_record

    scan = store.stat_files()
    db_path = store.cache_dir / f"{store.scope}.sqlite"
    cached: dict[str, tuple[int, int]] = {}
    records: dict[str, str] = {}
    cached_problems: dict[str, str] = {}
    freshness: dict[str, Any] = {"state": "missing", "files": len(scan), "new": 0, "changed": 0, "deleted": 0,
                                 "unembedded": 0}
    with read_only(db_path) as db:
        if db is not None:
            try:
                meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
                if meta.get("schema") == SCHEMA_VERSION and meta.get("memory_dir") == str(store.memory_dir):
                    cached = {r[0]: (r[1], r[2]) for r in db.execute("SELECT path, mtime_ns, size FROM files")}
                    records = dict(db.execute("SELECT path, record FROM memories").fetchall())
                    cached_problems = dict(db.execute(
                        "SELECT path, problems FROM files WHERE problems IS NOT NULL").fetchall())
                    freshness["unembedded"] = db.execute(
                        "SELECT COUNT(*) FROM memories WHERE rowid NOT IN (SELECT rowid FROM vectors)").fetchone()[0]
                    freshness["state"] = "fresh"
                else:
                    freshness["state"] = "unreadable"  # another version's or another folder's: rebuilt on use
            except sqlite3.Error:
                freshness["state"] = "unreadable"
                cached, records, cached_problems = {}, {}, {}
    changed = [p for p, stat in scan.items() if cached.get(p) != stat]
    freshness["new"] = sum(1 for p in changed if p not in cached)
    freshness["changed"] = len(changed) - freshness["new"]
    freshness["deleted"] = sum(1 for p in cached if p not in scan)
    if freshness["state"] == "fresh" and (changed or freshness["deleted"] or freshness["unembedded"]):
        freshness["state"] = "stale"
    base = store.memory_dir
    memories: list[Memory] = []
    problems: list[Problem] = []
    fresh = set(changed)
    for rel in sorted(scan):
        if rel in fresh:
            continue
        if rel in records:
            try:
                memories.append(from_record(records[rel], base / rel))
            except (ValueError, KeyError, TypeError):
                fresh.add(rel)  # a record this version cannot read: the file decides
                continue
        for p in json.loads(cached_problems.get(rel) or "[]"):
            problems.append(Problem(base / rel, p["reason"], p["line"], p["id"]))
    for read in store.read_many(sorted(fresh)):
        if read is None:
            continue
        problems.extend(read.problems)
        if read.memory is not None:
            memories.append(read.memory)
    return memories, problems, freshness


def stores_report(workspace: Workspace, root: Path | None = None) -> tuple[dict, Snapshot]:
    """Counts per store, conflicts, forks, broken files, and the snapshot they came from (`root`: the
    repository, whose store is reported as missing when there is none)."""
    from forgemem.config import FORGE_DIR, MEMORY_DIR

    memories: list[Memory] = []
    problems: list[Problem] = []
    stores: dict[str, dict[str, Any]] = {}
    for scope in ("repo", "user"):
        store = workspace.stores.get(scope)
        if store is None:
            if root is not None:
                stores[scope] = {"path": str(root / FORGE_DIR / MEMORY_DIR), "exists": False}
            continue
        entry: dict = {"path": str(store.memory_dir), "exists": store.exists()}
        if store.exists():
            found, bad, entry["index"] = load_store(store)
            memories += found
            problems += bad
        stores[scope] = entry
    snap = Workspace.assemble(memories, problems)
    graph = snap.graph
    for scope, entry in stores.items():
        if not entry["exists"]:
            continue
        mine = [m for m in snap.memories if m.scope == scope]
        heads = [m for m in graph.heads() if m.scope == scope]
        entry.update({
            "files": entry["index"].pop("files"),
            "current": sum(1 for m in heads if m.status is None),
            "versions": len(mine) - len(heads),  # older versions, superseded
            "proposed": sum(1 for m in heads if m.status == PROPOSED),
            "retracted": sum(1 for m in heads if m.retracted),
        })
    report = {
        "stores": stores,
        "conflicts": [[e.source, e.target] for e in graph.contradictions()],
        "forks": [{"base": base, "heads": heads} for base, heads in graph.forks().items()],
        "problems": [{"path": str(p.path) if p.path else None, "line": p.line, "reason": p.reason}
                     for p in snap.problems],
        "broken_files": len({p.path for p in snap.problems if p.path is not None}),
    }
    return report, snap


def stale_report(workspace: Workspace, snap: Snapshot) -> list[dict]:
    """Repository memories naming paths or symbols that are gone or changed a lot (read-only git)."""
    from forgemem.capture.announce import first_words
    from forgemem.curate.stale import find_stale

    repo = workspace.stores.get("repo")
    root = find_repo_root(repo.memory_dir) if repo is not None and repo.exists() else None
    if root is None:
        return []
    return [{**f.to_dict(), "text": first_words(f.memory.body)} for f in find_stale(snap.heads(), root)]


# ------------------------------------------------------------------ the observer


def observer_report(workspace: Workspace) -> dict:
    """The observer's state, read-only: transcripts, passes by status, the newest failures and captures."""
    from forgemem.capture.health import alive
    from forgemem.capture.state import _utc, last_writes, state_path

    path = state_path(workspace)
    report: dict = {"path": str(path), "exists": path.is_file(), "transcripts": 0, "read_to_end": 0,
                    "passes": {"pending": 0, "running": 0, "done": 0, "failed": 0}, "last_pass": None,
                    "failures": [], "last_captures": [], "capturing_now": [], "known": []}
    with read_only(path) as db:
        if db is None:
            if report["exists"]:
                report["error"] = "cannot be read (`forgemem doctor` repairs it)"
            return report
        try:
            rows = db.execute("SELECT path, size, mtime_ns FROM transcripts").fetchall()
            report["known"] = [r["path"] for r in rows]
            report["transcripts"] = len(rows)
            report["read_to_end"] = sum(1 for r in rows if _read_to_end(r))
            for status, count in db.execute("SELECT status, COUNT(*) FROM passes GROUP BY status"):
                report["passes"][status] = count
            report["last_pass"] = _utc(db.execute("SELECT MAX(finished) FROM passes").fetchone()[0])
            report["failures"] = [
                {"time": _utc(r["finished"]), "transcript": Path(r["path"]).name, "error": r["error"]}
                for r in db.execute("SELECT path, finished, error FROM passes WHERE status = 'failed'"
                                    " ORDER BY id DESC LIMIT ?", (RECENT_FAILURES,))]
            running = db.execute("SELECT host, pid, pid_start FROM passes WHERE status = 'running'").fetchall()
            report["capturing_now"] = sorted({r["pid"] for r in running
                                              if alive(r["host"], r["pid"], r["pid_start"])})
            report["last_captures"] = last_writes(SimpleNamespace(connection=db), LAST_CAPTURES)  # type: ignore[arg-type]
        except sqlite3.Error as exc:
            report["error"] = f"cannot be read ({type(exc).__name__}: {exc}; `forgemem doctor` repairs it)"
    return report


def _read_to_end(row: sqlite3.Row) -> bool:
    try:
        stat = os.stat(row["path"])
    except OSError:
        return True  # gone: nothing more to read
    return (row["size"], row["mtime_ns"]) == (stat.st_size, stat.st_mtime_ns)


# ------------------------------------------------------------------ the recall server


def server_report() -> dict:
    """Whether a recall server answers on its socket, and its process (none is started)."""
    from forgemem.config import server_enabled, server_socket_path

    report: dict = {"enabled": server_enabled(), "socket": str(server_socket_path()), "running": False, "pid": None}
    if not report["enabled"]:
        return report
    from forgemem.recall import client

    answer = client.ask({"op": "ping", "stores": {}, "queries": []}, timeout=1.0)
    if answer is not None and answer.get("ok"):
        report["running"], report["pid"] = True, answer.get("served_by")
    return report


# ------------------------------------------------------------------ all of it


def report(workspace: Workspace, root: Path | None) -> dict:
    """Stores, stale memories, observer, server and which past sessions were never captured."""
    from forgemem.capture.backfill import discover

    stores, snap = stores_report(workspace, root)
    observer = observer_report(workspace)
    known = set(observer.pop("known"))
    from forgemem.capture.transcripts import detect_format

    waiting = [str(f.path) for f in discover(root) if str(f.path) not in known and detect_format(f.path)] \
        if root is not None else []
    return {
        "root": str(root) if root is not None else None,
        **stores,
        "stale": stale_report(workspace, snap),
        "observer": observer,
        "not_captured": len(waiting),
        "server": server_report(),
    }
