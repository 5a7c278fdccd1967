"""The recall server's protocol: what a request and an answer may be, and who may talk.

One JSON object per line each way. A request is `{"op": "recall", "version": ...,
"stores": {"repo": DIR, "user": DIR}, "use_embeddings": ..., "queries": [{"text",
"k", "scope", "category", "tags", "hops", "history", "floor"}]}` (`floor`: the relevance
under which hits are left out, 0–1; absent: the stores' `recall_floor`); the answer is
`{"ok": true, "lexical_only": ..., "notes": [...], "results": [[hit, ...], ...],
"floors": [...], "below_floor": [...]}` (per query: the floor used, and how many of the
top k it left out) or `{"ok": false, "error": ...}`. `{"op": "context", ..., "queries": [one query], "budget": N}`
answers with the rendered block instead: `{"ok": true, "context", "tokens", "ids",
"left_out", ...}`. Every request is parsed into a `Request` (types, ranges, sizes)
before it is used; every answer is checked by `answer_problem` before it is believed.

Who may talk: a socket that is a socket, owned by this user, in a folder of this
user's that others cannot write to, served by a process of this user
(`SO_PEERCRED`), both ways; a store is served only when it is a memory folder of
the requesting user (`store_problem`).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from forgemem.config import MEMORY_DIR, server_socket_path
from forgemem.permissions import private_dir, unsafe_reason, unsafe_stat_reason
from forgemem.recall.wire import (  # noqa: F401 - who may talk, one line each way: used from here
    ANSWER_TIMEOUT,
    CONNECT_TIMEOUT,
    MAX_ANSWER_BYTES,
    LineTooLong,
    PeerUnknown,
    peer_problem,
    peer_uid,
    read_line,
    say_once,
    socket_problem,
)
from forgemem.store.model import SCOPES

IDLE_TIMEOUT = 15 * 60
READ_TIMEOUT = 2.0  # the server's wait for a connection's request line
MAX_REQUEST_BYTES = 1 << 20
MAX_QUERIES = 100
MAX_K = 1000
MAX_HOPS = 5
MAX_BUDGET = 100_000
MAX_SKIP = 5000  # entries in a context request's "skip" (a session record keeps at most 2000)
MAX_CONNECTIONS = 256  # connections whose request line is still arriving; past it the oldest is closed
BACKLOG = 128  # connections the kernel queues before the server accepts them
POLL = 0.5  # how often the accept loop looks at the clock and the stop flag
socket_path = server_socket_path


class RecallAnswer(TypedDict, total=False):
    """What the server answers a recall request (`ok` false: `error` says why)."""

    ok: bool
    error: str
    lexical_only: bool
    notes: list[str]
    results: list[list[dict]]  # per query, hits as `Hit.to_dict()` gives them
    floors: list[float]  # per query, the floor applied
    below_floor: list[int]  # per query, hits of the top k left out for scoring under it
    served_by: int


class ContextAnswer(TypedDict, total=False):
    """What the server answers a context request."""

    ok: bool
    error: str
    lexical_only: bool
    notes: list[str]
    context: str
    tokens: int
    ids: list[str]
    left_out: int
    floor: float
    served_by: int


def store_dirs(workspace) -> dict[str, str]:
    """A workspace's stores as requests name them: scope -> folder, for the folders that exist."""
    return {scope: str(store.memory_dir) for scope, store in workspace.stores.items() if store.exists()}


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
    floor: float | None = None  # None: the stores' recall_floor


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
    skip: tuple[tuple[str, str], ...] = ()  # context: (id, fingerprint) the agent already has

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
        skip = data.get("skip", {})
        if not isinstance(skip, dict) or not all(isinstance(k, str) and isinstance(v, str) and len(v) <= 64
                                                 for k, v in skip.items()):
            raise BadRequest('"skip" must be an object of memory id -> fingerprint')
        if strict and len(skip) > MAX_SKIP:
            raise BadRequest(f'at most {MAX_SKIP} entries in "skip", not {len(skip)}')
        return cls(
            op=op,
            stores=dict(stores),
            queries=tuple(_query(q, n, strict) for n, q in enumerate(queries)),
            use_embeddings=_bool(data, "use_embeddings", True),
            log=_bool(data, "log", True),
            budget=budget,
            skip=tuple(skip.items()),
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
        floor=_floor(q, where),
    )


def _floor(q: dict, where: str) -> float | None:
    value = q.get("floor")
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0.0 <= value <= 1.0:
        raise BadRequest(f'{where}."floor" must be a number from 0 to 1, not {value!r}')
    return float(value)


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
        below = reply.get("below_floor")
        if not (isinstance(below, list) and len(below) == len(results)
                and all(isinstance(n, int) and not isinstance(n, bool) for n in below)):
            return "its answer does not say how many results the floor left out"
    if op == "context":
        if not isinstance(reply.get("context"), str) or not isinstance(reply.get("ids"), list) \
                or not isinstance(reply.get("tokens"), int):
            return "its answer has no context block"
    return None


def prepare_folder(path: Path) -> str | None:
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
