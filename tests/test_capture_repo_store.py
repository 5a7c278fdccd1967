"""Capture in a git repository that has no `.forge/` yet: repo knowledge gets the repo's store, created on
the first write (as `forgemem init` would, with the .gitignore that keeps its cache out of git), never the
personal store; nothing is created when nothing is written for the repo, or outside a repository."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import git


def session(*turns: str) -> str:
    lines = []
    for n, text in enumerate(turns):
        lines.append(json.dumps({"type": "user", "sessionId": "s", "message": {"role": "user", "content": text}}))
        lines.append(json.dumps({"type": "assistant", "sessionId": "s", "message": {
            "id": f"m{n}", "role": "assistant", "content": [{"type": "text", "text": "Okay."}]}}))
    return "\n".join(lines) + "\n"


def memory_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.md")) if folder.is_dir() else []


def test_repo_knowledge_creates_the_repo_store_at_the_git_root(cli, git_repo, tmp_path, monkeypatch, isolated_home):
    (git_repo / "src").mkdir()
    monkeypatch.chdir(git_repo / "src")  # a sub-folder: the store goes to the root, as init puts it
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(session("never use npm in this repository, it's pnpm only",
                                  "fix the typo in the footer"))
    result = cli("observe", "--once", "--final", str(transcript))
    assert result.code == 0, result.err
    assert "created the repository's store" in result.err
    [written] = memory_files(git_repo / ".forge" / "memory")
    assert "pnpm" in written.read_text()
    assert memory_files(isolated_home / ".forge" / "memory") == []
    # what git sees: the store and its config, never a cache file
    status = git(git_repo, "status", "--porcelain", "--untracked-files=all")
    assert ".forge/.gitignore" in status and "cache" not in status
    # a second run goes on where the first stopped: its state now lives in the repo's cache, which takes over
    # what the user's cache knew of this transcript (no turn read twice, one history in `observe --status`)
    with transcript.open("a") as handle:
        handle.write(session("ok thanks"))
    again = cli("observe", "--once", str(transcript))
    assert again.code == 0 and "created" not in again.err
    assert again.err.startswith("read 2 turn(s), ran 1 capture pass(es)"), again.err
    assert len(memory_files(git_repo / ".forge" / "memory")) == 1
    assert "cache" not in git(git_repo, "status", "--porcelain", "--untracked-files=all")
    status = cli("observe", "--status", "--json").json()
    assert [t["path"] for t in status["transcripts"]] == [str(transcript)]
    assert sum(t["passes"]["done"] for t in status["transcripts"]) == 2, status


def test_nothing_is_created_without_a_repo_memory(cli, git_repo, tmp_path, monkeypatch, isolated_home):
    monkeypatch.chdir(git_repo)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(session("personally I always want answers short and to the point, in every project",
                                  "thanks, that works"))
    result = cli("observe", "--once", "--final", str(transcript))
    assert result.code == 0, result.err
    assert not (git_repo / ".forge").exists()
    assert len(memory_files(isolated_home / ".forge" / "memory")) == 1
    assert git(git_repo, "status", "--porcelain", "--untracked-files=all") == ""


def test_outside_a_repository_everything_is_personal(cli, tmp_path, monkeypatch, isolated_home):
    folder = tmp_path / "plain"
    folder.mkdir()
    monkeypatch.chdir(folder)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(session("never use npm in this repository, it's pnpm only"))
    assert cli("observe", "--once", "--final", str(transcript)).code == 0
    assert not (folder / ".forge").exists()
    assert len(memory_files(isolated_home / ".forge" / "memory")) == 1


def test_a_forge_folder_that_is_not_a_store_is_left_alone(cli, git_repo, tmp_path, monkeypatch, isolated_home):
    (git_repo / ".forge").mkdir()  # someone's own folder of that name, or one forgemem must not use
    (git_repo / ".forge" / "notes.txt").write_text("mine\n")
    monkeypatch.chdir(git_repo)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(session("never use npm in this repository, it's pnpm only"))
    assert cli("observe", "--once", "--final", str(transcript)).code == 0
    assert sorted(p.name for p in (git_repo / ".forge").iterdir()) == ["notes.txt"]


def test_the_repository_state_takes_over_only_the_transcripts_it_watches(tmp_path):
    """A folder target takes over the files under it, compared as text: "_" in its name matches only "_"."""
    from forgemem.capture.state import ObserverState

    user = ObserverState(tmp_path / "user" / "observer.sqlite")
    watched, sibling = tmp_path / "my_sessions", tmp_path / "myXsessions"
    for path in (watched / "a.jsonl", sibling / "b.jsonl"):
        user.connection.execute("INSERT INTO transcripts (path, format, offset) VALUES (?, 'jsonl', 42)", (str(path),))
    repo = ObserverState(tmp_path / "repo" / "observer.sqlite")
    assert repo.adopt(user.path, [watched]) == 1
    assert [row["path"] for row in repo.transcripts()] == [str(watched / "a.jsonl")]
    assert repo.transcripts()[0]["offset"] == 42
    assert repo.adopt(user.path, [sibling]) == 0  # only into a state that knows no transcript yet
