"""The recall server's client: ask the server, or do the work here and start one for next time.

`answer` is what the CLI, the hooks and `/memory` call: it asks a running server
(trusted, see `protocol`), and when none answers, answers in this process with
the same `server.handle` and starts a server in the background (`forgemem.spawn`:
a safe import path, never the project folder).
"""

from __future__ import annotations

from forgemem.config import embeddings_disabled, server_enabled, server_socket_path
from forgemem.recall.protocol import (
    ANSWER_TIMEOUT,
    IDLE_TIMEOUT,
    MAX_ANSWER_BYTES,
    BadRequest,
    LineTooLong,
    Request,
    answer_problem,
    prepare_folder,
    read_line,
    request_problem,
    say_once,
    store_dirs,
)
from forgemem.recall.server import Engines, handle
from forgemem.recall.wire import Untrusted, connect, exchange


def query_request(workspace, op: str, text: str, k: int | None = None, budget: int | None = None) -> dict:
    """A one-query request with the workspace's settings: op "recall" (hits) or "context" (the block)."""
    config = workspace.config
    request = {
        "op": op,
        "stores": store_dirs(workspace),
        "use_embeddings": not embeddings_disabled(),  # this process's environment decides, not the server's
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
    reply = exchange(request, timeout, answer_problem, on_notice) if use_server else None
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
    return exchange(request, timeout, answer_problem, on_notice)


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
        with connect(path, 1.0) as sock:
            sock.sendall(b'{"op": "stop"}\n')
            read_line(sock, MAX_ANSWER_BYTES)
        return True
    except (OSError, Untrusted, LineTooLong):
        return False

