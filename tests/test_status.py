"""`forgemem status`: one read-only screen of the stores, the observer, the server, the installs and what to do next.
Real stores, real caches and observer databases, a real recall server process and real installs."""

from __future__ import annotations

import gc
import json
import time
from pathlib import Path

import pytest

from forgemem.capture.observer import ObserverState, state_path
from forgemem.store.model import PROPOSED
from forgemem.workspace import Workspace, init_forge_dir
from tests.conftest import recall_server


def status(cli) -> dict:
    result = cli("status", "--json")
    assert result.code == 0, result.err
    return result.json()


def every_file(*folders: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file below the folders (git's own folder aside): its bytes and modification time."""
    found = {}
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and ".git" not in path.relative_to(folder).parts:
                stat = path.stat()
                found[str(path)] = (stat.st_mtime_ns, stat.st_size, path.read_bytes())
    return found


@pytest.fixture
def here(project, monkeypatch):
    monkeypatch.chdir(project)
    return project


def test_counts_conflicts_broken_files_stale_and_proposed(cli, here, isolated_home):
    workspace = Workspace.open(cwd=here)
    workspace.add("Deploys wait for the `release/` folder's checklist.", scope="repo",
                  category="project-conventions", status=PROPOSED)
    (here / ".forge" / "memory" / "broken.md").write_text("---\nid: nope\n---\nnot a memory\n")
    report = status(cli)
    repo = report["stores"]["repo"]
    snap = workspace.load(cache=False)
    heads = [m for m in snap.heads() if m.scope == "repo"]
    assert repo["proposed"] == 1 and repo["current"] == sum(1 for m in heads if m.status is None)
    assert repo["versions"] == sum(1 for m in snap.memories if m.scope == "repo") - len(heads) > 0
    assert repo["files"] == len(list((here / ".forge" / "memory").rglob("*.md")))
    assert report["conflicts"] == [[e.source, e.target] for e in snap.graph.contradictions()] != []
    assert report["broken_files"] == 1 and report["problems"][0]["path"].endswith("broken.md")
    assert report["stale"] and all(s["kind"] in ("missing-path", "missing-symbol", "changed-file")
                                   for s in report["stale"])
    assert report["stores"]["user"]["exists"] is False
    assert report["next"] == "1 memory file cannot be read: forgemem validate"  # the most pressing first
    (here / ".forge" / "memory" / "broken.md").unlink()
    assert status(cli)["next"].startswith("1 conflict between memories waits: forgemem conflicts")


def test_status_writes_nothing_and_starts_no_server(cli, here, isolated_home, tmp_path, monkeypatch):
    assert cli("recall", "how do I run the tests?").code == 0  # caches built
    state = ObserverState(state_path(Workspace.open(cwd=here)))
    state.close()
    assert cli("install", "claude-code").code == 0
    Workspace.open(cwd=here).add("A memory the cache has not seen yet.", scope="repo", category="project-conventions")
    socket = tmp_path / "sock" / "s.sock"
    monkeypatch.setenv("FORGEMEM_SERVER", "on")
    monkeypatch.setenv("FORGEMEM_SERVER_SOCKET", str(socket))
    gc.collect()  # close what the commands above left unreferenced: closing the last connection to a WAL
    # database checkpoints it, which would otherwise happen whenever the collector runs (during status)
    before = every_file(here, isolated_home)
    for args in (("status",), ("status", "--json")):
        assert cli(*args).code == 0
    time.sleep(0.5)  # a server started by mistake would have made its socket by now
    after = every_file(here, isolated_home)
    assert sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k)) == []
    assert not socket.parent.exists()
    report = status(cli)
    assert report["server"] == {"enabled": True, "socket": str(socket), "running": False, "pid": None}
    assert report["stores"]["repo"]["index"]["state"] == "stale" and report["stores"]["repo"]["index"]["new"] == 1


def test_index_freshness_follows_the_files_without_refreshing_them(cli, here):
    assert status(cli)["stores"]["repo"]["index"]["state"] == "missing"
    assert cli("recall", "tests").code == 0
    assert status(cli)["stores"]["repo"]["index"] == {"state": "fresh", "new": 0, "changed": 0, "deleted": 0,
                                                        "unembedded": 0}
    victim = next((here / ".forge" / "memory").rglob("*.md"))
    victim.unlink()
    Workspace.open(cwd=here).add("Something new to index.", scope="repo", category="project-conventions")
    index = status(cli)["stores"]["repo"]["index"]
    assert index["state"] == "stale" and index["new"] == 1 and index["deleted"] == 1
    assert status(cli)["stores"]["repo"]["index"]["state"] == "stale"  # status itself never catches up
    assert cli("recall", "tests").code == 0
    assert status(cli)["stores"]["repo"]["index"]["state"] == "fresh"


def test_a_running_server_is_shown_with_its_pid(cli, here, tmp_path, monkeypatch):
    socket = tmp_path / "sock" / "s.sock"
    monkeypatch.setenv("FORGEMEM_SERVER", "on")
    monkeypatch.setenv("FORGEMEM_SERVER_SOCKET", str(socket))
    with recall_server(socket) as server:
        report = status(cli)
        assert report["server"]["running"] is True and report["server"]["pid"] == server.pid
        assert f"running (pid {server.pid})" in cli("status").out


def test_installs_per_agent(cli, here, isolated_home):
    def state_of(report: dict) -> dict:
        return {(i["agent"], i["where"]): i["state"] for i in report["installs"]}

    before = state_of(status(cli))
    assert before == {("claude-code", "project"): "not installed", ("claude-code", "user"): "not installed",
                      ("codex", "user"): "not installed", ("git", "project"): "not installed"}
    assert status(cli)["next"] != "nothing needs you"
    assert cli("install", "claude-code").code == 0
    (here / ".gitattributes").write_text(".forge/memory/**/*.md diff=forgemem merge=forgemem\n")  # a fresh clone's
    report = status(cli)
    after = state_of(report)
    assert after[("claude-code", "project")] == "installed" and after[("claude-code", "user")] == "not installed"
    assert after[("git", "project")] == "partly"
    git_entry = next(i for i in report["installs"] if i["agent"] == "git")
    assert "local git config" in git_entry["detail"]
    assert cli("install", "git").code == 0 and cli("install", "codex").code == 0
    assert state_of(status(cli)) == {**after, ("git", "project"): "installed", ("codex", "user"): "installed"}
    text = cli("status").out
    assert "claude-code installed" in text and "codex installed" in text


def test_observer_state_failures_and_last_captures(cli, git_repo, isolated_home, tmp_path, monkeypatch):
    init_forge_dir(git_repo / ".forge")
    monkeypatch.chdir(git_repo)
    report = status(cli)
    assert report["next"] == "no agent gets your memories yet: forgemem install claude-code (or codex)"
    assert report["observer"]["exists"] is False
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(
        json.dumps({"type": "user", "sessionId": "s", "message": {"role": "user",
                    "content": "From now on always use uv, never pip, in this repository."}}) + "\n"
        + json.dumps({"type": "assistant", "sessionId": "s", "message": {"id": "m", "role": "assistant",
                      "content": [{"type": "text", "text": "Okay."}]}}) + "\n")
    assert cli("observe", "--once", "--final", str(transcript)).code == 0
    state = ObserverState(state_path(Workspace.open(cwd=git_repo)))
    state.write(lambda: state.connection.execute(
        "INSERT INTO passes (path, trigger, turns, status, created, finished, error)"
        " VALUES (?, 'cadence', '[]', 'failed', 1.0, 2.0, 'TimeoutError: the model took too long')",
        (str(transcript),)))
    state.close()
    report = status(cli)
    observer = report["observer"]
    assert observer["transcripts"] == 1 and observer["read_to_end"] == 1
    assert observer["passes"]["done"] == 1 and observer["passes"]["failed"] == 1
    assert observer["failures"][0]["error"] == "TimeoutError: the model took too long"
    assert observer["last_captures"] and "uv" in observer["last_captures"][0]["text"]
    assert report["next"] == "1 capture pass failed: forgemem observe --status"
    text = cli("status").out
    assert "TimeoutError" in text and "last captures:" in text


def test_without_a_store_the_next_action_is_init_and_past_sessions_are_counted(cli, git_repo, isolated_home,
                                                                               monkeypatch):
    from forgemem.capture.observer import claude_code_folder

    monkeypatch.chdir(git_repo)
    folder = claude_code_folder(git_repo, isolated_home)
    folder.mkdir(parents=True)
    (folder / "s.jsonl").write_text(json.dumps({"type": "user", "sessionId": "s",
                                                "message": {"role": "user", "content": "hi"}}) + "\n")
    report = status(cli)
    assert report["stores"]["repo"]["exists"] is False
    assert report["next"] == "this repository has no memory store yet: forgemem init"
    assert report["not_captured"] == 1
    init_forge_dir(git_repo / ".forge")
    assert cli("install", "claude-code").code == 0
    assert status(cli)["next"] == "1 past session not captured yet: forgemem observe --backfill"
