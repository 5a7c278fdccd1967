"""Talking to the recall server, both ways trusted: who may be at the other end, and one line each way.

Standard library only (with `forgemem.environment` and `forgemem.permissions`), so that the fast path of a
warm `forgemem recall` (`forgemem.cli.quick`) asks the server without loading anything else. What a request
and an answer may contain is `forgemem.recall.protocol`'s business.

Who may talk: a socket that is a socket, owned by this user, in a folder of this user's that others cannot
write to, served by a process of this user (`SO_PEERCRED`), both ways.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import struct
import sys
import time
from pathlib import Path

from forgemem import __version__
from forgemem.environment import server_socket_path
from forgemem.permissions import unsafe_stat_reason

CONNECT_TIMEOUT = 0.05
ANSWER_TIMEOUT = 30.0
MAX_ANSWER_BYTES = 64 << 20


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


_said: set[str] = set()  # notices already given by this process


def say_once(message: str, on_notice=None) -> None:
    """Say `message` once per process (to `on_notice`: the hook log, the CLI's warnings, the server log)."""
    if message in _said:
        return
    _said.add(message)
    if on_notice is not None:
        try:
            on_notice(message)
        except Exception:  # noqa: BLE001 - a notice never fails a recall
            pass


class LineTooLong(Exception):
    pass


def read_line(sock: socket.socket, limit: int, deadline: float | None = None) -> bytes:
    """One line (without its newline) of at most `limit` bytes; everything up to EOF if there is no newline.

    Raises LineTooLong past `limit`, TimeoutError when `deadline` (monotonic) passes first.
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
            raise LineTooLong
    if len(data) > limit:
        raise LineTooLong
    return bytes(data)


class Untrusted(Exception):
    pass


def connect(path: Path, timeout: float) -> socket.socket:
    """A connection to the server at `path`, checked both ways; raises OSError or Untrusted."""
    problem = socket_problem(path, os.lstat(path))  # no socket (any more): OSError, no server
    if problem:
        raise Untrusted(problem)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(str(path))
        problem = peer_problem(sock)
        if problem:
            raise Untrusted(problem)
    except BaseException:
        sock.close()
        raise
    return sock


#: a server that let a request time out is not asked again by this process for this long (a command whose
#: fast path gave up on it must not wait as long again for the same answer; a long-lived process retries)
STUCK_PAUSE = 60.0
_stuck: dict[str, float] = {}  # socket path -> when a request to it timed out


def exchange(request: dict, timeout: float, check, on_notice=None) -> dict | None:
    """The answer of a trusted server to `request` (sent with this version), when `check(reply, op)` finds
    nothing wrong with it; None when no server answers, or one that must not be believed (said once)."""
    path = server_socket_path()
    if not os.path.lexists(path):
        return None
    if time.monotonic() - _stuck.get(str(path), -STUCK_PAUSE) < STUCK_PAUSE:
        return None
    op = request.get("op")
    try:
        with connect(path, CONNECT_TIMEOUT) as sock:
            sock.settimeout(timeout)
            sock.sendall(json.dumps({**request, "version": __version__}).encode() + b"\n")
            data = read_line(sock, MAX_ANSWER_BYTES)
    except Untrusted as exc:
        say_once(f"not using the recall server at {path}: {exc}", on_notice)
        return None
    except LineTooLong:
        say_once(f"not using the recall server at {path}: its answer is longer than {MAX_ANSWER_BYTES} bytes", on_notice)
        return None
    except TimeoutError:
        _stuck[str(path)] = time.monotonic()
        say_once(f"the recall server at {path} did not answer within {timeout:g} s: answering here", on_notice)
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
    problem = check(reply, op)
    if problem:
        say_once(f"not using the recall server at {path}: {problem}", on_notice)
        return None
    if reply.get("restart"):
        return None  # an older server: it exits, and this call runs in-process
    return reply
