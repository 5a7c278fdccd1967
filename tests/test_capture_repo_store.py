"""Capture in a git repository that has no `.forge/` yet: repo knowledge gets the repo's store, created on
the first write (as `forgemem init` would, with the .gitignore that keeps its cache out of git), never the
personal store; nothing is created when nothing is written for the repo, or outside a repository."""

from __future__ import annotations

import json
import shutil
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
    # what this state knows already is never taken over again (its own offsets are newer); another transcript is
    repo.connection.execute("UPDATE transcripts SET offset = 99 WHERE path = ?", (str(watched / "a.jsonl"),))
    assert repo.adopt(user.path, [watched]) == 0 and repo.transcripts()[0]["offset"] == 99
    assert repo.adopt(user.path, [sibling]) == 1


def test_a_run_that_creates_the_repo_store_relates_what_it_reads_next_to_what_it_wrote(
        cli, git_repo, tmp_path, monkeypatch, isolated_home):
    """Found by a new-user trial: the repository's store, created by the first write of a run, was not read by the
    rest of that run, so a change of mind in the next transcript was lost (or written beside the old rule)."""
    monkeypatch.chdir(git_repo)
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text(session("in this repo we deploy with helm charts, one values file per environment"))
    second.write_text(session("helm charts are gone, it's kustomize now. overlays live in deploy/overlays/<env>"))
    assert cli("observe", "--once", "--final", str(first), str(second)).code == 0
    current = [m["content"] for m in cli("list", "--json").json()]
    assert len(current) == 1 and "kustomize" in current[0], current


def test_a_later_run_takes_over_each_transcript_the_first_one_read(cli, git_repo, tmp_path, monkeypatch,
                                                                   isolated_home):
    """Found by a new-user trial: the repository's state took over the user cache's only when it knew no transcript,
    so a transcript read by the run that created the store, then read again after another one, was read from its
    start, and wrote back a memory purged since."""
    monkeypatch.chdir(git_repo)
    first, second = tmp_path / "s1.jsonl", tmp_path / "s2.jsonl"
    first.write_text(session("in this repo always use tabs for indentation, never spaces"))
    second.write_text(session("in this repo commit messages follow conventional commits"))
    assert cli("observe", "--once", "--final", str(first)).code == 0  # creates the store: state in the user's cache
    [tabs] = memory_files(git_repo / ".forge" / "memory")
    # ... handed to the repository's cache at the end of that run: its status shows the run at once
    status = cli("observe", "--status", "--json").json()
    assert [t["path"] for t in status["transcripts"]] == [str(first)], status
    assert cli("forget", "--purge", tabs.stem.rsplit("-", 1)[-1]).code == 0
    assert cli("observe", "--once", "--final", str(second)).code == 0
    again = cli("observe", "--once", "--final", str(first))
    assert again.code == 0 and again.err.startswith("read 0 turn(s)"), again.err
    assert not any("tabs" in path.read_text() for path in memory_files(git_repo / ".forge" / "memory"))


def test_a_repository_cache_that_cannot_hold_the_state_leaves_it_where_it_is(git_repo, tmp_path, monkeypatch,
                                                                             isolated_home, real_embedder):
    """The end-of-run handover is a courtesy: where the repository's cache cannot hold the state, the run still ends
    well, says so once, and the next run takes the state over."""
    from forgemem import Workspace
    from forgemem.capture.capturer import Capturer
    from forgemem.capture.observer import Observer
    from forgemem.recall.engine import RecallEngine

    monkeypatch.chdir(git_repo)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(session("never use npm in this repository, it's pnpm only"))
    workspace = Workspace.open(git_repo, repo_on_first_write=True)
    said: list[str] = []
    observer = Observer(workspace, [transcript], capturer=Capturer(workspace, RecallEngine(workspace,
                                                                                           embedder=real_embedder)),
                        on_notice=said.append)
    observer.once(final=True)
    cache = git_repo / ".forge" / "cache"
    for index in workspace.indexes().values():
        index.close()
    shutil.rmtree(cache)
    cache.write_text("not a folder\n")  # what cannot hold it
    assert observer.hand_over() == 0
    assert said and "stays in" in said[-1], said
    assert cache.read_text() == "not a folder\n"


def _session_in(folder: Path, *turns: str) -> str:
    """A Claude Code session whose records say it ran in `folder`."""
    lines = []
    for n, text in enumerate(turns):
        lines.append(json.dumps({"type": "user", "sessionId": "s", "cwd": str(folder),
                                 "message": {"role": "user", "content": text}}))
        lines.append(json.dumps({"type": "assistant", "sessionId": "s", "cwd": str(folder), "message": {
            "id": f"m{n}", "role": "assistant", "content": [{"type": "text", "text": "Okay."}]}}))
    return "\n".join(lines) + "\n"


def test_a_session_of_another_project_on_this_machine_is_read_there_not_here(cli, git_repo, tmp_path, monkeypatch,
                                                                            isolated_home):
    """Found by a new-user trial: observing ~/.codex/sessions (or another project's Claude Code folder) from one
    repository wrote the other project's "in this repo" rules into this repository's store, and from outside any
    repository into the person's store."""
    other = tmp_path / "tools repo"  # the command it names is quoted for the shell
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(_session_in(other, "in this repo we vendor dependencies with go mod vendor, never commit "
                                             "without the vendor dir", "fix the typo in main.go"))
    for here in (git_repo, tmp_path / "work"):  # another repository, and a folder in none
        monkeypatch.chdir(here)
        result = cli("observe", "--once", "--final", str(transcript))
        assert result.code == 0, result.err
        assert f"this session ran in {other.resolve()}, another project" in result.err
        assert f"`forgemem -C '{other.resolve()}' observe --once {transcript}`" in result.err
        assert memory_files(git_repo / ".forge" / "memory") == []
        assert memory_files(isolated_home / ".forge" / "memory") == []
    monkeypatch.chdir(other)  # where it ran: read, and the rule goes to that project's store
    result = cli("observe", "--once", "--final", str(transcript))
    assert result.code == 0, result.err
    [written] = memory_files(other / ".forge" / "memory")
    assert "vendor" in written.read_text()


def test_a_session_that_ran_on_another_machine_is_read_here(cli, git_repo, tmp_path, monkeypatch, isolated_home):
    monkeypatch.chdir(git_repo)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(_session_in(Path("/nonexistent/elsewhere/project"),
                                      "never use npm in this repository, it's pnpm only", "fix the footer"))
    result = cli("observe", "--once", "--final", str(transcript))
    assert result.code == 0, result.err
    assert "another project" not in result.err
    [written] = memory_files(git_repo / ".forge" / "memory")
    assert "pnpm" in written.read_text()


def test_a_session_in_a_repository_inside_this_one_is_read_here(cli, git_repo, tmp_path, monkeypatch, isolated_home):
    inner = git_repo / "vendor" / "lib"  # a submodule, say: its rules are this project's
    inner.mkdir(parents=True)
    git(inner, "init", "-q", "-b", "main")
    monkeypatch.chdir(git_repo)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(_session_in(inner, "never use npm in this repository, it's pnpm only", "fix the footer"))
    result = cli("observe", "--once", "--final", str(transcript))
    assert result.code == 0, result.err
    assert "another project" not in result.err
    assert len(memory_files(git_repo / ".forge" / "memory")) == 1


def test_what_the_run_that_creates_the_store_wrote_is_announced_by_the_next_prompt(cli, git_repo, tmp_path,
                                                                                   monkeypatch, isolated_home):
    """Found by a new-user trial: the run that created the repository's store kept its announcements in the user's
    cache, and no prompt in the repository ever said what it had saved."""
    from forgemem.agents import claude_code

    monkeypatch.chdir(git_repo)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(session("never use npm in this repository, it's pnpm only", "fix the typo in the footer"))
    assert cli("observe", "--once", "--final", str(transcript)).code == 0
    [written] = memory_files(git_repo / ".forge" / "memory")
    event = {"session_id": "s", "transcript_path": str(transcript), "cwd": str(git_repo), "permission_mode": "default",
             "hook_event_name": "UserPromptSubmit", "prompt": "hi"}
    answer = json.loads(claude_code.claude_code(json.dumps(event), timeout_ms=60_000) or "{}")
    assert answer.get("systemMessage", "").startswith("forgemem saved 1 memory: "), answer
    again = json.loads(claude_code.claude_code(json.dumps(event), timeout_ms=60_000) or "{}")
    assert "systemMessage" not in again  # said once


def test_a_purged_memory_is_not_captured_again_from_a_copy_of_its_transcript(cli, git_repo, tmp_path, monkeypatch,
                                                                             isolated_home):
    """Found by a new-user trial: `forget --purge` deleted the memory, and observing a copy of the transcript wrote it
    back. The store's cache keeps a hash of what was purged, never its words."""
    monkeypatch.chdir(git_repo)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(session("in this repo always connect to the staging db as the deploy user", "fix the footer"))
    assert cli("observe", "--once", "--final", str(transcript)).code == 0
    [written] = memory_files(git_repo / ".forge" / "memory")
    memory_id = written.name.rsplit("-", 1)[1].removesuffix(".md")
    assert cli("forget", memory_id, "--purge").code == 0
    assert memory_files(git_repo / ".forge" / "memory") == []
    kept = (git_repo / ".forge" / "cache" / "purged.sha256").read_text()
    assert "staging" not in kept and len(kept.split()) == 2  # the text's and the quote's keys
    copy = tmp_path / "copy.jsonl"
    shutil.copy(transcript, copy)
    result = cli("observe", "--once", "--final", str(copy))
    assert result.code == 0, result.err
    assert memory_files(git_repo / ".forge" / "memory") == []
