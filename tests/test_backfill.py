"""`forgemem observe --backfill`: where each agent keeps a project's sessions, capture oldest first, resuming
after a kill -9 without repeating or missing anything. Real files, real git repositories, real processes."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from forgemem.capture import backfill
from forgemem.capture.observer import claude_code_folder
from forgemem.workspace import init_forge_dir

from .conftest import ROOT, git

REAL = ROOT.parent / "shared" / "eval" / "transcripts"
real = pytest.mark.skipif(not REAL.is_dir(), reason="../shared/eval/transcripts is not here")


def user_line(text: str, session: str = "s-1") -> str:
    return json.dumps({"type": "user", "sessionId": session, "message": {"role": "user", "content": text}}) + "\n"


def assistant_line(text: str, msg: str) -> str:
    return json.dumps({"type": "assistant", "sessionId": "s-1",
                       "message": {"id": msg, "role": "assistant", "content": [{"type": "text", "text": text}]}}) + "\n"


def codex_rollout(cwd: str, text: str = "From now on always run the linter before committing.") -> str:
    meta = {"type": "session_meta", "payload": {"id": "019e-test", "cwd": cwd, "originator": "codex-tui"}}
    said = {"type": "event_msg", "payload": {"type": "user_message", "message": text}}
    answer = {"type": "event_msg", "payload": {"type": "agent_message", "message": "Will do."}}
    return "".join(json.dumps(r) + "\n" for r in (meta, said, answer))


@pytest.fixture
def project(empty_store_repo) -> Path:
    return empty_store_repo


# ------------------------------------------------------------------ where the sessions are


def test_discover_finds_each_agents_sessions_of_this_repository_only(project, isolated_home):
    claude = claude_code_folder(project, isolated_home)
    (claude / "s1" / "subagents").mkdir(parents=True)
    (claude / "s1.jsonl").write_text(user_line("hi"))
    (claude / "s1" / "subagents" / "agent-1.jsonl").write_text(user_line("sub"))
    other = claude_code_folder(project.parent / "elsewhere", isolated_home)
    other.mkdir(parents=True)
    (other / "x.jsonl").write_text(user_line("not ours"))
    day = isolated_home / ".codex" / "sessions" / "2026" / "05" / "11"
    day.mkdir(parents=True)
    (day / "rollout-a.jsonl").write_text(codex_rollout(str(project)))
    (day / "rollout-b.jsonl").write_text(codex_rollout(str(project / "src")))  # a folder inside it
    (day / "rollout-c.jsonl").write_text(codex_rollout(str(project.parent / "elsewhere")))
    (day / "rollout-d.jsonl").write_text(codex_rollout(str(project) + "-fork"))  # a sibling sharing the prefix
    (day / "rollout-e.jsonl").write_text("not json\n")
    tmp = isolated_home / ".gemini" / "tmp"
    by_hash = tmp / hashlib.sha256(str(project).encode()).hexdigest() / "chats"
    by_name = tmp / "project-1" / "chats"
    by_marker = tmp / "project-2"
    for folder in (by_hash, by_name, by_marker / "chats", tmp / "unrelated" / "chats"):
        folder.mkdir(parents=True)
        (folder / "session-1.json").write_text(json.dumps({"sessionId": "g", "messages": []}))
    (isolated_home / ".gemini" / "projects.json").write_text(json.dumps({"projects": {str(project): "project-1"}}))
    (by_marker / ".project_root").write_text(str(project) + "\n")
    (tmp / "unrelated" / ".project_root").write_text("/somewhere/else\n")
    (project / ".aider.chat.history.md").write_text("# aider chat started at 2026-01-01 10:00:00\n")

    found = {(f.agent, f.path.relative_to(isolated_home if isolated_home in f.path.parents else project).as_posix())
             for f in backfill.discover(project, isolated_home)}
    mangled = claude.name
    assert found == {
        ("claude-code", f".claude/projects/{mangled}/s1.jsonl"),
        ("claude-code", f".claude/projects/{mangled}/s1/subagents/agent-1.jsonl"),
        ("codex", ".codex/sessions/2026/05/11/rollout-a.jsonl"),
        ("codex", ".codex/sessions/2026/05/11/rollout-b.jsonl"),
        ("gemini", f".gemini/tmp/{by_hash.parent.name}/chats/session-1.json"),
        ("gemini", ".gemini/tmp/project-1/chats/session-1.json"),
        ("gemini", ".gemini/tmp/project-2/chats/session-1.json"),
        ("aider", ".aider.chat.history.md"),
    }


def test_codex_home_is_honoured(project, isolated_home, tmp_path, monkeypatch):
    elsewhere = tmp_path / "codex-home"
    (elsewhere / "sessions").mkdir(parents=True)
    (elsewhere / "sessions" / "rollout-x.jsonl").write_text(codex_rollout(str(project)))
    monkeypatch.setenv("CODEX_HOME", str(elsewhere))
    assert [f.path for f in backfill.discover(project, isolated_home)] == [elsewhere / "sessions" / "rollout-x.jsonl"]


# ------------------------------------------------------------------ capturing, in-process


def place_session(project: Path, home: Path, name: str, *said: str, mtime: int) -> Path:
    folder = claude_code_folder(project, home)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("".join(user_line(text) + assistant_line("Okay.", f"m{i}") for i, text in enumerate(said)))
    os.utime(path, (mtime, mtime))
    return path


def test_backfill_captures_oldest_first_and_a_second_run_skips_what_was_done(cli, project, isolated_home,
                                                                             monkeypatch):
    monkeypatch.chdir(project)
    newer = place_session(project, isolated_home, "b.jsonl", "Always use uv, never pip, in this repository.",
                          mtime=2_000_000_000)
    older = place_session(project, isolated_home, "a.jsonl", "Please never commit directly to the main branch.",
                          mtime=1_000_000_000)
    first = cli("observe", "--backfill", "--json")
    assert first.code == 0, first.err
    data = first.json()
    assert [t["path"] for t in data["transcripts"]] == [str(older), str(newer)]  # oldest first
    assert data["captured"] == 2 and data["done_before"] == 0 and data["failed_passes"] == 0
    texts = [w for w in data["written"]]
    assert len(texts) >= 2 and all(w["scope"] == "repo" for w in texts)
    assert sum(data["by_scope_and_category"]["repo"].values()) == len(texts)
    again = cli("observe", "--backfill", "--json").json()
    assert again["done_before"] == 2 and again["written"] == [] and again["captured"] == 0
    # a session that went on later is read from where it was left, and only that part is captured
    with newer.open("a") as handle:
        handle.write(user_line("We decided to keep the API versioned under /v2 from now on.")
                     + assistant_line("Noted.", "m9"))
    later = cli("observe", "--backfill", "--json").json()
    assert later["done_before"] == 1 and later["captured"] == 1
    assert [t["path"] for t in later["transcripts"] if t["status"] == "captured"] == [str(newer)]
    memories = list((project / ".forge" / "memory").rglob("*.md"))
    assert len(memories) == len(texts) + len(later["written"])


def test_with_capture_review_everything_lands_as_proposed(cli, project, isolated_home, monkeypatch):
    monkeypatch.chdir(project)
    config = project / ".forge" / "config.yaml"
    config.write_text(config.read_text().replace("  # capture_review: false", "  capture_review: true"))
    place_session(project, isolated_home, "a.jsonl", "Always use uv, never pip, in this repository.",
                  "From now on, every public function gets a docstring.", mtime=1_000_000_000)
    result = cli("observe", "--backfill")
    assert result.code == 0, result.err
    files = list((project / ".forge" / "memory").rglob("*.md"))
    assert files and all("status: proposed" in f.read_text() for f in files)
    assert f"the {len(files)} new memor" in result.out and "forgemem review" in result.out


def test_path_limits_the_backfill_and_bad_usage_is_one_sentence(cli, project, isolated_home, tmp_path,
                                                                monkeypatch):
    monkeypatch.chdir(project)
    place_session(project, isolated_home, "a.jsonl", "Always use uv, never pip.", mtime=1_000_000_000)
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "notes.txt").write_text("not a transcript")
    one = folder / "one.jsonl"
    one.write_text(user_line("Never push on Fridays.") + assistant_line("Okay.", "m1"))
    data = cli("observe", "--backfill", str(folder), "--json").json()
    assert [t["path"] for t in data["transcripts"]] == [str(one)]  # the Claude Code folder is not looked at
    assert cli("observe", "--backfill", str(tmp_path / "missing")).code == 2
    assert cli("observe", "--backfill", str(one), str(folder)).code == 2
    both = cli("observe", "--backfill", "--once")
    assert both.code == 2 and "--backfill goes without --once" in both.err


def test_a_repository_without_a_store_is_told_to_init_first(cli, git_repo, isolated_home, monkeypatch):
    monkeypatch.chdir(git_repo)
    place_session(git_repo, isolated_home, "a.jsonl", "Always use uv, never pip.", mtime=1_000_000_000)
    result = cli("observe", "--backfill")
    assert result.code == 2 and "run `forgemem init` first" in result.err
    assert not (git_repo / ".forge").exists()


def test_nothing_found_says_where_it_looked(cli, project, monkeypatch):
    monkeypatch.chdir(project)
    result = cli("observe", "--backfill")
    assert result.code == 0 and "no past sessions found" in result.out and ".claude/projects" in result.out


# ------------------------------------------------------------------ kill -9 and resume, real transcripts


def place_real(home: Path, root: Path) -> None:
    """../shared/eval/transcripts where each agent keeps a session of `root`, aider's the oldest."""
    shutil.copytree(REAL / "claude-code", claude_code_folder(root, home))
    [rollout] = (REAL / "codex").rglob("rollout-*.jsonl")
    lines = rollout.read_text(encoding="utf-8").splitlines(keepends=True)
    meta = json.loads(lines[0])
    meta["payload"]["cwd"] = str(root)  # the session was run in this repository
    day = home / ".codex" / "sessions" / "2026" / "05" / "11"
    day.mkdir(parents=True)
    (day / rollout.name).write_text(json.dumps(meta) + "\n" + "".join(lines[1:]), encoding="utf-8")
    chats = home / ".gemini" / "tmp" / hashlib.sha256(str(root).encode()).hexdigest() / "chats"
    shutil.copytree(REAL / "gemini" / "codemie-ai-codemie-code", chats)
    [aider] = (REAL / "aider").rglob("*.md")
    shutil.copy(aider, root / ".aider.chat.history.md")
    for path in [*home.rglob("*"), root / ".aider.chat.history.md"]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    os.utime(root / ".aider.chat.history.md", (1_000_000_000, 1_000_000_000))


def make_project(base: Path) -> tuple[Path, Path]:
    home, root = base / "home", base / "project"
    home.mkdir(parents=True)
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    init_forge_dir(root / ".forge")
    place_real(home, root)
    return home, root


def start(home: Path, root: Path) -> subprocess.Popen:
    env = {**os.environ, "HOME": str(home), "FORGEMEM_USER_DIR": str(home / ".forge" / "memory"),
           "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "forgemem", "-C", str(root), "observe", "--backfill", "--json"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen) -> dict:
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err
    return json.loads(out)


def memories(root: Path) -> list[str]:
    """Every memory's text, words only (what a duplicate would share)."""
    texts = []
    for path in (root / ".forge" / "memory").rglob("*.md"):
        body = path.read_text(encoding="utf-8").split("\n---\n", 1)[1]
        texts.append(" ".join(re.findall(r"\w+", body.lower())))
    return sorted(texts)


def passes_by_transcript(root: Path, home: Path) -> dict[str, list[str]]:
    db = sqlite3.connect(root / ".forge" / "cache" / "observer.sqlite")
    try:
        rows = db.execute("SELECT path, status FROM passes ORDER BY id").fetchall()
    finally:
        db.close()
    found: dict[str, list[str]] = {}
    for path, status in rows:
        name = Path(path).relative_to(home if Path(home) in Path(path).parents else root).as_posix()
        name = name.replace(claude_code_folder(root, home).name, "<project>").replace(
            hashlib.sha256(str(root).encode()).hexdigest(), "<hash>")
        found.setdefault(name, []).append(status)
    return found


@real
@pytest.mark.slow
def test_a_backfill_killed_mid_transcript_resumes_without_repeating_or_missing(tmp_path):
    home, root = make_project(tmp_path / "interrupted")
    state = root / ".forge" / "cache" / "observer.sqlite"
    aider = str(root / ".aider.chat.history.md")
    process = start(home, root)

    def aider_passes() -> dict[str, int]:
        if not state.exists():
            return {}
        try:
            db = sqlite3.connect(f"file:{state}?mode=ro", uri=True, timeout=5)
            try:
                return dict(db.execute("SELECT status, COUNT(*) FROM passes WHERE path = ? GROUP BY status",
                                       (aider,)).fetchall())
            finally:
                db.close()
        except sqlite3.Error:
            return {}

    deadline = time.monotonic() + 300
    while not (aider_passes().get("done", 0) >= 3 and aider_passes().get("pending", 0) >= 3):
        assert process.poll() is None, "the backfill ended before it could be interrupted"
        assert time.monotonic() < deadline, "timed out waiting for the backfill to get going"
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)  # in the middle of the aider history's passes
    process.wait()
    left = aider_passes()
    assert left.get("pending", 0) + left.get("running", 0) >= 1  # it really stopped half-way

    resumed = finish(start(home, root))
    assert resumed["failed_passes"] == 0
    assert {t["status"] for t in resumed["transcripts"]} <= {"captured", "done before"}
    aider_result = next(t for t in resumed["transcripts"] if t["path"] == aider)
    assert aider_result["status"] == "captured" and 0 < aider_result["passes"] < sum(left.values())

    clean_home, clean_root = make_project(tmp_path / "clean")
    clean = finish(start(clean_home, clean_root))
    assert clean["found"] == resumed["found"] == 11  # every transcript but Gemini's logs.json
    got, expected = memories(root), memories(clean_root)
    assert len(got) == len(set(got))  # no memory written twice
    assert got == expected  # and none missed: the same memories as a run never interrupted
    assert passes_by_transcript(root, home) == passes_by_transcript(clean_root, clean_home)  # each pass ran once
    assert set(s for ps in passes_by_transcript(root, home).values() for s in ps) == {"done"}

    third = finish(start(home, root))
    assert third["done_before"] == 11 and third["written"] == [] and third["captured"] == 0
