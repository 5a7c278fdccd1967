"""The recall server: a real process on a real Unix socket, fresh answers after file changes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import SAMPLES


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
