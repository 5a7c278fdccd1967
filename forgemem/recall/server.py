"""The recall server: keeps the model and the indexes loaded between recalls.

Start-up is the product: an agent hook runs `forgemem recall` on every prompt,
and importing numpy, FAISS and ONNX Runtime and loading the model costs about
half a second per process. So `forgemem recall` first asks a long-lived local
server over a Unix socket (`~/.forge/cache/recall-server.sock`); the server
holds one recall engine per pair of stores, watches their folders (watchdog),
refreshes from the files before an answer whenever anything changed there (and
at least every 30 s regardless), and answers in milliseconds. When no server answers, the CLI does the work in-process (the
same `handle` function) and starts a server in the background for the next
call. It exits by itself after `--idle-timeout` seconds without a request.

`FORGEMEM_SERVER=off` turns the server off (every recall runs in-process);
`forgemem serve` runs one in the foreground; `forgemem serve --stop` stops it.

The protocol and its checks are in `forgemem.recall.protocol`; the client (ask the
server, else answer here and start one) in `forgemem.recall.client`. Protocol, in
short: one JSON object per line each way. A request is
`{"op": "recall", "version": ..., "stores": {"repo": DIR, "user": DIR},
"use_embeddings": ..., "queries": [{"text", "k", "scope", "category", "tags",
"hops", "history", "floor"}]}`; the answer is `{"ok": true, "lexical_only": ...,
"notes": [...], "results": [[hit, ...], ...], "floors": [...], "below_floor": [...]}`
or `{"ok": false, "error": ...}`.
`{"op": "context", ..., "queries": [one query], "budget": N}` answers with the
rendered block instead (`forgemem.context`): `{"ok": true, "context", "tokens",
"ids", "left_out", "hashes", "repeated", ...}`; its optional `"skip": {id: fingerprint}`
leaves out what the agent already has unchanged (the hooks' session record).
`{"op": "recall-command", ...}` is a plain `forgemem recall QUERY` command line (its options, folder,
terminal and environment), answered with the text the command prints (`forgemem.recall.command`): a warm
recall's client then loads next to nothing (`forgemem.cli.quick`).
This module imports only the standard library until a request is handled.

Trust, both ways (the answer ends up in an agent's context):

- the client talks only to a socket that is a socket, owned by this user, in a
  folder owned by this user that others cannot write to, served by a process
  of this user (`SO_PEERCRED`); anything else is no answer (the work is done
  in-process) and one notice saying why;
- the server makes its folder 0700 and its socket 0600, refuses connections
  from other users (`SO_PEERCRED`), parses every request into a `Request`
  (types, ranges, sizes) before using it, and serves only stores that are
  memory folders of the requesting user (`store_problem`, which the client
  applies too, so it never asks for what would be refused);
- one event loop (asyncio) reads every connection, each with its own short
  deadline for its request line (`--read-timeout`, 2 s), so a client that
  connects and says nothing, trickles a byte a second, or never reads its
  answer delays nobody; past `MAX_CONNECTIONS` connections still sending, the
  oldest is closed. Requests are answered one at a time on one worker thread
  (the engines are not thread-safe), never while a client is still talking.

A second `forgemem serve` for the same socket exits with code 1 and says which
server (pid) already serves it.
"""

from __future__ import annotations

import gc
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import cast

from forgemem import __version__
from forgemem.config import server_socket_path
from forgemem.errors import ForgememError
from forgemem.recall.protocol import (
    ANSWER_TIMEOUT,
    BACKLOG,
    IDLE_TIMEOUT,
    MAX_CONNECTIONS,
    MAX_REQUEST_BYTES,
    POLL,
    READ_TIMEOUT,
    BadRequest,
    Request,
    peer_problem,
    prepare_folder,
    say_once,
)


class Engines:
    """Recall engines by store pair, sharing one embedder per model."""

    def __init__(self, on_notice=None, watch: bool = False, lazy: bool = False):
        self.engines: dict[tuple, object] = {}
        self.embedders: dict[str, object] = {}
        self.config_warnings: dict[tuple, list[str]] = {}  # what each engine's config said when last read
        self.notice = on_notice
        self.watch = watch
        self.lazy = lazy  # one answer in this process: its engines read the cache on demand
        self.snapshot_changed = False

    def get(self, stores: dict[str, str], use_embeddings: bool):
        from forgemem.index.embedding import EmbeddingUnavailable, load_embedder
        from forgemem.recall.engine import RecallEngine
        from forgemem.store.folder import Store
        from forgemem.workspace import Workspace

        workspace = Workspace({scope: Store(scope, Path(folder)) for scope, folder in stores.items()})
        model = workspace.config.embedding_model
        key = (tuple(sorted(stores.items())), model, use_embeddings)
        engine = self.engines.get(key)
        if engine is None:
            embedder = None
            if use_embeddings:
                if model not in self.embedders:
                    try:
                        self.embedders[model] = load_embedder(model, on_export=self.notice)
                    except EmbeddingUnavailable:
                        self.embedders[model] = None
                embedder = self.embedders[model]
            engine = RecallEngine(workspace, use_embeddings=use_embeddings, embedder=embedder, lazy=self.lazy)
            if self.watch:
                engine.watch()
            self.engines[key] = engine
        else:  # the config files as they are now (recall_floor; a setting trusted, or no longer set, since)
            said, held = self.config_warnings.get(key, []), cast(RecallEngine, engine).workspace
            held.config = workspace.config
            held.warnings[:] = [*workspace.warnings, *(w for w in held.warnings if w not in said)]
        self.config_warnings[key] = list(workspace.warnings)
        return engine


def handle(request: dict | Request, engines: Engines, refresh: bool = True) -> dict:
    """Answer one request; used by the server and, in-process, by the CLI.

    A dict is checked first (`Request.parse`, shape only). `refresh=False` when
    the caller has just refreshed the engine itself.
    """
    from forgemem.errors import ForgememError
    from forgemem.recall.engine import log_recalls
    from forgemem.recall.rank import Query

    try:
        req = request if isinstance(request, Request) else Request.parse(request, strict=False)
    except BadRequest as exc:
        return {"ok": False, "error": f"bad request: {exc}"}
    try:
        engine = engines.get(req.stores, req.use_embeddings)
        if refresh and engine.refresh_if_changed():
            engines.snapshot_changed = True
        answers = []
        floors: list[float] = []
        below: list[int] = []
        notes: list[str] = list(engine.workspace.warnings)
        lexical_only = False
        for q in req.queries:
            floor = engine.workspace.config.recall_floor if q.floor is None else q.floor
            result = engine.recall(
                Query(text=q.text, k=q.k, scope=q.scope, category=q.category, tags=q.tags, hops=q.hops,
                      history=q.history, floor=floor),
                refresh=False,
            )
            answers.append(result.to_dicts())
            floors.append(floor)
            below.append(result.below_floor)
            if req.op == "recall" and req.log:
                log_recalls(engine, answers[-1][: q.k])
            lexical_only = result.lexical_only
            for note in result.notes:
                if note not in notes:
                    notes.append(note)
        if req.op == "context":
            from forgemem.recall.context import mark_gone, render
            from forgemem.store.folder import find_repo_root

            repo = engine.workspace.stores.get("repo")
            mark_gone(answers[0], find_repo_root(repo.memory_dir) if repo is not None and repo.exists() else None)

            block = render(answers[0], lexical_only, req.budget, engine.workspace.config.embedding_model,
                           skip=dict(req.skip), floor=floors[0])
            log_recalls(engine, [h for h in answers[0] if h["id"] in set(block.ids)])
            return {"ok": True, "lexical_only": lexical_only, "notes": notes, "floor": floors[0], **block.to_dict()}
        return {"ok": True, "lexical_only": lexical_only, "notes": notes, "results": answers, "floors": floors,
                "below_floor": below}
    except ForgememError as exc:
        return {"ok": False, "error": str(exc), "exit_code": exc.exit_code}


def answer_command(data: dict, engines: Engines, uid: int | None = None) -> dict:
    """A `forgemem recall QUERY` command line (op "recall-command"): the text the command prints for it, or a
    refusal where the client must run the command itself (`forgemem.recall.command`)."""
    from forgemem.recall.command import prepare, printout

    prepared = prepare(data, uid)
    if isinstance(prepared, dict):
        return prepared
    return printout(prepared, handle(prepared.request, engines))


def _log(message: str) -> None:
    """One line in the server's log (its stderr); each message once."""
    say_once(message, lambda m: print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} forgemem serve: {m}",
                                  file=sys.stderr, flush=True))


class AlreadyServing(ForgememError):
    """A second `forgemem serve` for a socket another server holds (exit code 1)."""


def serve(idle_timeout: float = IDLE_TIMEOUT, ready=None, read_timeout: float = READ_TIMEOUT) -> None:
    """Answer requests until idle for `idle_timeout` seconds or asked to stop.

    Raises AlreadyServing (naming its pid) when another server holds the socket.
    """
    path = server_socket_path()
    problem = prepare_folder(path)
    if problem:
        _log(f"not serving at {path}: {problem}")
        return
    lock = _single_instance(path)
    if lock is None:
        raise AlreadyServing(_holder_message(path))
    pid_file = path.with_suffix(".pid")
    if os.path.lexists(path):
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        from forgemem.permissions import atomic_write_text

        atomic_write_text(pid_file, f"{os.getpid()}\n", private=True)
        listener.bind(str(tmp))  # in a 0700 folder: nobody else can reach it before the chmod
        os.chmod(tmp, 0o600)
        listener.listen(BACKLOG)
        os.replace(tmp, path)  # clients only ever see a socket that is listening
        import asyncio

        asyncio.run(_Server(listener, idle_timeout, read_timeout).run(ready))
    finally:
        listener.close()
        tmp.unlink(missing_ok=True)
        path.unlink(missing_ok=True)  # ours: the lock keeps other servers out
        pid_file.unlink(missing_ok=True)
        lock.release()


class _Server:
    """One event loop reads every connection (each with its own deadline); `handle` runs on one worker thread.

    A connection costs a file descriptor and a coroutine while its request line
    arrives, so clients that stall, trickle or flood delay nobody: each is
    closed when its own `read_timeout` passes, and past `MAX_CONNECTIONS`
    connections still reading, the oldest of them is closed to make room. The
    engines are not thread-safe: requests are answered one after another on
    the worker thread, never while a client is still sending or reading.
    """

    def __init__(self, listener: socket.socket, idle_timeout: float, read_timeout: float):
        self.listener = listener
        self.idle_timeout = idle_timeout
        self.read_timeout = read_timeout
        self.engines = Engines(watch=True)
        self.active = 0
        self.reading: dict = {}  # task -> its writer, oldest first: connections whose request is not in yet
        self.last = time.monotonic()
        self.uid = os.getuid()

    async def run(self, ready=None) -> None:
        import asyncio
        from concurrent.futures import ThreadPoolExecutor

        self.stopping = asyncio.Event()
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="forgemem-recall")
        server = await asyncio.start_unix_server(self._connection, sock=self.listener,
                                                 limit=MAX_REQUEST_BYTES + 1, backlog=BACKLOG)
        if ready:
            ready()
        try:
            while not self.stopping.is_set():
                idle = time.monotonic() - self.last
                if self.active == 0 and idle >= self.idle_timeout:
                    return
                try:
                    await asyncio.wait_for(self.stopping.wait(), min(POLL, max(0.05, self.idle_timeout - idle)))
                except TimeoutError:
                    pass
        finally:
            server.close()
            self.worker.shutdown(wait=False, cancel_futures=True)

    async def _connection(self, reader, writer) -> None:
        import asyncio

        problem = peer_problem(writer.get_extra_info("socket"), self.uid)
        if problem:
            _log(f"refused a connection: {problem}")
            await self._send(writer, {"ok": False, "error": "refused: not this server's user"}, 0.1)
            writer.transport.abort()
            return
        task = asyncio.current_task()
        self.active += 1
        self.last = time.monotonic()
        while len(self.reading) >= MAX_CONNECTIONS:  # the oldest silent connection makes room
            oldest, oldest_writer = next(iter(self.reading.items()))
            del self.reading[oldest]
            oldest_writer.transport.abort()
            oldest.cancel()
        self.reading[task] = writer
        sent = False
        try:
            try:
                line = await asyncio.wait_for(reader.readline(), self.read_timeout)
            except ValueError:  # over the limit (asyncio's LimitOverrunError)
                reply, after = {"ok": False, "error": f"request longer than {MAX_REQUEST_BYTES} bytes"}, None
            except (TimeoutError, OSError):  # silent, slow or gone: nothing to answer
                return
            else:
                reply, after = await self._respond(line.rstrip(b"\n"))
            finally:
                self.reading.pop(task, None)
            if reply is None:
                return
            sent = await self._send(writer, reply, ANSWER_TIMEOUT)
            if after:
                await after()
        except asyncio.CancelledError:
            pass  # made room for a newer connection, or the server is stopping
        except Exception as exc:  # noqa: BLE001 - one connection never takes the server down
            _log(f"connection failed: {type(exc).__name__}: {exc}")
        finally:
            self.reading.pop(task, None)
            if sent:
                writer.close()
            else:
                writer.transport.abort()  # nothing owed: drop whatever is unsent or unread
            self.active -= 1
            self.last = time.monotonic()

    @staticmethod
    async def _send(writer, reply: dict, timeout: float) -> bool:
        """Write one answer line; False when the client did not take it within `timeout`."""
        import asyncio

        try:
            try:
                data = json.dumps(reply, ensure_ascii=False).encode()
            except UnicodeEncodeError:  # a lone surrogate (a command line that was not UTF-8): escaped, then
                data = json.dumps(reply).encode()
            writer.write(data + b"\n")
            await asyncio.wait_for(writer.drain(), timeout)
        except (TimeoutError, OSError):
            return False
        return True

    async def _respond(self, line: bytes):
        """The reply to one request line (None: say nothing), and what to do once it is sent."""
        import asyncio

        if not line.strip():
            return None, None
        try:
            data = json.loads(line.decode("utf-8"))
        except UnicodeDecodeError:
            return {"ok": False, "error": "a request is UTF-8 text"}, None
        except (ValueError, RecursionError):
            return {"ok": False, "error": "a request is one JSON object per line"}, None
        if not isinstance(data, dict):
            return {"ok": False, "error": "a request is a JSON object"}, None
        op = data.get("op")
        if op == "stop":
            return {"ok": True}, self._stop
        if op == "ping":
            return {"ok": True, "served_by": os.getpid()}, None
        if op not in ("recall", "context", "recall-command"):
            return {"ok": False, "error": f"unknown request {op!r}"[:200]}, None
        version = data.get("version")
        if not isinstance(version, str):
            return {"ok": False, "error": 'a request names its "version"'}, None
        if version != __version__:
            return {"ok": False, "restart": True}, self._stop  # a newer forgemem: step aside
        loop = asyncio.get_running_loop()
        if op == "recall-command":
            return await loop.run_in_executor(self.worker, self._answer, answer_command, data, self.uid), self._collect
        try:
            request = Request.parse(data, strict=True, uid=self.uid)
        except BadRequest as exc:
            return {"ok": False, "error": f"bad request: {exc}"[:2000]}, None
        reply = await loop.run_in_executor(self.worker, self._answer, handle, request)
        reply["served_by"] = os.getpid()
        return reply, self._collect

    def _answer(self, answer, request, *more) -> dict:
        """`answer(request, engines, *more)` on the worker thread; an unexpected error is a refusal, never the end
        of the server (the client reports it, or runs the command itself)."""
        try:
            return answer(request, self.engines, *more)
        except Exception as exc:  # noqa: BLE001 - keep serving
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}

    async def _collect(self) -> None:
        import asyncio

        await asyncio.get_running_loop().run_in_executor(self.worker, self._collect_now)

    def _collect_now(self) -> None:
        # After answering, not before: collect the old snapshot now and freeze
        # the new one, so later collections do not walk it mid-request.
        if self.engines.snapshot_changed:
            self.engines.snapshot_changed = False
            gc.unfreeze()
            gc.collect()
            gc.freeze()

    async def _stop(self) -> None:
        self.stopping.set()


def _holder_message(path: Path) -> str:
    """Why a second server does not start: who holds the socket."""
    try:
        pid = int(path.with_suffix(".pid").read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        pid = None
    who = f" (pid {pid})" if pid else ""
    return (f"another recall server already serves {path}{who}; not starting a second one "
            "(`forgemem serve --stop` stops it)")


def _single_instance(path: Path):
    from filelock import FileLock, Timeout

    lock = FileLock(str(path.with_suffix(".lock")))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return None
    return lock

