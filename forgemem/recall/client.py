"""The recall server's client: ask the server, or do the work here and start one for next time.

`answer` is what the CLI, the hooks and `/memory` call: it asks a running server
(trusted, see `protocol`), and when none answers, answers in this process with
the same `server.handle` and starts a server in the background (`forgemem.spawn`:
a safe import path, never the project folder).
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from forgemem import __version__
from forgemem.config import server_enabled, server_socket_path
from forgemem.recall.protocol import (
    ANSWER_TIMEOUT,
    CONNECT_TIMEOUT,
    IDLE_TIMEOUT,
    MAX_ANSWER_BYTES,
    BadRequest,
    LineTooLong,
    Request,
    answer_problem,
    peer_problem,
    prepare_folder,
    read_line,
    request_problem,
    say_once,
    socket_problem,
)
from forgemem.recall.server import Engines, handle


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
    use_server = use_server and server_enabled() and request_problem(request) is None
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
        # one query: read from the cache what it uses; a batch loads the whole snapshot once
        engines = Engines(on_notice=on_notice, lazy=len(parsed.queries) == 1)
        engine = engines.get(parsed.stores, parsed.use_embeddings)
        (prepare or (lambda e: e.refresh()))(engine)
        reply = handle(parsed, engines, refresh=False)
        if use_server:
            start_in_background(on_notice)
    return reply


def ask(request: dict, timeout: float = ANSWER_TIMEOUT, on_notice=None) -> dict | None:
    """The server's answer, or None when no (trusted, compatible) server answers."""
    if not server_enabled():
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
    path = server_socket_path()
    if not os.path.lexists(path):
        return None
    op = request.get("op")
    try:
        with _connect(path, CONNECT_TIMEOUT) as sock:
            sock.settimeout(timeout)
            sock.sendall(json.dumps({**request, "version": __version__}).encode() + b"\n")
            data = read_line(sock, MAX_ANSWER_BYTES)
    except _Untrusted as exc:
        say_once(f"not using the recall server at {path}: {exc}", on_notice)
        return None
    except LineTooLong:
        say_once(f"not using the recall server at {path}: its answer is longer than {MAX_ANSWER_BYTES} bytes", on_notice)
        return None
    except OSError:
        return None
    if not data:
        return None
    try:
        reply = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        say_once(f"not using the recall server at {path}: its answer is not JSON", on_notice)
        return None
    problem = answer_problem(reply, op)
    if problem:
        say_once(f"not using the recall server at {path}: {problem}", on_notice)
        return None
    if reply.get("restart"):
        return None  # an older server: it exits, and this call runs in-process
    return reply




def start_in_background(on_notice=None) -> None:
    """Start a server for the next recall; never fails the current command.

    The server runs as `python -P -m forgemem serve` in a private folder
    (`forgemem.spawn`): nothing from the current folder is imported. It logs
    to `recall-server.log` beside the socket (private).
    """
    if not server_enabled():
        return
    path = server_socket_path()
    problem = prepare_folder(path)
    if problem:
        say_once(f"not starting a recall server at {path}: {problem}", on_notice)
        return
    from forgemem.spawn import start_detached

    try:
        start_detached(["serve", "--idle-timeout", str(IDLE_TIMEOUT)], log_path=path.with_suffix(".log"))
    except OSError:
        pass


def stop() -> bool:
    """Ask a running server to exit; True if one was running."""
    path = server_socket_path()
    try:
        with _connect(path, 1.0) as sock:
            sock.sendall(b'{"op": "stop"}\n')
            read_line(sock, MAX_ANSWER_BYTES)
        return True
    except (OSError, _Untrusted, LineTooLong):
        return False

