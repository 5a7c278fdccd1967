"""The observer: offsets in the cache, cadence and compaction passes, a live watcher, the CLI."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from forgemem.capture.capturer import Capturer
from forgemem.capture.classify import Classification
from forgemem.capture.observer import CADENCE_BUDGET, Observer, ObserverState, claude_code_folder, state_path
from forgemem.recall.engine import RecallEngine
from forgemem.workspace import Workspace

from .conftest import git

REAL = Path(__file__).resolve().parents[2] / "shared" / "eval" / "transcripts"


def user_line(text: str, session: str = "s-1") -> str:
    return json.dumps({"type": "user", "sessionId": session, "message": {"role": "user", "content": text}}) + "\n"


def assistant_line(text: str, msg: str = "m", session: str = "s-1") -> str:
    return json.dumps({"type": "assistant", "sessionId": session,
                       "message": {"id": msg, "role": "assistant", "content": [{"type": "text", "text": text}]}}) + "\n"


def exchange(user: str, answer: str = "Okay.", n: int = 0) -> str:
    return user_line(user) + assistant_line(answer, msg=f"m{n}")


@pytest.fixture
def project(empty_store_repo) -> Path:
    return empty_store_repo


@pytest.fixture
def workspace(project) -> Workspace:
    return Workspace.open(cwd=project)


@pytest.fixture
def capturer(workspace, real_embedder) -> Capturer:
    return Capturer(workspace, RecallEngine(workspace, embedder=real_embedder))


def memory_files(workspace: Workspace) -> list[Path]:
    return sorted(p for s in workspace.stores.values() for p in s.memory_dir.rglob("*.md"))


def test_cadence_passes_offsets_and_restart(project, workspace, capturer, tmp_path):
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(
        exchange("Add a health endpoint.", n=1)
        + exchange("Never leave print statements in committed code.", n=2)
        + exchange("Thanks.", n=3)
    )
    observer = Observer(workspace, [transcript], cadence=2, capturer=capturer)
    read, ran = observer.once()
    # 3 exchanges: one pass after the 2nd, the 3rd waits; the last answer is read once the next human turn ends it
    assert (read, ran) == (5, 1)
    [written] = memory_files(workspace)
    assert "print statements" in written.read_text()
    row = observer.state.transcript(str(transcript))
    assert row["offset"] == transcript.stat().st_size and row["humans"] == 3 and row["humans_at_pass"] == 2

    # a restart (new observer, same cache) reads nothing and captures nothing again
    again = Observer(workspace, [transcript], cadence=2, capturer=capturer)
    assert again.once() == (0, 0)
    # an append: only the new turns are read, and the pass holds the turns since the last one
    with open(transcript, "a") as handle:
        handle.write(exchange("In this repo migrations live in db/migrations.", n=4))
    assert again.once() == (2, 1)
    [last] = again.state.passes(str(transcript), limit=1)
    assert last["status"] == "done"
    assert "migrations" in json.loads(last["written"])[0]["text"]
    assert len(memory_files(workspace)) == 2
    # nothing the observer keeps dirties the tree: only the two new memory files show up in git
    status = git(project, "status", "--porcelain", "--untracked-files=all").split("\n")
    repo_files = list(workspace.stores["repo"].memory_dir.rglob("*.md"))
    assert 1 <= len(repo_files) <= 2  # the convention (and the print rule, unless it was judged personal)
    assert sorted(line[3:] for line in status if line) == sorted(str(p.relative_to(project)) for p in repo_files)


def test_final_pass_captures_what_is_short_of_the_cadence(workspace, capturer, tmp_path):
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(exchange("I prefer pytest functions over unittest classes."))
    observer = Observer(workspace, [transcript], cadence=5, capturer=capturer)
    assert observer.once() == (1, 0)
    assert observer.once(final=True) == (1, 1)  # the session ended: its last answer is read too
    assert len(memory_files(workspace)) == 1


def test_rotation_reads_the_new_file_from_the_start(workspace, capturer, tmp_path):
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(exchange("hello there", n=1) + exchange("what does this do", n=2))
    observer = Observer(workspace, [transcript], cadence=10, capturer=capturer)
    observer.once()
    rotated = tmp_path / "session.jsonl.1"
    transcript.rename(rotated)
    transcript.write_text(exchange("Never commit generated files.", n=3))  # a new, shorter file
    observer.once(final=True)
    row = observer.state.transcript(str(transcript))
    assert row["humans"] == 1 and row["offset"] == transcript.stat().st_size
    assert ["generated files" in p.read_text() for p in memory_files(workspace)] == [True]


def test_compaction_in_the_transcript_runs_a_pass_over_the_arc(workspace, capturer, tmp_path):
    transcript = tmp_path / "session.jsonl"
    lines = exchange("We decided to use Postgres because we need transactions.", n=1) + exchange("go on", n=2)
    lines += json.dumps({"type": "system", "subtype": "compact_boundary", "sessionId": "s-1"}) + "\n"
    lines += json.dumps({"type": "user", "sessionId": "s-1", "isCompactSummary": True,
                         "message": {"role": "user", "content": "Summary: we always use tabs"}}) + "\n"
    transcript.write_text(lines)
    observer = Observer(workspace, [transcript], cadence=10, capturer=capturer)
    observer.once()
    [done] = observer.state.passes(str(transcript))
    assert done["trigger"] == "compaction" and done["status"] == "done"
    [memory] = json.loads(done["written"])
    assert "Postgres" in memory["text"]  # the model-written summary is not a source
    assert observer.state.transcript(str(transcript))["compactions"] == 1


def test_explicit_compaction_from_a_hook(workspace, capturer, tmp_path):
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(exchange("Our convention is conventional commits with feat: and fix: prefixes."))
    observer = Observer(workspace, [transcript], cadence=10, capturer=capturer)
    assert observer.once(compaction=True) == (2, 1)  # a compaction ends the answer in progress too
    from forgemem.store import memfile

    [path] = memory_files(workspace)
    assert memfile.read_file(path).trigger == "compaction"


def test_a_pass_is_cut_to_its_budget(workspace, tmp_path):
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("".join(exchange(f"request {i} " + "x" * 900, n=i) for i in range(60)))
    observer = Observer(workspace, [transcript], cadence=10)
    observer.poll(transcript, compaction=False)
    for row in observer.state.pending():
        turns = json.loads(row["turns"])
        assert len(turns) <= CADENCE_BUDGET.turns
        assert sum(len(t["text"]) for t in turns) <= CADENCE_BUDGET.chars
        assert turns[-1]["role"] in ("user", "assistant")


class GatedClassifier:
    """A classifier that waits for a gate: shows that reading never waits for it."""

    name = "gated"

    def __init__(self):
        self.gate = threading.Event()
        self.started = threading.Event()
        self.calls = 0

    def classify(self, batch, neighbours):
        self.calls += 1
        self.started.set()
        self.gate.wait(30)
        return Classification([], self.name)


def wait_for(condition, timeout: float = 20.0) -> float:
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise AssertionError("timed out")
        time.sleep(0.02)
    return time.monotonic() - start


def test_slow_classification_never_blocks_reading(workspace, tmp_path):
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(exchange("first", n=0))
    classifier = GatedClassifier()
    capturer = Capturer(workspace, RecallEngine(workspace, use_embeddings=False), classifier=classifier)
    observer = Observer(workspace, [transcript], cadence=1, capturer=capturer)
    stop = threading.Event()
    thread = threading.Thread(target=observer.watch, args=(stop,), kwargs={"rescan_seconds": 0.2}, daemon=True)
    thread.start()
    try:
        assert classifier.started.wait(20)  # the first pass is stuck in the classifier
        state = ObserverState(observer.state.path)  # a second connection, as --status would use
        for n in range(1, 4):
            with open(transcript, "a") as handle:
                handle.write(exchange(f"more {n}", n=n))
            wait_for(lambda n=n: state.transcript(str(transcript))["humans"] == n + 1)
        assert classifier.calls == 1  # one transcript's passes never run at once
        assert len(state.pending()) >= 2
    finally:
        classifier.gate.set()
        wait_for(lambda: not ObserverState(observer.state.path).pending())
        stop.set()
        thread.join(30)
    assert classifier.calls == 4


def test_live_observer_picks_up_an_append_and_writes_the_memory(workspace, capturer, tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    observer = Observer(workspace, [folder], cadence=1, capturer=capturer)
    capturer.engine.refresh()  # model loaded before timing starts
    stop, ready = threading.Event(), threading.Event()
    thread = threading.Thread(target=observer.watch, args=(stop,), kwargs={"ready": ready}, daemon=True)
    thread.start()
    try:
        assert ready.wait(20)
        transcript = folder / "new-session.jsonl"  # a file created after watching began
        transcript.write_text(user_line("hello"))
        wait_for(lambda: observer.state.transcript(str(transcript)) is not None)
        with open(transcript, "a") as handle:
            handle.write(assistant_line("Hi!") + user_line("Never use mocks for the database layer."))
        wait_for(lambda: len(memory_files(workspace)) == 1)
    finally:
        stop.set()
        thread.join(30)
    assert "mocks" in memory_files(workspace)[0].read_text()


# ------------------------------------------------------------------ the CLI


def test_cli_once_status_and_errors(cli, project, tmp_path, monkeypatch):
    monkeypatch.chdir(project)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(exchange("We always squash-merge pull requests.") + exchange("ok then", n=2))
    result = cli("observe", "--once", "--final", "--json", str(transcript))
    assert result.code == 0, result.err
    data = result.json()
    assert data["turns_read"] == 4 and len(data["passes"]) == 1
    [memory] = data["passes"][0]["written"]
    assert memory["scope"] == "repo" and "squash-merge" in memory["content"]
    status = cli("observe", "--status", "--json").json()
    [entry] = status["transcripts"]
    assert entry["offset"] == transcript.stat().st_size and entry["passes"]["done"] == 1
    assert "squash-merge pull requests" in entry["recent"][0]["written"][0]["text"]
    assert status["state"] == str(state_path(Workspace.open(cwd=project)))
    text = cli("observe", "--status").out
    assert "t.jsonl" in text and "1 done" in text
    assert cli("observe").code == 2
    assert cli("observe", "--once", str(tmp_path / "missing.jsonl")).code == 2
    assert cli("observe", "--compaction", str(transcript)).code == 2
    assert "unknown transcript format" in cli("observe", "--once", "--format", "word", str(transcript)).err


def test_claude_code_shortcut_watches_this_repos_sessions(cli, project, monkeypatch):
    monkeypatch.chdir(project)
    folder = claude_code_folder(project)
    assert folder.parent == Path(os.environ["HOME"]) / ".claude" / "projects"
    # Claude Code's folder name: the project path with every other character than letters and digits as "-"
    assert claude_code_folder(Path("/home/me/my_proj.v2"), home=Path("/h")) == Path("/h/.claude/projects/-home-me-my-proj-v2")
    assert cli("observe", "--once", "--claude-code").code == 2  # no sessions yet: said clearly
    folder.mkdir(parents=True)
    (folder / "abc.jsonl").write_text(exchange("Please always write docstrings in Google style."))
    result = cli("observe", "--once", "--final", "--claude-code")
    assert result.code == 0, result.err
    assert "Google style" in result.out


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/eval/transcripts is not here")
def test_observe_once_over_every_real_transcript(cli, project, monkeypatch):
    monkeypatch.chdir(project)
    result = cli("observe", "--once", "--final", "--json", str(REAL))
    assert result.code == 0, result.err
    passes = result.json()["passes"]
    written: dict[str, list[str]] = {}
    for p in passes:
        if p["written"]:
            written.setdefault(Path(p["path"]).name, []).extend(m["content"] for m in p["written"])
    # only the aider history holds durable corrections; the Claude Code, Codex and Gemini sessions are tasks
    assert list(written) == ["chat-history.bytes-0-241120.md"]
    texts = written["chat-history.bytes-0-241120.md"]
    assert any("--no-git" in t for t in texts)  # (its GitTemporaryDirectory correction: a named xfail in test_capture)
    again = cli("observe", "--once", "--final", "--json", str(REAL)).json()
    assert again == {"turns_read": 0, "passes": [], "waiting": 0}


def test_two_observers_share_the_work_without_doing_it_twice(workspace, capturer, tmp_path):
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("".join(exchange(f"In this repo rule {n} is that module {n} stays small.", n=n)
                                  for n in range(6)))
    first = Observer(workspace, [transcript], cadence=2, capturer=capturer)
    second = Observer(workspace, [transcript], cadence=2, capturer=capturer)
    assert first.poll(transcript) > 0 and second.poll(transcript) == 0  # the offset moved for both
    rows = first.state.pending()
    assert len(rows) == 3
    assert first.state.claim(rows[0]["id"])
    assert not second.state.claim(rows[0]["id"])  # already taken
    assert not second.state.claim(rows[1]["id"])  # same transcript: waits for the running one
    assert second.run_pending() == 0
    first.run_pass(rows[0])
    assert second.run_pending() == 2 and first.run_pending() == 0
    done = [p["status"] for p in first.state.passes(str(transcript))]
    assert done == ["done", "done", "done"]


def test_a_pass_claimed_by_a_process_that_cannot_be_checked_runs_again_when_stale(
        workspace, capturer, tmp_path, monkeypatch):
    """A claim from another host (or from before claims recorded their process): only time tells.
    (A claim by a process of this host that died is reclaimed at once: tests/test_observer_reliability.py.)"""
    from forgemem.capture import state as state_module

    transcript = tmp_path / "session.jsonl"
    transcript.write_text(exchange("Never commit secrets to the repo.", n=1))
    dead = Observer(workspace, [transcript], cadence=1, capturer=capturer)
    dead.poll(transcript)
    [row] = dead.state.pending()
    assert dead.state.claim(row["id"])
    dead.state.connection.execute("UPDATE passes SET host = 'another-machine' WHERE id = ?", (row["id"],))
    alive = Observer(workspace, [transcript], cadence=1, capturer=capturer)
    assert alive.run_pending() == 0  # still fresh: it may just be slow
    monkeypatch.setattr(state_module, "STALE_SECONDS", -1)
    assert alive.run_pending() == 1
    assert [p["status"] for p in alive.state.passes(str(transcript))] == ["done"]


def test_live_forgemem_observe_process_picks_up_appends(project, tmp_path):
    """The real command in its own process: an append becomes a memory file, SIGTERM stops it cleanly."""
    import signal
    import subprocess
    import sys

    folder = tmp_path / "sessions"
    folder.mkdir()
    transcript = folder / "live.jsonl"
    transcript.write_text(user_line("hello") + assistant_line("Hi!", msg="m0"))
    process = subprocess.Popen(
        [sys.executable, "-m", "forgemem", "observe", "--cadence", "1", str(folder)],
        cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        ws = Workspace.open(cwd=project)
        state = state_path(ws)
        wait_for(lambda: state.exists() and ObserverState(state).transcript(str(transcript)) is not None, 60)
        # the "hello" pass is done, so the model is loaded
        wait_for(lambda: [p["status"] for p in ObserverState(state).passes()] == ["done"], 60)
        before = len(memory_files(ws))
        with open(transcript, "a") as handle:
            handle.write(user_line("In this repo every migration needs a down step."))
        seconds = wait_for(lambda: len(memory_files(ws)) > before, 30)
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "down step" in out and "stopped watching" in err
    print(f"append to memory file: {seconds:.2f} s")  # a figure for the record, not an assertion


def test_an_unchanged_transcript_is_skipped_without_taking_the_write_lock(workspace, capturer, tmp_path):
    import sqlite3

    transcript = tmp_path / "session.jsonl"
    transcript.write_text(exchange("hello there", n=1))
    observer = Observer(workspace, [transcript], cadence=10, capturer=capturer)
    observer.poll(transcript)
    other = sqlite3.connect(observer.state.path, timeout=0.1, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another observer holds the write lock
    try:
        started = time.monotonic()
        assert observer.poll(transcript) == 0
        assert time.monotonic() - started < 1  # did not wait for the lock (its timeout is 30 s)
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_cli_once_captures_a_transcript_shorter_than_the_cadence(cli, project, tmp_path, monkeypatch):
    monkeypatch.chdir(project)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(exchange("We always squash-merge pull requests.") + exchange("ok then", n=2))
    result = cli("observe", "--once", str(transcript))  # what a person types after a session
    assert result.code == 0, result.err
    assert result.err.splitlines()[0] == "read 4 turn(s), ran 1 capture pass(es), wrote 1 memory"
    assert "squash-merge" in result.out and "wait" not in result.err
    again = cli("observe", "--once", str(transcript))  # nothing new: no second pass, nothing written twice
    assert again.err.splitlines() == ["read 0 turn(s), ran 0 capture pass(es), wrote 0 memories"]


def test_cli_once_due_says_that_a_short_transcript_waits_for_the_cadence(cli, project, tmp_path, monkeypatch):
    monkeypatch.chdir(project)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(exchange("We always squash-merge pull requests.") + exchange("ok then", n=2))
    result = cli("observe", "--once", "--due", str(transcript))  # what the Stop hook and cron run
    assert result.code == 0, result.err
    assert result.err.splitlines() == [
        "read 3 turn(s), ran 0 capture pass(es), wrote 0 memories",  # the last answer may go on
        "2 exchange(s) wait until there are 5 (cadence_turns) for a capture pass; `--once` without `--due` "
        "captures them now"]
    final = cli("observe", "--once", "--due", "--final", str(transcript))
    assert final.code == 0 and "ran 1 capture pass(es)" in final.err and "wait" not in final.err
    again = cli("observe", "--once", "--due", str(transcript))  # nothing new read: nothing to say about waiting
    assert again.err.splitlines() == ["read 0 turn(s), ran 0 capture pass(es), wrote 0 memories"]
    assert cli("observe", "--due", str(transcript)).code == 2  # --due goes with --once
    with transcript.open("a") as handle:
        handle.write(exchange("and another", n=3))
    (tmp_path / "x").mkdir()
    waiting = cli("observe", "--once", "--due", "--json", str(tmp_path / "x" / ".." / "t.jsonl")).json()
    assert waiting["waiting"] == 1 and waiting["passes"] == []
    status = cli("observe", "--status", "--json").json()
    assert [t["path"] for t in status["transcripts"]] == [str(transcript)]  # "x/../t.jsonl" is the same file


def test_cli_once_says_what_waits_after_a_pass_and_what_it_cannot_read(cli, project, tmp_path, monkeypatch):
    monkeypatch.chdir(project)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(exchange(f"question number {n} about the parser", n=n) for n in range(1, 8)))
    result = cli("observe", "--once", "--due", "--cadence", "5", str(transcript))
    assert result.code == 0, result.err
    assert "ran 1 capture pass(es)" in result.err
    assert "exchange(s) wait until there are 5 (cadence_turns) for a capture pass" in result.err
    rest = cli("observe", "--once", "--cadence", "5", str(transcript))
    assert "ran 1 capture pass(es)" in rest.err and "wait" not in rest.err
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"foo": 1}\n')
    unknown = cli("observe", "--once", str(notes))
    assert unknown.code == 0
    assert f"{notes} is not a transcript forgemem can read" in unknown.err and "--format" in unknown.err


def test_cli_status_keeps_a_long_transcript_name_whole_in_a_narrow_terminal(cli, project, tmp_path, monkeypatch):
    monkeypatch.chdir(project)
    monkeypatch.setenv("COLUMNS", "80")
    folder = tmp_path / "trial-transcripts-of-the-week"
    folder.mkdir()
    transcript = folder / "session-2026-11-26-refunds-and-retries.jsonl"
    transcript.write_text(exchange("We always squash-merge pull requests.") + exchange("ok then", n=2))
    assert cli("observe", "--once", "--final", str(transcript)).code == 0
    text = cli("observe", "--status").out
    table = text.split("last writes:")[0]
    assert "…" not in table, text  # folded onto more lines, never cut
    assert transcript.name in "".join(table.split()), text


def test_cli_once_says_when_it_prepares_the_embedding_model(cli, project, tmp_path, monkeypatch):
    """The first capture on a machine exports the model (seconds): it says so instead of sitting silent."""
    monkeypatch.chdir(project)
    monkeypatch.setenv("FORGEMEM_MODEL_CACHE", str(tmp_path / "empty-model-cache"))
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(exchange("We always squash-merge pull requests."))
    result = cli("observe", "--once", str(transcript))
    assert result.code == 0, result.err
    assert "preparing the embedding model" in result.err and "once" in result.err
    again = cli("observe", "--once", str(transcript))
    assert "preparing" not in again.err
