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

Protocol: one JSON object per line each way. A request is
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
import stat
import struct
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from forgemem import __version__
from forgemem.config import MEMORY_DIR, server_enabled, server_socket_path
from forgemem.permissions import private_dir, unsafe_reason, unsafe_stat_reason
from forgemem.store.model import SCOPES

IDLE_TIMEOUT = 15 * 60
CONNECT_TIMEOUT = 0.05
ANSWER_TIMEOUT = 30.0
READ_TIMEOUT = 2.0  # the server's wait for a connection's request line
MAX_REQUEST_BYTES = 1 << 20
MAX_ANSWER_BYTES = 64 << 20
MAX_QUERIES = 100
MAX_K = 1000
MAX_HOPS = 5
MAX_BUDGET = 100_000
MAX_CONNECTIONS = 32  # requests being read or answered at once; more are closed at once
POLL = 0.5  # how often the accept loop looks at the clock and the stop flag
socket_path = server_socket_path
enabled = server_enabled


# ------------------------------------------------------------------ trust


def store_problem(folder: object, uid: int | None = None) -> str | None:
    """Why `folder` is not a memory folder the server may serve to `uid` (None: it is).

    A store is an absolute, normalised path to an existing folder named
    `memory`, owned by `uid` and not writable by others, inside a folder (its
    `.forge`, where the cache goes) that is also owned by `uid` and not
    writable by others. The server refuses other stores; the client does not
    ask for them (it works in-process instead).
    """
    if not isinstance(folder, str) or not folder:
        return f"a store must be a path, not {folder!r}"
    if "\0" in folder or not os.path.isabs(folder) or os.path.normpath(folder) != folder:
        return f"{folder!r} is not an absolute, normalised path"
    if os.path.basename(folder) != MEMORY_DIR:
        return f"{folder} is not a memory folder (named {MEMORY_DIR!r})"
    try:
        st = os.stat(folder)
    except OSError as exc:
        return f"{folder}: {exc.strerror}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{folder} is not a folder"
    reason = unsafe_stat_reason(st, uid)
    if reason:
        return f"{folder}: {reason}"
    parent = os.path.dirname(folder)
    reason = unsafe_reason(Path(parent), uid)
    if reason:
        return f"{parent}: {reason}"
    return None


def socket_problem(path: Path, st: os.stat_result | None = None, folder_st: os.stat_result | None = None,
                   uid: int | None = None) -> str | None:
    """Why the client must not talk to the socket at `path` (None: it may).

    It must be a socket (not a link to one) owned by `uid` (this user), in a
    folder owned by `uid` that other users cannot write to (so nobody else can
    have put it there). `st` / `folder_st`: stat results already at hand.
    """
    uid = os.getuid() if uid is None else uid
    try:
        st = os.lstat(path) if st is None else st
        folder_st = os.stat(path.parent) if folder_st is None else folder_st
    except OSError as exc:
        return f"cannot read it ({exc.strerror})"
    if not stat.S_ISSOCK(st.st_mode):
        return "it is not a socket"
    if st.st_uid != uid:
        return f"the socket belongs to another user (uid {st.st_uid})"
    reason = unsafe_stat_reason(folder_st, uid)
    if reason:
        return f"its folder {path.parent}: {reason}"
    return None


class PeerUnknown(Exception):
    """This platform cannot tell who is at the other end of a Unix socket."""


def peer_uid(sock: socket.socket) -> int:
    """The user id of the process at the other end of a connected Unix socket.

    Linux: `SO_PEERCRED`; macOS and the BSDs: `LOCAL_PEERCRED` (getpeereid's
    source). Raises OSError if the system refuses, PeerUnknown where neither exists.
    """
    if hasattr(socket, "SO_PEERCRED"):
        data = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("iII", data)[1]  # struct ucred: pid, uid, gid
    if sys.platform == "darwin" or "bsd" in sys.platform:
        sol_local, local_peercred = 0, getattr(socket, "LOCAL_PEERCRED", 1)
        data = sock.getsockopt(sol_local, local_peercred, 256)
        return struct.unpack_from("=II", data)[1]  # struct xucred: version, uid, ...
    raise PeerUnknown


def peer_problem(sock: socket.socket, uid: int | None = None) -> str | None:
    """Why the process at the other end of `sock` is not to be talked to (None: it is this user's).

    Where the platform cannot tell, the folder and socket modes (0700, 0600)
    are what keeps other users out, and this says nothing.
    """
    uid = os.getuid() if uid is None else uid
    try:
        other = peer_uid(sock)
    except PeerUnknown:
        return None
    except OSError as exc:
        return f"cannot tell who is at the other end ({exc.strerror or exc})"
    if other != uid:
        return f"the process at the other end belongs to another user (uid {other})"
    return None


_said: set[str] = set()


def _say(message: str, on_notice=None) -> None:
    """Say `message` once per process (to `on_notice`: the hook log, the CLI's warnings, the server log)."""
    if message in _said:
        return
    _said.add(message)
    if on_notice is not None:
        try:
            on_notice(message)
        except Exception:  # noqa: BLE001 - a notice never fails a recall
            pass


# ------------------------------------------------------------------ requests


class BadRequest(ValueError):
    """A request that does not have the protocol's shape."""


@dataclass(frozen=True)
class QuerySpec:
    text: str
    k: int
    scope: str | None = None
    category: str | None = None
    tags: tuple[str, ...] = ()
    hops: int = 1
    history: bool = False


@dataclass(frozen=True)
class Request:
    """A recall or context request, checked: what `handle` works from.

    `parse(..., strict=True)` is what the server accepts (and what the client
    asks it for): sizes capped and stores checked with `store_problem`.
    `strict=False` checks only the shape, for in-process answers (batches of
    any size, any store the CLI was pointed at).
    """

    op: str
    stores: dict[str, str]
    queries: tuple[QuerySpec, ...]
    use_embeddings: bool = True
    log: bool = True
    budget: int = 1500

    @classmethod
    def parse(cls, data: object, strict: bool = True, uid: int | None = None) -> Request:
        if not isinstance(data, dict):
            raise BadRequest("a request is a JSON object")
        op = data.get("op")
        if op not in ("recall", "context"):
            raise BadRequest(f"unknown request {op!r}")
        stores = data.get("stores")
        if not isinstance(stores, dict):
            raise BadRequest('"stores" must be an object of scope -> folder')
        for scope, folder in stores.items():
            if scope not in SCOPES:
                raise BadRequest(f"unknown scope {scope!r} in \"stores\" (expected repo or user)")
            if not isinstance(folder, str):
                raise BadRequest(f'"stores"."{scope}" must be a path')
            if strict:
                problem = store_problem(folder, uid)
                if problem:
                    raise BadRequest(f"not serving store {scope!r}: {problem}")
        queries = data.get("queries")
        if not isinstance(queries, list):
            raise BadRequest('"queries" must be a list')
        if strict and len(queries) > MAX_QUERIES:
            raise BadRequest(f"at most {MAX_QUERIES} queries per request, not {len(queries)}")
        if op == "context" and len(queries) != 1:
            raise BadRequest('a context request has exactly one query')
        budget = _int(data, "budget", 1500, 0, MAX_BUDGET if strict else None)
        return cls(
            op=op,
            stores=dict(stores),
            queries=tuple(_query(q, n, strict) for n, q in enumerate(queries)),
            use_embeddings=_bool(data, "use_embeddings", True),
            log=_bool(data, "log", True),
            budget=budget,
        )


def _query(q: object, n: int, strict: bool) -> QuerySpec:
    where = f"queries[{n}]"
    if not isinstance(q, dict):
        raise BadRequest(f"{where} must be an object")
    text = q.get("text")
    if not isinstance(text, str):
        raise BadRequest(f'{where}."text" must be a string')
    scope = q.get("scope")
    if scope is not None and scope not in SCOPES:
        raise BadRequest(f'{where}."scope" must be repo, user or null, not {scope!r}')
    category = q.get("category")
    if category is not None:
        from forgemem.store.model import CATEGORIES

        if category not in CATEGORIES:
            raise BadRequest(f'{where}."category" {category!r} is not a category')
    tags = q.get("tags", ())
    if not isinstance(tags, (list, tuple)) or not all(isinstance(t, str) for t in tags):
        raise BadRequest(f'{where}."tags" must be a list of strings')
    return QuerySpec(
        text=text,
        k=_int(q, "k", None, 1, MAX_K if strict else None, where),
        scope=scope,
        category=category,
        tags=tuple(tags),
        hops=_int(q, "hops", 1, 0, MAX_HOPS, where),
        history=_bool(q, "history", False, where),
    )


def _int(data: dict, key: str, default: int | None, low: int, high: int | None, where: str = "") -> int:
    value = data.get(key, default)
    name = f'{where}."{key}"' if where else f'"{key}"'
    if value is None and default is None:
        raise BadRequest(f"{name} is missing")
    if not isinstance(value, int) or isinstance(value, bool) or value < low or (high is not None and value > high):
        span = f"from {low} to {high}" if high is not None else f"from {low} up"
        raise BadRequest(f"{name} must be a whole number {span}, not {value!r}")
    return value


def _bool(data: dict, key: str, default: bool, where: str = "") -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise BadRequest(f'{where + "." if where else ""}"{key}" must be true or false, not {value!r}')
    return value


def request_problem(request: dict) -> str | None:
    """Why the server would refuse `request` (None: it may be asked)."""
    try:
        Request.parse(request, strict=True)
    except BadRequest as exc:
        return str(exc)
    return None


# ------------------------------------------------------------------ handling


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


# ------------------------------------------------------------------ client


def store_dirs(workspace) -> dict[str, str]:
    """A workspace's stores as requests name them: scope -> folder, for the folders that exist."""
    return {scope: str(store.memory_dir) for scope, store in workspace.stores.items() if store.exists()}


def query_request(workspace, op: str, text: str, k: int | None = None, budget: int | None = None) -> dict:
    """A one-query request with the workspace's settings: op "recall" (hits) or "context" (the block)."""
    config = workspace.config
    request = {
        "op": op,
        "stores": store_dirs(workspace),
        "use_embeddings": True,
        "queries": [{"text": text, "k": k or config.retrieval_top_k, "hops": config.retrieval_hop_depth}],
    }
    if op == "context":
        request["budget"] = config.context_budget_tokens if budget is None else budget
    return request


def answer(request: dict, prepare=None, use_server: bool = True, on_notice=None,
           timeout: float = ANSWER_TIMEOUT, start_first: bool = False) -> dict:
    """Ask the running server; failing that, answer in this process and start a server for next time.

    `prepare(engine)` runs before an in-process answer (the CLI shows a progress
    bar for a first index build there). `start_first` starts the server before
    answering here, for callers that may give up on the answer (hooks). A
    request the server would refuse (a store that is not a memory folder of
    this user's, a batch too big) is answered here without asking.
    """
    use_server = use_server and enabled() and request_problem(request) is None
    reply = _exchange(request, timeout, on_notice) if use_server else None
    if reply is not None and not reply["ok"] and "exit_code" not in reply:
        reply = None  # the server failed in a way this process may not: do the work here
    if reply is None and use_server and start_first:
        start_in_background(on_notice)
        use_server = False
    if reply is None:
        try:
            parsed = Request.parse(request, strict=False)
        except BadRequest as exc:
            return {"ok": False, "error": f"bad request: {exc}"}
        engines = Engines(on_notice=on_notice)
        engine = engines.get(parsed.stores, parsed.use_embeddings)
        (prepare or (lambda e: e.refresh()))(engine)
        reply = handle(parsed, engines, refresh=False)
        if use_server:
            start_in_background(on_notice)
    return reply


def ask(request: dict, timeout: float = ANSWER_TIMEOUT, on_notice=None) -> dict | None:
    """The server's answer, or None when no (trusted, compatible) server answers."""
    if not enabled():
        return None
    if request.get("op") in ("recall", "context") and request_problem(request) is not None:
        return None
    return _exchange(request, timeout, on_notice)


class _Untrusted(Exception):
    pass


def _connect(path: Path, timeout: float) -> socket.socket:
    """A connection to the server at `path`, checked both ways; raises OSError or _Untrusted."""
    problem = socket_problem(path, os.lstat(path))  # no socket (any more): OSError, no server
    if problem:
        raise _Untrusted(problem)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(str(path))
        problem = peer_problem(sock)
        if problem:
            raise _Untrusted(problem)
    except BaseException:
        sock.close()
        raise
    return sock


def _exchange(request: dict, timeout: float, on_notice=None) -> dict | None:
    path = socket_path()
    if not os.path.lexists(path):
        return None
    op = request.get("op")
    try:
        with _connect(path, CONNECT_TIMEOUT) as sock:
            sock.settimeout(timeout)
            sock.sendall(json.dumps({**request, "version": __version__}).encode() + b"\n")
            data = _read_line(sock, MAX_ANSWER_BYTES)
    except _Untrusted as exc:
        _say(f"not using the recall server at {path}: {exc}", on_notice)
        return None
    except _TooLong:
        _say(f"not using the recall server at {path}: its answer is longer than {MAX_ANSWER_BYTES} bytes", on_notice)
        return None
    except OSError:
        return None
    if not data:
        return None
    try:
        reply = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        _say(f"not using the recall server at {path}: its answer is not JSON", on_notice)
        return None
    problem = answer_problem(reply, op)
    if problem:
        _say(f"not using the recall server at {path}: {problem}", on_notice)
        return None
    if reply.get("restart"):
        return None  # an older server: it exits, and this call runs in-process
    return reply


def answer_problem(reply: object, op: object) -> str | None:
    """Why a server's answer does not have the shape callers rely on (None: it does)."""
    if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
        return "its answer is not an object with \"ok\""
    if reply.get("restart") is True:
        return None
    if not reply["ok"]:
        if not isinstance(reply.get("error"), str):
            return "its refusal has no \"error\" text"
        if "exit_code" in reply and (not isinstance(reply["exit_code"], int) or isinstance(reply["exit_code"], bool)):
            return "its \"exit_code\" is not a number"
        return None
    if op in ("recall", "context"):
        if not isinstance(reply.get("notes"), list) or not all(isinstance(n, str) for n in reply["notes"]):
            return "its answer has no list of notes"
        if not isinstance(reply.get("lexical_only"), bool):
            return "its answer has no \"lexical_only\""
    if op == "recall":
        results = reply.get("results")
        if not (isinstance(results, list)
                and all(isinstance(hits, list) and all(isinstance(h, dict) for h in hits) for hits in results)):
            return "its answer has no list of results"
    if op == "context":
        if not isinstance(reply.get("context"), str) or not isinstance(reply.get("ids"), list) \
                or not isinstance(reply.get("tokens"), int):
            return "its answer has no context block"
    return None


class _TooLong(Exception):
    pass


def _read_line(sock: socket.socket, limit: int, deadline: float | None = None) -> bytes:
    """One line (without its newline) of at most `limit` bytes; everything up to EOF if there is no newline.

    Raises _TooLong past `limit`, TimeoutError when `deadline` (monotonic) passes first.
    """
    data = bytearray()
    while True:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no request line in time")
            sock.settimeout(left)
        chunk = sock.recv(1 << 16)
        if not chunk:
            break
        end = chunk.find(b"\n")
        if end >= 0:
            data += chunk[:end]
            break
        data += chunk
        if len(data) > limit:
            raise _TooLong
    if len(data) > limit:
        raise _TooLong
    return bytes(data)


def _prepare_folder(path: Path) -> str | None:
    """Make the socket's folder private (0700, created if missing); why it cannot be used, if so."""
    folder = path.parent
    reason = unsafe_reason(folder) if folder.exists() else None
    if reason is None:
        try:
            private_dir(folder)
        except OSError as exc:
            return f"cannot create {folder} ({exc.strerror})"
        reason = unsafe_reason(folder)
    return f"its folder {folder}: {reason}" if reason else None


def start_in_background(on_notice=None) -> None:
    """Start a server for the next recall; never fails the current command.

    The server runs as `python -P -m forgemem serve` in a private folder
    (`forgemem.spawn`): nothing from the current folder is imported. It logs
    to `recall-server.log` beside the socket (private).
    """
    if not enabled():
        return
    path = socket_path()
    problem = _prepare_folder(path)
    if problem:
        _say(f"not starting a recall server at {path}: {problem}", on_notice)
        return
    from forgemem.spawn import start_detached

    try:
        start_detached(["serve", "--idle-timeout", str(IDLE_TIMEOUT)], log_path=path.with_suffix(".log"))
    except OSError:
        pass


def stop() -> bool:
    """Ask a running server to exit; True if one was running."""
    path = socket_path()
    try:
        with _connect(path, 1.0) as sock:
            sock.sendall(b'{"op": "stop"}\n')
            _read_line(sock, MAX_ANSWER_BYTES)
        return True
    except (OSError, _Untrusted, _TooLong):
        return False


# ------------------------------------------------------------------ server


def _log(message: str) -> None:
    """One line in the server's log (its stderr); each message once."""
    _say(message, lambda m: print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} forgemem serve: {m}",
                                  file=sys.stderr, flush=True))


def serve(idle_timeout: float = IDLE_TIMEOUT, ready=None) -> None:
    """Answer requests until idle for `idle_timeout` seconds or asked to stop."""
    path = socket_path()
    problem = _prepare_folder(path)
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
                    line = _read_line(conn, MAX_REQUEST_BYTES, deadline=time.monotonic() + READ_TIMEOUT)
                except _TooLong:
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
