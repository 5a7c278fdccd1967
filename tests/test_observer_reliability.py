"""Capture that cannot get stuck: bad records, huge lines, kills, locks, dead passes, a corrupt state.

Real transcript files, real SQLite, real processes killed with SIGKILL; no timing asserts.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from forgemem.capture import health
from forgemem.capture.observer import Observer, ObserverState, state_path
from forgemem.workspace import Workspace

from .conftest import ROOT


def user_line(text: str, session: str = "s-1") -> str:
    return json.dumps({"type": "user", "sessionId": session, "message": {"role": "user", "content": text}}) + "\n"


def assistant_line(text: str, msg: str = "m") -> str:
    return json.dumps({"type": "assistant", "sessionId": "s-1",
                       "message": {"id": msg, "role": "assistant", "content": [{"type": "text", "text": text}]}}) + "\n"


def exchange(user: str, n: int = 0) -> str:
    return user_line(user) + assistant_line(f"Okay {n}.", msg=f"m{n}")


def wait_for(condition, timeout: float = 60.0) -> None:
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise AssertionError("timed out")
        time.sleep(0.01)


@pytest.fixture
def project(empty_store_repo) -> Path:
    return empty_store_repo


@pytest.fixture
def workspace(project) -> Workspace:
    return Workspace.open(cwd=project)


def child(code: str, *args: str) -> subprocess.Popen:
    """A real Python process running `code` with this checkout's forgemem."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


# ------------------------------------------------------------------ bad records

DEEP = "[" * 3000 + "]" * 3000
BAD_RECORDS = {
    "text null": json.dumps({"type": "assistant", "sessionId": "s-1",
                             "message": {"content": [{"type": "text", "text": None}]}}),
    "text 5": json.dumps({"type": "user", "sessionId": "s-1", "message": {"content": [{"type": "text", "text": 5}]}}),
    "5,000-digit integer": '{"type": "user", "sessionId": "s-1", "n": ' + "7" * 5000 + "}",
    "3,000-deep nesting": '{"type": "user", "sessionId": "s-1", "message": {"content": ' + DEEP + "}}",
    "session id a dict": json.dumps({"type": "user", "sessionId": {"a": 1}, "timestamp": [1],
                                     "message": {"content": "and a list for a time"}}),
    "not JSON": '{"type": "user", "sessionId": "s-1", "message": {"content": "cut',
}


@pytest.mark.parametrize("name", list(BAD_RECORDS))
def test_a_bad_record_is_skipped_and_the_next_hooks_keep_capturing(workspace, tmp_path, name):
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(exchange("first request", 1) + BAD_RECORDS[name] + "\n" + exchange("second request", 2))
    said: list[str] = []
    observer = Observer(workspace, [transcript], cadence=10, on_notice=said.append)
    observer.poll(transcript)
    row = observer.state.transcript(str(transcript))
    assert row["offset"] == transcript.stat().st_size  # moved past the bad line
    assert row["humans"] == 2 + (name == "session id a dict")  # its text is read; its odd fields are not
    if name not in ("text null", "text 5", "session id a dict"):  # those are records with no text: nothing to say
        assert [n for n in said if "skipped 1 record" in n and "line 3" in n] == [said[0]]
        assert row["skipped"] == 1
    # the next hooks: more is appended, read, and nothing is said again about the old line
    with open(transcript, "a") as handle:
        handle.write(exchange("third request", 3))
    count = len(said)
    again = Observer(workspace, [transcript], cadence=10, on_notice=said.append)
    assert again.poll(transcript) == 2
    assert len(said) == count
    assert again.state.transcript(str(transcript))["offset"] == transcript.stat().st_size


def test_a_turn_never_holds_a_session_or_time_that_is_not_text(workspace, tmp_path):
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(BAD_RECORDS["session id a dict"] + "\n")
    observer = Observer(workspace, [transcript], cadence=1)
    observer.poll(transcript, final=True)
    [row] = observer.state.pending()
    [turn] = json.loads(row["turns"])
    assert turn["session_id"] is None and turn["timestamp"] is None and turn["text"] == "and a list for a time"


def test_invalid_utf8_is_read_without_its_bad_bytes_and_said(workspace, tmp_path):
    """The record is read (not skipped, as the notice and `--status` used to say), and no replacement character
    reaches the turn: it had reached a memory as "never npm ��"."""
    transcript = tmp_path / "session.jsonl"
    bad = b'{"type": "user", "sessionId": "s-1", "message": {"content": "caf\xe9 \xff\xfe never do this"}}\n'
    transcript.write_bytes(bad + exchange("second", 2).encode())
    said: list[str] = []
    observer = Observer(workspace, [transcript], cadence=10, on_notice=said.append)
    observer.poll(transcript, final=True)
    row = observer.state.transcript(str(transcript))
    assert row["humans"] == 2 and row["skipped"] == 0
    assert len(said) == 1 and "not UTF-8" in said[0] and "skipped" not in said[0], said
    [pending] = observer.state.pending()
    first = json.loads(pending["turns"])[0]["text"]
    assert first.split() == ["caf", "never", "do", "this"] and "\ufffd" not in first


def test_a_transcript_whose_first_record_is_huge_is_still_known(workspace, tmp_path):
    from forgemem.capture.transcripts import detect_format

    transcript = tmp_path / "session.jsonl"
    huge = json.dumps({"type": "user", "sessionId": "s-1", "message": {"role": "user", "content": "x" * (5 << 20)}})
    transcript.write_text(huge + "\n" + exchange("in this repo always use pnpm", 1))
    assert detect_format(transcript) == "claude-code"


def test_deep_nesting_in_the_first_line_does_not_stop_finding_the_format(workspace, tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    transcript = folder / "s.jsonl"
    transcript.write_text(BAD_RECORDS["3,000-deep nesting"] + "\n" + exchange("hello there", 1))
    observer = Observer(workspace, [folder], cadence=10)
    assert observer.transcripts() == [transcript]
    assert observer.once() == (1, 0)  # the human turn (its answer waits for the next one)
    assert observer.state.transcript(str(transcript))["format"] == "claude-code"


def test_a_50_mb_line_is_skipped_without_being_held_and_even_while_it_is_written(workspace, tmp_path):
    transcript = tmp_path / "session.jsonl"
    huge = json.dumps({"type": "user", "sessionId": "s-1", "message": {"content": "x" * (50 * 1024 * 1024)}})
    transcript.write_text(exchange("before", 1) + huge[: 20 * 1024 * 1024])  # still being written
    said: list[str] = []
    observer = Observer(workspace, [transcript], cadence=10, on_notice=said.append)
    observer.poll(transcript)
    row = observer.state.transcript(str(transcript))
    assert row["humans"] == 1 and row["offset"] == transcript.stat().st_size  # passed over what there is
    with open(transcript, "a") as handle:
        handle.write(huge[20 * 1024 * 1024:] + "\n" + exchange("after", 2))
    observer.poll(transcript)
    row = observer.state.transcript(str(transcript))
    assert row["humans"] == 2 and row["offset"] == transcript.stat().st_size and row["skipped"] == 1
    assert len(said) == 1 and "longer than" in said[0]


def test_the_cli_says_a_skipped_record_once_and_status_counts_it(cli, project, tmp_path, monkeypatch):
    monkeypatch.chdir(project)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(BAD_RECORDS["5,000-digit integer"] + "\n" + exchange("hello", 1))
    first = cli("observe", "--once", str(transcript))
    assert first.code == 0, first.err
    assert first.err.count("skipped 1 record(s) that cannot be read: line 1") == 1
    second = cli("observe", "--once", str(transcript))
    assert second.code == 0 and "skipped" not in second.err
    status = cli("observe", "--status", "--json").json()
    assert status["transcripts"][0]["skipped_records"] == 1
    assert "1 record(s) that could not be read were skipped" in cli("observe", "--status").out


# ------------------------------------------------------------------ chunks, kills


def test_reading_commits_in_chunks_so_a_kill_keeps_what_was_read(project, workspace, tmp_path):
    transcript = tmp_path / "big.jsonl"
    filler = "y" * 2000
    total = 6000
    transcript.write_text("".join(exchange(f"request {n} {filler}", n) for n in range(total)))
    path = state_path(workspace)
    ObserverState(path)
    process = child("""
        import sys
        from pathlib import Path
        from forgemem.capture import observer as module
        from forgemem.workspace import Workspace
        module.CHUNK_BYTES = 64 * 1024
        workspace = Workspace.open(cwd=Path(sys.argv[1]))
        module.Observer(workspace, [Path(sys.argv[2])], cadence=5).poll(Path(sys.argv[2]))
        print("finished")
    """, str(project), str(transcript))
    reader = sqlite3.connect(path, timeout=30)
    try:
        def offset() -> int:
            row = reader.execute("SELECT offset FROM transcripts").fetchone()
            return row[0] if row else 0

        wait_for(lambda: offset() > 0)
        process.send_signal(signal.SIGKILL)
        process.wait()
        kept = offset()
    finally:
        reader.close()
    assert 0 < kept < transcript.stat().st_size  # killed mid-file: what was committed is kept
    observer = Observer(workspace, [transcript], cadence=5)
    observer.poll(transcript)
    row = observer.state.transcript(str(transcript))
    assert row["offset"] == transcript.stat().st_size
    assert row["humans"] == total  # nothing read twice, nothing lost
    cadence = observer.state.connection.execute("SELECT COUNT(*) FROM passes WHERE trigger = 'cadence'").fetchone()
    assert cadence[0] == total // 5


def test_the_arc_stays_capped_and_a_pass_holds_its_own_window(workspace, tmp_path):
    from forgemem.capture.observer import ARC_TURNS

    transcript = tmp_path / "long.jsonl"
    transcript.write_text("".join(exchange(f"request {n}", n) for n in range(1000)))
    observer = Observer(workspace, [transcript], cadence=5)
    observer.poll(transcript)
    arc = observer.state.connection.execute("SELECT COUNT(*) FROM arc").fetchone()[0]
    assert arc <= ARC_TURNS
    last = observer.state.connection.execute("SELECT turns, context FROM passes ORDER BY id DESC LIMIT 1").fetchone()
    turns, context = json.loads(last["turns"]), json.loads(last["context"])
    assert [t["text"] for t in turns if t["role"] == "user"] == [f"request {n}" for n in range(995, 1000)]
    assert [t["text"] for t in context] == ["request 994", "Okay 994."]


# ------------------------------------------------------------------ locks


HOLD_LOCK = """
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    print("locked", flush=True)
    sys.stdin.readline() if sys.argv[2] == "wait" else time.sleep(float(sys.argv[2]))
    conn.execute("COMMIT")
"""


def test_a_lock_held_by_another_process_is_waited_for(workspace, tmp_path):
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(exchange("hello", 1))
    observer = Observer(workspace, [transcript], cadence=10)
    holder = child(HOLD_LOCK, str(observer.state.path), "1.5")
    assert holder.stdout.readline().strip() == "locked"
    assert observer.poll(transcript) == 1  # waited (busy_timeout, then retries), then read
    holder.wait(30)
    assert observer.notices == []


def test_a_lock_held_too_long_skips_cleanly_and_the_next_look_reads(workspace, tmp_path):
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(exchange("hello", 1))
    path = state_path(workspace)
    ObserverState(path)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(HOLD_LOCK), str(path), "wait"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        observer = Observer(workspace, [transcript], cadence=1, state=ObserverState(path, patience=0.5))
        assert observer.once() == (0, 0)  # no error: skipped for now
        assert len(observer.notices) == 1 and "stayed locked by another process" in observer.notices[0]
    finally:
        holder.communicate("go\n", timeout=30)
    assert observer.poll(transcript) == 1


def test_two_observer_processes_on_one_transcript_read_it_once(project, tmp_path):
    transcript = tmp_path / "shared.jsonl"
    total = 3000
    transcript.write_text("".join(exchange(f"request {n} " + "z" * 1500, n) for n in range(total)))
    code = """
        import sys
        from pathlib import Path
        from forgemem.capture import observer as module
        from forgemem.workspace import Workspace
        module.CHUNK_BYTES = 64 * 1024
        observer = module.Observer(Workspace.open(cwd=Path(sys.argv[1])), [Path(sys.argv[2])], cadence=5)
        print(observer.poll(Path(sys.argv[2])), len(observer.notices))
    """
    processes = [child(code, str(project), str(transcript)) for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in processes]
    assert [p.returncode for p in processes] == [0, 0], outputs
    read = [int(out.split()[0]) for out, _ in outputs]
    assert sum(read) == 2 * total - 1  # every turn once between them (the last answer waits for the next turn)
    state = ObserverState(state_path(Workspace.open(cwd=project)))
    assert state.transcript(str(transcript))["humans"] == total


# ------------------------------------------------------------------ dead passes

CLAIM_AND_HANG = """
    import sys, time
    from pathlib import Path
    from forgemem.capture.state import ObserverState
    state = ObserverState(Path(sys.argv[1]))
    [row] = state.pending()
    assert state.claim(row["id"])
    print("claimed", flush=True)
    time.sleep(600)
"""


@pytest.mark.parametrize("reaped", [True, False], ids=["reaped", "zombie"])
def test_a_pass_whose_process_was_killed_runs_again_at_once(workspace, tmp_path, reaped):
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(exchange("Never commit secrets to the repo.", 1))
    observer = Observer(workspace, [transcript], cadence=1)
    observer.poll(transcript)
    holder = child(CLAIM_AND_HANG, str(observer.state.path))
    assert holder.stdout.readline().strip() == "claimed"
    assert observer.run_pending() == 0  # alive: it may just be slow
    holder.send_signal(signal.SIGKILL)
    if reaped:
        holder.wait()
    else:
        wait_for(lambda: health.process_start(holder.pid) is None)  # a zombie until its parent waits
    try:
        assert observer.run_pending() == 1
        [done] = observer.state.passes(str(transcript))
        assert done["status"] == "done" and done["attempts"] == 2 and done["pid"] == os.getpid()
    finally:
        holder.wait()


def test_a_reused_pid_does_not_keep_a_dead_claim(workspace, tmp_path):
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(exchange("hello", 1))
    observer = Observer(workspace, [transcript], cadence=1)
    observer.poll(transcript)
    [row] = observer.state.pending()
    assert observer.state.claim(row["id"])
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        conn = observer.state.connection
        # the claim names a live process of this host, started at another time: a later process, same pid
        conn.execute("UPDATE passes SET pid = ?, pid_start = 'another-start' WHERE id = ?", (sleeper.pid, row["id"]))
        assert observer.state.reclaim_dead() == 1
        assert observer.state.claim(row["id"])
        # ... and with its real start time, the same process keeps its claim
        conn.execute("UPDATE passes SET pid = ?, pid_start = ? WHERE id = ?",
                     (sleeper.pid, health.process_start(sleeper.pid), row["id"]))
        assert observer.state.reclaim_dead() == 0
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_pass_that_keeps_killing_its_process_is_failed_not_started_forever(workspace, tmp_path):
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(exchange("hello", 1))
    observer = Observer(workspace, [transcript], cadence=1)
    observer.poll(transcript)
    for _ in range(3):
        holder = child(CLAIM_AND_HANG, str(observer.state.path))
        assert holder.stdout.readline().strip() == "claimed"
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert observer.run_pending() == 0
    [failed] = observer.state.passes(str(transcript))
    assert failed["status"] == "failed" and "died 3 times" in failed["error"]


# ------------------------------------------------------------------ a corrupt state


def corrupt(path: Path, how: str) -> bytes | None:
    """Break the state at `path` as `how` says; returns the bytes left there (to find them aside)."""
    if how == "garbage":
        path.write_bytes(os.urandom(8192))
    elif how == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 3])
    elif how == "directory":
        path.unlink()
        path.mkdir()
        (path / "inside").write_text("kept")
        return None
    elif how == "its log a folder":
        Path(f"{path}-wal").mkdir()
    return path.read_bytes()


def filled_state(workspace: Workspace, tmp_path: Path) -> tuple[Path, Path]:
    transcript = tmp_path / "s.jsonl"
    transcript.write_text("".join(exchange(f"request {n} " + "w" * 500, n) for n in range(40)))
    observer = Observer(workspace, [transcript], cadence=5)
    observer.poll(transcript)
    observer.state.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    observer.state.close()
    return observer.state.path, transcript


@pytest.mark.parametrize("how", ["garbage", "truncated", "directory", "its log a folder"])
def test_a_corrupt_state_is_moved_aside_rebuilt_and_said_once(cli, project, workspace, tmp_path, monkeypatch, how):
    path, transcript = filled_state(workspace, tmp_path)
    left = corrupt(path, how)
    monkeypatch.chdir(project)
    first = cli("observe", "--once", str(transcript))
    assert first.code == 0, first.err
    assert first.err.count("could not be read") == 1 and "moved to observer.sqlite.corrupt-" in first.err
    [aside] = [p for p in path.parent.glob("observer.sqlite.corrupt-*") if not p.name.endswith(("-wal", "-shm"))]
    if left is None:
        assert (aside / "inside").read_text() == "kept"  # never deleted
    else:
        assert aside.read_bytes() == left
    assert health.problem(path) is None
    second = cli("observe", "--once", str(transcript))
    assert second.code == 0 and "could not be read" not in second.err  # said once
    status = cli("observe", "--status")
    assert "note (" in status.out and "moved to observer.sqlite.corrupt-" in status.out
    assert ObserverState(path).transcript(str(transcript))["offset"] == transcript.stat().st_size


def test_what_can_be_read_of_a_damaged_state_is_kept(workspace, tmp_path):
    path, transcript = filled_state(workspace, tmp_path)
    conn = sqlite3.connect(path)
    [root] = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'passes'").fetchone()
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    with open(path, "r+b") as handle:  # the passes table's root page is overwritten; transcripts is intact
        handle.seek((root - 1) * page)
        handle.write(b"\xa5" * page)
    said: list[str] = []
    observer = Observer(workspace, [transcript], cadence=5, on_notice=said.append)
    assert len(said) == 1 and "keeping 1 transcript offset(s)" in said[0]
    assert observer.poll(transcript) == 0  # not read again from the start


def test_a_hook_run_says_a_rebuilt_state_in_the_hooks_log_once(project, workspace, tmp_path):
    from forgemem.config import user_cache_dir
    from forgemem.spawn import start_detached

    path, transcript = filled_state(workspace, tmp_path)
    corrupt(path, "garbage")
    log = user_cache_dir() / "hooks.log"
    for _ in range(2):  # what a Stop hook starts, twice
        start_detached(["-C", str(project), "observe", "--once", "--due", "--", str(transcript)], log_path=log).wait(120)
    lines = log.read_text().splitlines()
    assert len([line for line in lines if "could not be read" in line]) == 1, lines


def test_the_next_prompt_rebuilds_a_corrupt_state_and_says_it_once(workspace, tmp_path):
    from forgemem.capture.announce import take

    path, _ = filled_state(workspace, tmp_path)
    corrupt(path, "garbage")
    said: list[str] = []
    assert take(path, on_error=said.append) == []
    assert take(path, on_error=said.append) == []
    assert len(said) == 1 and "moved to observer.sqlite.corrupt-" in said[0]


def test_doctor_checks_and_repairs_the_observer_state(cli, project, workspace, tmp_path, monkeypatch):
    monkeypatch.chdir(project)
    path, transcript = filled_state(workspace, tmp_path)
    result = cli("doctor")
    assert result.code == 0, result.out + result.err
    assert "observer state: readable" in result.out
    corrupt(path, "garbage")
    result = cli("doctor", "--json")
    assert result.code == 0, result.err
    report = result.json()["observer"]
    assert report["problems"] and "moved to observer.sqlite.corrupt-" in report["repaired"][0] and report["ok"]
    assert health.problem(path) is None
    # a pass left running by a process that died is run again, and said
    observer = Observer(workspace, [transcript], cadence=5)
    observer.poll(transcript)
    [row, *_] = observer.state.pending()
    holder = child(CLAIM_AND_HANG.replace("[row] = state.pending()", "row = state.pending()[0]"), str(path))
    assert holder.stdout.readline().strip() == "claimed"
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    text = cli("doctor").out
    assert "1 pass(es) left running by a process that died: run again" in text
    assert "kept aside" in text


# ------------------------------------------------------------------ any bytes at all

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

#: a human turn in each line format, appended after the noise: it must still be read
AFTER = {
    "claude-code": user_line("after the noise"),
    "codex": json.dumps({"type": "event_msg", "payload": {"type": "user_message", "message": "after the noise"}}) + "\n",
    "jsonl": json.dumps({"role": "user", "content": "after the noise"}) + "\n",
    "aider": "#### after the noise\n\nok\n",
}
KEYS = ["type", "message", "content", "text", "sessionId", "session_id", "payload", "role", "timestamp", "id",
        "isSidechain", "isCompactSummary", "subtype", "operation", "toolUseResult", "isMeta"]
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
    | st.sampled_from(["user", "assistant", "text", "event_msg", "user_message", "agent_message", "session_meta",
                       "queue-operation", "enqueue", "system", "compact_boundary", "compacted", "compaction"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5),
    max_leaves=20,
)
RECORDS = st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=6).map(lambda d: json.dumps(d).encode())
NOISE = st.lists(st.binary(max_size=600) | RECORDS | st.sampled_from([
    b"[" * 5000, b'{"n": ' + b"9" * 6000 + b"}", b"\xff\xfe\xfd", b"####", b"#### ", b"\r", b"\x00" * 10,
]), max_size=6).map(lambda parts: b"\n".join(parts))

_seen = iter(range(10**9))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fmt=st.sampled_from(sorted(AFTER)), noise=NOISE)
def test_any_bytes_appended_never_make_observe_raise_nor_stop_the_offset(workspace, tmp_path, fmt, noise):
    transcript = tmp_path / f"t{next(_seen)}.{'md' if fmt == 'aider' else 'jsonl'}"
    transcript.write_bytes(AFTER[fmt].replace("after the noise", "before the noise").encode())
    observer = Observer(workspace, [transcript], fmt=fmt, cadence=3)
    observer.poll(transcript)
    with open(transcript, "ab") as handle:
        handle.write(noise + b"\n" + AFTER[fmt].encode())
    observer.poll(transcript, final=True)  # reads, and records what fell due (run by no one here)
    row = observer.state.transcript(str(transcript))
    assert row["offset"] == transcript.stat().st_size
    newest = observer.state.connection.execute(
        "SELECT data FROM arc WHERE path = ? AND json_extract(data, '$.role') = 'user' ORDER BY turn DESC LIMIT 1",
        (str(transcript),)).fetchone()
    passes = observer.state.connection.execute("SELECT turns FROM passes WHERE path = ?", (str(transcript),))
    texts = [newest["data"]] if newest else []
    texts += [p["turns"] for p in passes]
    assert any("after the noise" in t for t in texts)


@settings(max_examples=100, deadline=None)
@given(document=st.dictionaries(st.sampled_from(["sessionId", "messages"]), VALUES | st.lists(VALUES, max_size=5)))
def test_any_gemini_session_never_makes_reading_raise(tmp_path_factory, document):
    from forgemem.capture.transcripts import read_new

    path = tmp_path_factory.mktemp("gemini") / "session.json"
    path.write_text(json.dumps(document))
    result = read_new(path, "gemini")
    json.dumps(result.state)  # what is stored between reads
