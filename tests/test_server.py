"""The recall server: a real process on a real Unix socket, fresh answers after file changes."""

from __future__ import annotations

import json
import os
import shutil
import socket as sock_module
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from forgemem import __version__

from .conftest import SAMPLES, silent_server


@pytest.fixture
def served(tmp_path, monkeypatch):
    store = tmp_path / "samples"
    shutil.copytree(SAMPLES, store)
    socket = tmp_path / "sock" / "s.sock"
    monkeypatch.setenv("FORGEMEM_SERVER", "on")
    monkeypatch.setenv("FORGEMEM_SERVER_SOCKET", str(socket))
    dirs = ["--repo-dir", str(store / "repo/.forge/memory"), "--user-dir", str(store / "user/.forge/memory")]
    yield store, socket, dirs
    subprocess.run([sys.executable, "-m", "forgemem", "serve", "--stop"], env=dict(os.environ), capture_output=True)


def wait_for(path: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def recall(dirs, query, *extra):
    run = subprocess.run(
        [sys.executable, "-m", "forgemem", *dirs, "recall", query, "--json", *extra],
        capture_output=True, text=True, env=dict(os.environ),
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_first_recall_runs_in_process_and_starts_a_server_that_answers_the_next(served):
    store, socket, dirs = served
    first = recall(dirs, "which shell do I use")
    assert first["served_by"] is None  # no server yet: answered in-process
    wait_for(socket)
    deadline = time.monotonic() + 30
    second = recall(dirs, "which shell do I use")
    while second["served_by"] is None and time.monotonic() < deadline:
        time.sleep(0.2)
        second = recall(dirs, "which shell do I use")
    assert isinstance(second["served_by"], int) and second["served_by"] != os.getpid()
    assert [r["id"] for r in second["results"]] == [r["id"] for r in first["results"]]
    assert "zsh" in second["results"][0]["content"]


def test_server_sees_file_changes_before_answering(served):
    store, socket, dirs = served
    server = subprocess.Popen([sys.executable, "-m", "forgemem", "serve", "--idle-timeout", "60"], env=dict(os.environ))
    try:
        wait_for(socket)
        before = recall(dirs, "kayak storage fees")
        assert before["served_by"] == server.pid
        assert not any("kayak" in r["content"] for r in before["results"])
        memory_dir = store / "repo/.forge/memory"
        add = subprocess.run(
            [sys.executable, "-m", "forgemem", *dirs, "add", "Kayak storage fees are billed monthly per rack slot.",
             "-c", "project-conventions"], capture_output=True, text=True, env=dict(os.environ),
        )
        assert add.returncode == 0, add.stderr
        after = recall(dirs, "kayak storage fees")
        assert after["served_by"] == server.pid
        assert "Kayak storage fees" in after["results"][0]["content"]
        # a deleted file disappears from the next answer too
        Path(add.stdout.split("\t")[1].strip()).unlink()
        gone = recall(dirs, "kayak storage fees")
        assert not any("Kayak" in r["content"] for r in gone["results"])
        assert memory_dir.is_dir()
    finally:
        stop = subprocess.run([sys.executable, "-m", "forgemem", "serve", "--stop"], env=dict(os.environ),
                              capture_output=True, text=True)
        assert "stopped" in stop.stdout
        assert server.wait(10) == 0
    assert not socket.exists()


def test_server_off_never_starts_one(served, monkeypatch):
    store, socket, dirs = served
    monkeypatch.setenv("FORGEMEM_SERVER", "off")
    result = recall(dirs, "pnpm")
    assert result["served_by"] is None
    time.sleep(0.5)
    assert not socket.exists()


def test_idle_server_exits_by_itself(served):
    store, socket, dirs = served
    server = subprocess.Popen([sys.executable, "-m", "forgemem", "serve", "--idle-timeout", "1"], env=dict(os.environ))
    wait_for(socket)
    assert server.wait(15) == 0
    assert not socket.exists()


# ------------------------------------------------------------------ clients that stall, trickle, flood or never read


def start_server(*extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "forgemem", "serve", "--idle-timeout", "300", *extra],
                            env=dict(os.environ), stderr=subprocess.PIPE, text=True)


def stop_server(server: subprocess.Popen) -> None:
    subprocess.run([sys.executable, "-m", "forgemem", "serve", "--stop"], env=dict(os.environ), capture_output=True)
    try:
        server.wait(30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def connect(path: Path) -> sock_module.socket:
    conn = sock_module.socket(sock_module.AF_UNIX, sock_module.SOCK_STREAM)
    conn.connect(str(path))
    return conn


def still_open(conn: sock_module.socket) -> bool:
    """True while the server has neither closed nor answered this connection (checked without waiting)."""
    conn.setblocking(False)
    try:
        return not conn.recv(1)  # b"": closed by the server; data: it answered
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        conn.setblocking(True)


def test_a_recall_is_answered_while_stalled_trickling_and_deaf_clients_are_still_connected(served):
    store, socket, dirs = served
    server = start_server("--read-timeout", "600")  # the stalled ones are waited on far longer than any recall takes
    stop_trickling = threading.Event()
    conns: list[sock_module.socket] = []
    try:
        wait_for(socket)
        silent = connect(socket)  # connects and says nothing
        trickling = connect(socket)  # a byte a second, never a whole line
        deaf = connect(socket)  # a big request, then never reads the answer
        deaf.setsockopt(sock_module.SOL_SOCKET, sock_module.SO_RCVBUF, 4096)
        conns += [silent, trickling, deaf]
        request = {"op": "recall", "version": __version__, "use_embeddings": False,
                   "stores": {"repo": dirs[1], "user": dirs[3]},
                   "queries": [{"text": f"shell package manager {n}", "k": 1000, "hops": 5} for n in range(100)]}
        deaf.sendall(json.dumps(request).encode() + b"\n")

        def trickle():
            for byte in b'{"op": "recall", "version": "' + b"x" * 10_000:
                if stop_trickling.wait(1):
                    return
                try:
                    trickling.send(bytes([byte]))
                except OSError:
                    return

        threading.Thread(target=trickle, daemon=True).start()
        answer = recall(dirs, "which shell do I use")
        # the server answered it (no in-process fallback after a timeout) ...
        assert answer["served_by"] == server.pid
        assert "zsh" in answer["results"][0]["content"]
        # ... while the silent and the trickling client were still being waited on
        assert still_open(silent) and still_open(trickling)
        assert server.poll() is None
    finally:
        stop_trickling.set()
        for conn in conns:
            conn.close()
        stop_server(server)


def test_a_connection_is_closed_when_its_own_read_timeout_passes_even_while_it_trickles(served):
    store, socket, dirs = served
    server = start_server("--read-timeout", "1")
    sent = []
    try:
        wait_for(socket)
        conn = connect(socket)
        finished = threading.Event()

        def trickle():
            for byte in b'{"op": "ping"' + b" " * 300:  # 300 bytes at one a tenth of a second: 30 s
                try:
                    conn.send(bytes([byte]))
                except OSError:
                    return
                sent.append(byte)
                time.sleep(0.1)
            finished.set()

        threading.Thread(target=trickle, daemon=True).start()
        conn.settimeout(120)
        assert conn.recv(10) == b""  # closed by the server, with no answer ...
        assert not finished.is_set()  # ... before the trickle was done: a deadline per request, not per byte
        conn.close()
        ping = subprocess.run([sys.executable, "-m", "forgemem", "serve", "--status"], env=dict(os.environ),
                              capture_output=True, text=True)
        assert ping.returncode == 0, ping.stdout + ping.stderr
    finally:
        stop_server(server)


def test_a_flood_of_silent_connections_closes_the_oldest_and_recall_is_still_served(served):
    from forgemem.recall.protocol import MAX_CONNECTIONS

    store, socket, dirs = served
    server = start_server("--read-timeout", "600")
    flood: list[sock_module.socket] = []
    try:
        wait_for(socket)
        for _ in range(MAX_CONNECTIONS + 20):
            flood.append(connect(socket))
        answer = recall(dirs, "which shell do I use")
        assert answer["served_by"] == server.pid
        for conn in flood[:20]:  # made room: closed without a word
            conn.settimeout(60)
            assert conn.recv(10) == b""
        assert still_open(flood[-1])
    finally:
        for conn in flood:
            conn.close()
        stop_server(server)


def test_a_second_serve_says_which_server_holds_the_socket_and_exits_1(served):
    store, socket, dirs = served
    server = start_server()
    try:
        wait_for(socket)
        second = subprocess.run([sys.executable, "-m", "forgemem", "serve", "--idle-timeout", "5"],
                                env=dict(os.environ), capture_output=True, text=True, timeout=60)
        assert second.returncode == 1
        assert f"another recall server already serves {socket} (pid {server.pid})" in second.stderr
        assert recall(dirs, "which shell do I use")["served_by"] == server.pid  # the first one still serves
    finally:
        stop_server(server)
    assert server.returncode == 0


def test_a_server_that_lets_a_request_time_out_is_not_waited_for_twice(tmp_path, monkeypatch):
    """A warm recall's fast path gives up on a stuck server after its timeout; the full command that runs next
    in the same process must not wait as long again (it answers in-process), and a while later it is asked again."""
    from forgemem.recall import wire

    monkeypatch.setattr(wire, "_stuck", {})
    notices = []
    with silent_server(tmp_path / "sock") as (path, accepted):
        monkeypatch.setenv("FORGEMEM_SERVER_SOCKET", str(path))
        assert wire.exchange({"op": "ping"}, 0.3, lambda reply, op: None, notices.append) is None
        assert len(accepted) == 1 and "did not answer within 0.3 s" in notices[0]
        assert wire.exchange({"op": "ping"}, 0.3, lambda reply, op: None) is None
        assert len(accepted) == 1  # not asked again: no connection, so no wait
        monkeypatch.setattr(wire, "STUCK_PAUSE", 0.0)
        assert wire.exchange({"op": "ping"}, 0.3, lambda reply, op: None) is None
        assert len(accepted) == 2  # after the pause it is asked again
