"""The observer: watch transcripts, count exchanges, fire capture passes.

State lives in `observer.sqlite` in the cache, never in memory files
(`forgemem.capture.state`: transcripts and their offsets, the goal arc, passes).

Reading and classifying are separate: `poll` reads and records passes (fast,
on the watching thread); a worker thread with a bounded queue runs them, one
at a time, so a slow or failing classifier never blocks reading and one
transcript's passes never run concurrently. `run_pending` runs them inline
(what `forgemem observe --once` does).
"""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from forgemem.capture.classify import Batch
from forgemem.capture.formats.base import NOT_UTF8
from forgemem.capture.passes import CADENCE_BUDGET, COMPACTION_BUDGET, MAX_TURN_CHARS, record_pass, turn_to_json
from forgemem.capture.state import (
    LAST_WRITES,
    STATE_NAME,
    ObserverState,
    StateBusy,
    last_writes,
    state_path,
    status_report,
)
from forgemem.capture.transcripts import (
    FORMATS,
    Compaction,
    Turn,
    detect_format,
    flush,
    read_new,
    recorded_cwd,
    storable_state,
)
from forgemem.store.folder import find_repo_root

if TYPE_CHECKING:
    from forgemem.capture.capturer import Capturer, PassResult
    from forgemem.workspace import Workspace

__all__ = ["CADENCE_BUDGET", "COMPACTION_BUDGET", "STATE_NAME", "Observer", "ObserverState", "claude_code_folder",
           "state_path"]

ARC_TURNS = 400  # turns of the current goal arc kept for a compaction pass
QUEUE_SIZE = 4  # passes waiting in memory for the worker; the rest wait in the database
CHUNK_BYTES = 1024 * 1024  # reading commits after about this much of a transcript


def claude_code_folder(repo_root: Path, home: Path | None = None) -> Path:
    """Where Claude Code keeps this project's sessions: ~/.claude/projects/<path with - for / and .>."""
    home = home or Path.home()
    return home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(repo_root.resolve()))


def _unchanged(row: sqlite3.Row, identity: tuple[int, int], seen: tuple[int, int]) -> bool:
    """The file is the one read last time, with the same size and modification time."""
    return (row["device"], row["inode"]) == identity and (row["size"], row["mtime_ns"]) == seen


class Observer:
    """Reads transcripts incrementally and records capture passes as they fall due."""

    def __init__(
        self,
        workspace: Workspace,
        targets: Iterable[Path] = (),
        fmt: str | None = None,
        cadence: int | None = None,
        state: ObserverState | None = None,
        capturer: Capturer | None = None,
        on_notice: Callable[[str], None] | None = None,
    ):
        if fmt is not None and fmt not in FORMATS:
            from forgemem.errors import UsageError

            raise UsageError(f"unknown transcript format {fmt!r} (known: {', '.join(FORMATS)})")
        self.workspace = workspace
        self.targets = [Path(os.path.abspath(Path(t).expanduser())) for t in targets]  # "a/../b" said as "b"
        self.fmt = fmt
        self.cadence = cadence or workspace.config.cadence_turns
        self.notices: list[str] = []  # what was said through `on_notice` (skipped records, a busy or rebuilt state)
        self.on_notice = on_notice
        self.state = state or ObserverState(state_path(workspace), on_notice=self._notice)
        if state is None and workspace.capture_store() is not workspace.stores["user"]:
            # the repository's first capture kept its state in the user's cache (its store did not exist yet)
            self.state.adopt(workspace.stores["user"].cache_dir / STATE_NAME, self.targets)
        self._capturer = capturer
        self._not_transcripts: dict[Path, tuple[int, int]] = {}  # files seen not to be one: (size, mtime)
        self._projects: dict[str, Path | None] = {}  # transcript -> the other project it ran in (`elsewhere`)

    # ------------------------------------------------------------ finding transcripts

    def transcripts(self) -> list[Path]:
        """Every transcript file under the targets (folders are searched recursively)."""
        found: list[Path] = []
        for target in self.targets:
            if target.is_dir():
                for path in sorted(target.rglob("*")):
                    if path.suffix not in (".jsonl", ".json", ".md") or not path.is_file():
                        continue
                    try:
                        stat = path.stat()
                    except OSError:
                        continue
                    seen = (stat.st_size, stat.st_mtime_ns)
                    if self._not_transcripts.get(path) == seen:
                        continue  # not detected last time and unchanged since: not read again
                    if self.format_of(path):
                        found.append(path)
                    else:
                        self._not_transcripts[path] = seen
            elif target.is_file():
                found.append(target)
        return found

    def format_of(self, path: Path) -> str | None:
        row = self.state.transcript(str(path))
        if row is not None:
            return row["format"]
        return self.fmt or detect_format(path)

    # ------------------------------------------------------------ reading

    def poll(self, path: Path, compaction: bool = False, final: bool = False) -> int:
        """Read what is new in one transcript; record passes that fall due. Returns turns read.

        With `compaction`, a compaction pass is recorded after reading even if
        the transcript itself shows none (the hook or caller knows better).
        With `final` (a session ended), the human turns short of the cadence
        get a cadence pass too.

        Reading commits every CHUNK_BYTES (a kill keeps what was read, and another
        observer waits for one chunk at most); a record that cannot be read is
        skipped, said once, and the offset moves past it; a state locked by
        another observer for longer than its patience is read next time.
        """
        key = str(path)
        try:
            stat = os.stat(path)
        except OSError:
            return 0
        row = self.state.transcript(key)
        if row is None and self.elsewhere(path) is not None:
            return 0  # read where it ran: its rules belong to that project's store (said once, by `elsewhere`)
        if row is not None and not (compaction or final) and _unchanged(
            row, (stat.st_dev, stat.st_ino), (stat.st_size, stat.st_mtime_ns)
        ):
            return 0  # the common case on a rescan: no write lock taken
        read, more = 0, True
        skipped: list[str] = []
        try:
            while more:  # two observers (say, two hooks) take turns per chunk
                count, more = self.state.write(lambda: self._poll_chunk(path, key, compaction, final, skipped))
                read += count
        except StateBusy as exc:
            self._notice(f"{path}: {exc}; what is new is read next time")
        mended = [note for note in skipped if note.endswith(NOT_UTF8)]
        skipped = [note for note in skipped if not note.endswith(NOT_UTF8)]
        for notes, said in ((skipped, "skipped {n} record(s) that cannot be read"),
                            (mended, "read {n} record(s) without the bytes of them that are not UTF-8")):
            if notes:
                shown = "; ".join(notes[:3]) + (f"; and {len(notes) - 3} more" if len(notes) > 3 else "")
                self._notice(f"{path}: {said.format(n=len(notes))}: {shown}")
        return read

    def elsewhere(self, path: Path) -> Path | None:
        """The git repository another session ran in (its transcript's folder, on this machine), when it is not
        this workspace's (nor one inside it, or around it): what it says of "this repo" belongs to that project's
        store, not this one's nor the person's, so it is not read here (said once). None: read it here."""
        key = str(path)
        if key not in self._projects:
            cwd, repo, other = recorded_cwd(path), self.workspace.stores.get("repo"), None
            here = repo.memory_dir.parent.parent.resolve() if repo is not None else None
            if cwd and Path(cwd).is_dir() and (root := find_repo_root(Path(cwd))) is not None and (
                    here is None or not (root == here or here in root.parents or root in here.parents)):
                other = root
                self._notice(f"{path}: this session ran in {other}, another project; not read here, its rules go to "
                             f"that project's store: `forgemem -C {shlex.quote(str(other))} observe --once {shlex.quote(str(path))}`")
            self._projects[key] = other
        return self._projects[key]

    def _poll_chunk(self, path: Path, key: str, compaction: bool, final: bool, skipped: list[str]) -> tuple[int, bool]:
        """One chunk of a transcript, inside the write transaction: (turns read, more to read)."""
        try:
            stat = os.stat(path)
        except OSError:
            return 0, False
        identity, seen = (stat.st_dev, stat.st_ino), (stat.st_size, stat.st_mtime_ns)
        conn = self.state.connection
        row = self.state.transcript(key)
        if row is None:
            fmt = self.format_of(path)
            if fmt is None:
                return 0, False
            row = self._reset(key, fmt, identity)
        rotated = (row["device"], row["inode"]) != identity or stat.st_size < row["offset"]
        if rotated and row["format"] != "gemini":
            row = self._reset(key, row["format"], identity)
        if not (compaction or final) and _unchanged(row, identity, seen):
            return 0, False  # another observer read it while this one waited for the lock
        try:
            result = read_new(path, row["format"], row["offset"], json.loads(row["state"]), limit=CHUNK_BYTES)
        except OSError:
            return 0, False  # gone, or unreadable now: the next change tries again
        last = not result.more
        if last and (compaction or final):  # the caller knows the turn in progress is complete
            result.events += flush(path, row["format"], result.state)
        humans, humans_at_pass = row["humans"], row["humans_at_pass"]
        compactions = row["compactions"]
        read = 0
        for event in result.events:
            if isinstance(event, Compaction):
                record_pass(conn, key, "compaction", event.session_id)
                conn.execute("DELETE FROM arc WHERE path = ?", (key,))
                humans_at_pass = humans
                compactions += 1
                continue
            read += 1
            conn.execute(
                "INSERT OR REPLACE INTO arc (path, turn, data) VALUES (?, ?, ?)",
                (key, event.index, json.dumps(turn_to_json(event))),
            )
            if event.role == "user":
                humans += 1
                if humans - humans_at_pass >= self.cadence:
                    record_pass(conn, key, "cadence", event.session_id, humans - humans_at_pass)
                    humans_at_pass = humans
        if last and final and humans > humans_at_pass and not compaction:
            record_pass(conn, key, "cadence", result.state.get("session"), humans - humans_at_pass)
            humans_at_pass = humans
        if last and compaction:
            record_pass(conn, key, "compaction", result.state.get("session"))
            conn.execute("DELETE FROM arc WHERE path = ?", (key,))
            humans_at_pass = humans
            compactions += 1
        next_turn = result.state.get("turns", 0)
        conn.execute("DELETE FROM arc WHERE path = ? AND turn < ?", (key, next_turn - ARC_TURNS))
        size, mtime_ns = seen if last else (-1, -1)  # only a read to the end marks the file as read
        conn.execute(
            "UPDATE transcripts SET device = ?, inode = ?, offset = ?, size = ?, mtime_ns = ?, state = ?,"
            " humans = ?, humans_at_pass = ?, compactions = ?, next_turn = ?, skipped = skipped + ?, updated = ?"
            " WHERE path = ?",
            (
                identity[0],
                identity[1],
                result.offset,
                size,
                mtime_ns,
                json.dumps(storable_state(result.state, keep_chars=2 * MAX_TURN_CHARS)),
                humans,
                humans_at_pass,
                compactions,
                next_turn,
                sum(not note.endswith(NOT_UTF8) for note in result.skipped),
                time.time(),
                key,
            ),
        )
        skipped.extend(result.skipped)
        return read, result.more

    def _reset(self, key: str, fmt: str, identity: tuple[int, int]) -> sqlite3.Row:
        """Read a transcript from its start again (a new one, or a rotated or replaced file); its new row."""
        conn = self.state.connection
        conn.execute("DELETE FROM arc WHERE path = ?", (key,))
        conn.execute(
            "INSERT OR REPLACE INTO transcripts (path, format, device, inode, updated) VALUES (?, ?, ?, ?, ?)",
            (key, fmt, identity[0], identity[1], time.time()),
        )
        row = conn.execute("SELECT * FROM transcripts WHERE path = ?", (key,)).fetchone()
        assert row is not None  # written just now, in this transaction
        return row

    def _notice(self, message: str) -> None:
        """Something the user should hear once (the CLI prints it; a hook's run puts it in the hooks log)."""
        self.notices.append(message)
        if self.on_notice is not None:
            self.on_notice(message)

    # ------------------------------------------------------------ running passes

    @property
    def capturer(self) -> Capturer:
        if self._capturer is None:
            from forgemem.capture.capturer import Capturer

            self._capturer = Capturer(self.workspace)
        return self._capturer

    def run_pass(self, row: sqlite3.Row) -> PassResult | None:
        """Run one recorded pass, claimed by this process, and store its result.

        A failure is stored (see `status`), not raised.
        """
        turns = [Turn(**t) for t in json.loads(row["turns"])]
        context = [Turn(**t) for t in json.loads(row["context"])]
        batch = Batch(turns, row["trigger"], row["session"], row["path"], context=context)
        try:
            result: PassResult | None = self.capturer.run(batch)
            error = None
        except Exception as exc:  # noqa: BLE001 - recorded for --status, the loop goes on
            result, error = None, f"{type(exc).__name__}: {exc}"
        try:
            self.state.finish(row["id"], result, error)
        except StateBusy as exc:  # still "running" under this process: run again once it has ended
            self._notice(f"pass {row['id']}: its result could not be stored ({exc})")
        return result

    def run_pending(self, on_result: Callable[[sqlite3.Row, PassResult | None], None] | None = None) -> int:
        """Run every pending pass in order, inline. Returns how many ran."""
        count = 0
        for row in self.state.pending():
            if not self.state.claim(row["id"]):
                continue  # another observer runs it
            result = self.run_pass(row)
            count += 1
            if on_result:
                on_result(row, result)
        return count

    def once(self, compaction: bool = False, final: bool = False, on_result=None) -> tuple[int, int]:
        """Read every transcript, run what fell due; (turns read, passes run)."""
        read = sum(self.poll_safely(path, compaction=compaction, final=final) for path in self.transcripts())
        return read, self.run_pending(on_result)

    def hand_over(self) -> int:
        """After a run that created the repository's store, whose state the user's cache kept meanwhile: that state
        goes to the repository's cache now, so `observe --status` there shows this run at once; how many transcripts."""
        repo = self.workspace.stores.get("repo")
        if (not self.workspace.created or repo is None or not repo.exists()
                or self.state.path == repo.cache_dir / STATE_NAME):
            return 0
        try:
            there = ObserverState(repo.cache_dir / STATE_NAME, on_notice=self._notice)
        except (OSError, sqlite3.Error) as exc:  # the next run takes it over instead
            self._notice(f"the capture state stays in {self.state.path} for now: {repo.cache_dir} cannot hold it ({exc})")
            return 0
        try:
            return there.adopt(self.state.path, self.targets)
        finally:
            there.close()

    def waiting(self) -> int:
        """Exchanges read from the watched transcripts and in no pass yet: they wait for `cadence`
        exchanges in all, a compaction, or the session's end (`--final`)."""
        rows = (self.state.transcript(str(path)) for path in self.transcripts())
        return sum(row["humans"] - row["humans_at_pass"] for row in rows if row is not None)

    def poll_safely(self, path: Path, compaction: bool = False, final: bool = False) -> int:
        """`poll`, but a failure on one transcript is said and the others are still read (a broken
        state database is the exception: it is for the caller and the next start to handle)."""
        try:
            return self.poll(path, compaction=compaction, final=final)
        except sqlite3.Error:
            raise
        except Exception as exc:  # noqa: BLE001 - one transcript never stops the others
            self._notice(f"{path}: reading failed ({type(exc).__name__}: {exc}); it is tried again on its next change")
            return 0

    # ------------------------------------------------------------ watching

    def _wanted(self, path: Path) -> bool:
        for target in self.targets:
            if path == target:
                return True
            if target.is_dir() and target in path.parents and path.suffix in (".jsonl", ".json", ".md"):
                return True
        return False

    def watch(
        self,
        stop: threading.Event,
        on_result: Callable[[sqlite3.Row, PassResult | None], None] | None = None,
        rescan_seconds: float = 5.0,
        ready: threading.Event | None = None,
    ) -> None:
        """Watch the targets until `stop` is set: read on every change, classify on the worker.

        watchdog reports appends, new files and renames (log rotation); a full
        rescan every `rescan_seconds` catches anything an event missed.
        """
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer as WatchdogObserver

        dirty: set[Path] = set()
        lock = threading.Lock()
        wake = threading.Event()
        work: queue.Queue[int | None] = queue.Queue(maxsize=QUEUE_SIZE)
        queued: set[int] = set()

        class Handler(FileSystemEventHandler):
            def on_any_event(handler, event):  # noqa: N805 - watchdog's signature
                for raw in (event.src_path, getattr(event, "dest_path", None)):
                    if raw:
                        path = Path(os.fsdecode(raw))
                        if self._wanted(path):
                            with lock:
                                dirty.add(path)
                            wake.set()

        def worker() -> None:
            try:
                self.capturer.engine.refresh()  # load the model and index before the first pass needs them
            except Exception:  # noqa: BLE001 - the pass itself will record what is wrong
                pass
            while True:
                pass_id = work.get()
                if pass_id is None:
                    return
                row = self.state.connection.execute("SELECT * FROM passes WHERE id = ?", (pass_id,)).fetchone()
                ran = row is not None and self.state.claim(pass_id)
                if ran:
                    result = self.run_pass(row)
                    if on_result:
                        on_result(row, result)
                with lock:
                    queued.discard(pass_id)
                if ran:
                    wake.set()  # more may be waiting; a pass another observer holds waits for the next tick

        watcher = WatchdogObserver()
        for target in self.targets:
            folder = target if target.is_dir() else target.parent
            if folder.is_dir():
                watcher.schedule(Handler(), str(folder), recursive=target.is_dir())
        watcher.start()
        thread = threading.Thread(target=worker, name="forgemem-classifier", daemon=True)
        thread.start()
        last_scan = 0.0
        try:
            if ready is not None:
                ready.set()
            while not stop.is_set():
                now = time.monotonic()
                if now - last_scan >= rescan_seconds:
                    paths = set(self.transcripts())
                    last_scan = now
                else:
                    paths = set()
                with lock:
                    paths |= dirty
                    dirty.clear()
                for path in sorted(paths):
                    if path.is_file():
                        self.poll_safely(path)
                for row in self.state.pending(limit=QUEUE_SIZE * 4):
                    with lock:
                        if row["id"] in queued:
                            continue
                    try:
                        work.put_nowait(row["id"])
                    except queue.Full:
                        break  # it waits in the database; reading goes on
                    with lock:
                        queued.add(row["id"])
                wake.wait(timeout=min(rescan_seconds, 1.0))
                wake.clear()
        finally:
            watcher.stop()
            watcher.join(timeout=5)
            # let a running pass finish; passes still queued stay pending for next time
            while True:
                try:
                    work.get_nowait()
                except queue.Empty:
                    break
            work.put(None)
            thread.join(timeout=60)

    # ------------------------------------------------------------ status

    def status(self) -> dict:
        """What is watched, how far each transcript was read, pending passes, recent results and cost."""
        wanted = {str(p) for p in self.transcripts()} if self.targets else None
        report = status_report(self.state, wanted, self.cadence, [str(t) for t in self.targets])
        if report.get("writes"):
            graph = self.workspace.load().graph
            for write in report["writes"]:
                # what became of it since: still current, replaced by a later version, or gone
                write["now"] = ("current" if graph.is_head(write["id"]) else "gone"
                                if write["id"] not in graph.memories else "replaced")
        return report

    def last_writes(self, limit: int = LAST_WRITES) -> list[dict]:
        """The newest memories capture wrote, newest first (see `forgemem.capture.state.last_writes`)."""
        return last_writes(self.state, limit)
