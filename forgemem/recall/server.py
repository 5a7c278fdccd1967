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
"hops", "history"}]}`; the answer is `{"ok": true, "lexical_only": ...,
"notes": [...], "results": [[hit, ...], ...]}` or `{"ok": false, "error": ...}`.
`{"op": "context", ..., "queries": [one query], "budget": N}` answers with the
rendered block instead (`forgemem.context`): `{"ok": true, "context", "tokens",
"ids", "left_out", ...}`.
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
- each connection is read on its own thread with a short timeout, so a client
  that connects and says nothing delays nobody; requests are answered one at a
  time under a lock (the engines are not thread-safe).
"""

from __future__ import annotations

import gc
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

from forgemem import __version__
from forgemem.config import server_socket_path
from forgemem.recall.protocol import (
    ANSWER_TIMEOUT,
    IDLE_TIMEOUT,
    MAX_CONNECTIONS,
    MAX_REQUEST_BYTES,
    POLL,
    READ_TIMEOUT,
    BadRequest,
    LineTooLong,
    Request,
    peer_problem,
    prepare_folder,
    read_line,
    say_once,
)


class Engines:
    """Recall engines by store pair, sharing one embedder per model."""

    def __init__(self, on_notice=None, watch: bool = False):
        self.engines: dict[tuple, object] = {}
        self.embedders: dict[str, object] = {}
        self.notice = on_notice
        self.watch = watch
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
            engine = RecallEngine(workspace, use_embeddings=use_embeddings, embedder=embedder)
            if self.watch:
                engine.watch()
            self.engines[key] = engine
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
        notes: list[str] = list(engine.workspace.warnings)
        lexical_only = False
        for q in req.queries:
            result = engine.recall(
                Query(text=q.text, k=q.k, scope=q.scope, category=q.category, tags=q.tags, hops=q.hops,
                      history=q.history),
                refresh=False,
            )
            answers.append(result.to_dicts())
            if req.op == "recall" and req.log:
                log_recalls(engine, answers[-1][: q.k])
            lexical_only = result.lexical_only
            for note in result.notes:
                if note not in notes:
                    notes.append(note)
        if req.op == "context":
            from forgemem.recall.context import render

            block = render(answers[0], lexical_only, req.budget, engine.workspace.config.embedding_model)
            log_recalls(engine, [h for h in answers[0] if h["id"] in set(block.ids)])
            return {"ok": True, "lexical_only": lexical_only, "notes": notes, **block.to_dict()}
        return {"ok": True, "lexical_only": lexical_only, "notes": notes, "results": answers}
    except ForgememError as exc:
        return {"ok": False, "error": str(exc), "exit_code": exc.exit_code}


def _log(message: str) -> None:
    """One line in the server's log (its stderr); each message once."""
    say_once(message, lambda m: print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} forgemem serve: {m}",
                                  file=sys.stderr, flush=True))


def serve(idle_timeout: float = IDLE_TIMEOUT, ready=None) -> None:
    """Answer requests until idle for `idle_timeout` seconds or asked to stop."""
    path = server_socket_path()
    problem = prepare_folder(path)
    if problem:
        _log(f"not serving at {path}: {problem}")
        return
    lock = _single_instance(path)
    if lock is None:
        return  # another server is starting or running
    if os.path.lexists(path):
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        listener.bind(str(tmp))  # in a 0700 folder: nobody else can reach it before the chmod
        os.chmod(tmp, 0o600)
        listener.listen(16)
        os.replace(tmp, path)  # clients only ever see a socket that is listening
        server = _Server(listener, idle_timeout)
        if ready:
            ready()
        server.run()
    finally:
        listener.close()
        tmp.unlink(missing_ok=True)
        path.unlink(missing_ok=True)  # ours: the lock keeps other servers out
        lock.release()


class _Server:
    """The accept loop (main thread) and one thread per connection; `handle` runs under one lock."""

    def __init__(self, listener: socket.socket, idle_timeout: float):
        self.listener = listener
        self.idle_timeout = idle_timeout
        self.engines = Engines(watch=True)
        self.engine_lock = threading.Lock()
        self.state_lock = threading.Lock()
        self.active = 0
        self.last = time.monotonic()
        self.stopping = threading.Event()
        self.uid = os.getuid()

    def run(self) -> None:
        while not self.stopping.is_set():
            with self.state_lock:
                idle = time.monotonic() - self.last
                if idle >= self.idle_timeout and self.active == 0:
                    return
            self.listener.settimeout(min(POLL, max(0.05, self.idle_timeout - idle)))
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if self.stopping.is_set():
                    return
                time.sleep(0.05)
                continue
            problem = peer_problem(conn, self.uid)
            if problem:
                _log(f"refused a connection: {problem}")
                self._refuse(conn, "refused: not this server's user")
                continue
            with self.state_lock:
                self.last = time.monotonic()
                if self.active >= MAX_CONNECTIONS:
                    busy = True
                else:
                    busy = False
                    self.active += 1
            if busy:
                self._refuse(conn, "busy")
                continue
            try:
                threading.Thread(target=self._connection, args=(conn,), daemon=True).start()
            except RuntimeError:
                with self.state_lock:
                    self.active -= 1
                conn.close()

    @staticmethod
    def _refuse(conn: socket.socket, error: str) -> None:
        with conn:
            try:
                conn.settimeout(0.1)
                conn.sendall(json.dumps({"ok": False, "error": error}).encode() + b"\n")
            except OSError:
                pass

    def _connection(self, conn: socket.socket) -> None:
        try:
            with conn:
                try:
                    line = read_line(conn, MAX_REQUEST_BYTES, deadline=time.monotonic() + READ_TIMEOUT)
                except LineTooLong:
                    reply, after = {"ok": False, "error": f"request longer than {MAX_REQUEST_BYTES} bytes"}, None
                except OSError:  # silent, slow or gone: nothing to answer
                    return
                else:
                    reply, after = self._respond(line)
                if reply is None:
                    return
                try:
                    conn.settimeout(ANSWER_TIMEOUT)
                    conn.sendall(json.dumps(reply, ensure_ascii=False).encode() + b"\n")
                except OSError:
                    pass
                if after:
                    after()
        except Exception as exc:  # noqa: BLE001 - one connection never takes the server down
            _log(f"connection failed: {type(exc).__name__}: {exc}")
        finally:
            with self.state_lock:
                self.active -= 1
                self.last = time.monotonic()

    def _respond(self, line: bytes):
        """The reply to one request line (None: say nothing), and what to do once it is sent."""
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
        if op not in ("recall", "context"):
            return {"ok": False, "error": f"unknown request {op!r}"[:200]}, None
        version = data.get("version")
        if not isinstance(version, str):
            return {"ok": False, "error": 'a request names its "version"'}, None
        if version != __version__:
            return {"ok": False, "restart": True}, self._stop  # a newer forgemem: step aside
        try:
            request = Request.parse(data, strict=True, uid=self.uid)
        except BadRequest as exc:
            return {"ok": False, "error": f"bad request: {exc}"[:2000]}, None
        with self.engine_lock:
            try:
                reply = handle(request, self.engines)
            except Exception as exc:  # noqa: BLE001 - keep serving; the client reports it
                reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        reply["served_by"] = os.getpid()
        return reply, self._collect

    def _collect(self) -> None:
        # After answering, not before: collect the old snapshot now and freeze
        # the new one, so later collections do not walk it mid-request.
        with self.engine_lock:
            if self.engines.snapshot_changed:
                self.engines.snapshot_changed = False
                gc.unfreeze()
                gc.collect()
                gc.freeze()

    def _stop(self) -> None:
        self.stopping.set()
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept loop (Linux)
        except OSError:
            pass


def _single_instance(path: Path):
    from filelock import FileLock, Timeout

    lock = FileLock(str(path.with_suffix(".lock")))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return None
    return lock

