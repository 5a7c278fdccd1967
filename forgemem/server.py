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
"""

from __future__ import annotations

import gc
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from . import __version__

IDLE_TIMEOUT = 15 * 60
CONNECT_TIMEOUT = 0.05
ANSWER_TIMEOUT = 30.0


def socket_path() -> Path:
    override = os.environ.get("FORGEMEM_SERVER_SOCKET")
    if override:
        return Path(override)
    return Path.home() / ".forge" / "cache" / "recall-server.sock"


def enabled() -> bool:
    return os.environ.get("FORGEMEM_SERVER", "on").lower() not in ("off", "0", "no", "false")


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
        from .embedding import EmbeddingUnavailable, load_embedder
        from .engine import RecallEngine
        from .store import Store
        from .workspace import Workspace

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


def handle(request: dict, engines: Engines, refresh: bool = True) -> dict:
    """Answer one request; used by the server and, in-process, by the CLI.

    `refresh=False` when the caller has just refreshed the engine itself.
    """
    from .engine import log_recalls
    from .errors import ForgememError
    from .recall import Query

    try:
        if request.get("op") not in ("recall", "context"):
            return {"ok": False, "error": f"unknown request {request.get('op')!r}"}
        engine = engines.get(request["stores"], request.get("use_embeddings", True))
        if refresh and engine.refresh_if_changed():
            engines.snapshot_changed = True
        answers = []
        notes: list[str] = list(engine.workspace.warnings)
        lexical_only = False
        for q in request["queries"]:
            result = engine.recall(
                Query(
                    text=q["text"], k=q["k"], scope=q.get("scope"), category=q.get("category"),
                    tags=tuple(q.get("tags", ())), hops=q.get("hops", 1), history=q.get("history", False),
                ),
                refresh=False,
            )
            answers.append(result.to_dicts())
            if request["op"] == "recall" and request.get("log", True):
                log_recalls(engine, answers[-1][: q["k"]])
            lexical_only = result.lexical_only
            for note in result.notes:
                if note not in notes:
                    notes.append(note)
        if request["op"] == "context":
            from .context import render

            block = render(
                answers[0], lexical_only, request.get("budget", 1500), engine.workspace.config.embedding_model
            )
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
    answering here, for callers that may give up on the answer (hooks).
    """
    reply = ask(request, timeout=timeout) if use_server else None
    if reply is not None and not reply["ok"] and "exit_code" not in reply:
        reply = None  # the server failed in a way this process may not: do the work here
    if reply is None and use_server and start_first:
        start_in_background()
        use_server = False
    if reply is None:
        engines = Engines(on_notice=on_notice)
        engine = engines.get(request["stores"], request.get("use_embeddings", True))
        (prepare or (lambda e: e.refresh()))(engine)
        reply = handle(request, engines, refresh=False)
        if use_server:
            start_in_background()
    return reply



def ask(request: dict, timeout: float = ANSWER_TIMEOUT) -> dict | None:
    """The server's answer, or None when no (compatible) server answers."""
    if not enabled():
        return None
    path = socket_path()
    if not path.exists():
        return None
    request = {**request, "version": __version__}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(CONNECT_TIMEOUT)
            sock.connect(str(path))
            sock.settimeout(timeout)
            sock.sendall(json.dumps(request).encode() + b"\n")
            data = _read_line(sock)
    except OSError:
        return None
    if not data:
        return None
    answer = json.loads(data)
    if answer.get("restart"):
        return None  # an older server: it exits, and this call runs in-process
    return answer


def _read_line(sock: socket.socket) -> bytes:
    chunks = []
    while True:
        chunk = sock.recv(1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    return b"".join(chunks)


def start_in_background() -> None:
    """Start a server for the next recall; never fails the current command."""
    if not enabled():
        return
    path = socket_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        log = open(path.with_suffix(".log"), "ab")
        subprocess.Popen(
            [sys.executable, "-m", "forgemem", "serve", "--idle-timeout", str(IDLE_TIMEOUT)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True, close_fds=True,
        )
    except OSError:
        pass


def stop() -> bool:
    """Ask a running server to exit; True if one was running."""
    path = socket_path()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(1.0)
            sock.connect(str(path))
            sock.sendall(b'{"op": "stop"}\n')
            _read_line(sock)
        return True
    except OSError:
        return False


# ------------------------------------------------------------------ server


def serve(idle_timeout: float = IDLE_TIMEOUT, ready=None) -> None:
    """Answer requests until idle for `idle_timeout` seconds or asked to stop."""
    path = socket_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = _single_instance(path)
    if lock is None:
        return  # another server is starting or running
    if path.exists():
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    listener.bind(str(tmp))
    os.chmod(tmp, 0o600)
    listener.listen(16)
    os.replace(tmp, path)  # clients only ever see a socket that is listening
    engines = Engines(watch=True)
    last = time.monotonic()
    if ready:
        ready()
    try:
        while True:
            listener.settimeout(max(0.1, idle_timeout - (time.monotonic() - last)))
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                if time.monotonic() - last >= idle_timeout:
                    return
                continue
            last = time.monotonic()
            with conn:
                conn.settimeout(ANSWER_TIMEOUT)
                try:
                    request = json.loads(_read_line(conn) or b"{}")
                except (OSError, ValueError):
                    continue
                if request.get("op") == "stop":
                    conn.sendall(b'{"ok": true}\n')
                    return
                if request.get("op") == "ping":
                    conn.sendall(json.dumps({"ok": True, "served_by": os.getpid()}).encode() + b"\n")
                    continue
                if request.get("version") != __version__:
                    conn.sendall(b'{"ok": false, "restart": true}\n')
                    return
                try:
                    answer = handle(request, engines)
                except Exception as exc:  # keep serving; the client reports it
                    answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
                answer["served_by"] = os.getpid()
                try:
                    conn.sendall(json.dumps(answer, ensure_ascii=False).encode() + b"\n")
                except OSError:
                    pass
            if engines.snapshot_changed:
                # After answering, not before: collect the old snapshot now and freeze
                # the new one, so later collections do not walk it mid-request.
                engines.snapshot_changed = False
                gc.unfreeze()
                gc.collect()
                gc.freeze()
    finally:
        listener.close()
        path.unlink(missing_ok=True)  # ours: the lock keeps other servers out
        lock.release()


def _single_instance(path: Path):
    from filelock import FileLock, Timeout

    lock = FileLock(str(path.with_suffix(".lock")))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return None
    return lock
