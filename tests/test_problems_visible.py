"""Every problem visible: a memory file that cannot be read is never dropped without a word.

Real stores in temp folders, the real CLI (in-process and as a process), the real hook command
that `install claude-code` writes, real symlinks, folders and FIFOs where memory files belong.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forgemem.store.model import MAX_FILE_BYTES

from .conftest import BAD_FILES, git

LINE_1 = "1 memory file could not be read (left out of recall); run `forgemem validate` to see why"


@pytest.fixture
def repo(git_repo, cli, monkeypatch) -> Path:
    monkeypatch.chdir(git_repo)
    assert cli("init").code == 0
    return git_repo / ".forge" / "memory"


def add(cli, text: str, category: str = "project-conventions") -> dict:
    result = cli("add", text, "-c", category, "--json")
    assert result.code == 0, result.err
    return result.json()


def break_yaml(path: Path) -> None:
    path.write_text(path.read_text().replace("category: project-conventions", "category: [project-conventions"))


# ------------------------------------------------------------------ one line wherever memories are read


def test_recall_context_list_and_slash_say_how_many_files_could_not_be_read(repo, cli):
    add(cli, "Run the linter with ruff before every commit.")
    broken = Path(add(cli, "Deploy on Tuesdays only.")["path"])
    assert "could not be read" not in cli("recall", "deploy", "--lexical-only").err
    break_yaml(broken)

    recall = cli("recall", "deploy", "--lexical-only")
    assert recall.code == 0 and LINE_1 in recall.err
    assert "Tuesdays" not in recall.out  # left out: it has no memory to give
    assert LINE_1 in cli("recall", "deploy", "--lexical-only", "--json").json()["notes"]
    context = cli("context", "run the linter with ruff before a commit")
    assert context.code == 0 and "ruff" in context.out and LINE_1 in context.err
    assert LINE_1 in cli("context", "run the linter with ruff before a commit", "--json").json()["notes"]
    listed = cli("list")
    assert "1 memory" in listed.out and LINE_1 in listed.err
    assert LINE_1 in cli("slash", "/memory").out
    assert LINE_1 in cli("slash", "/memory list").out
    assert LINE_1 in cli("slash", "/memory search ruff").out
    stats = cli("stats", "--json").json()
    assert stats["unreadable"] == [str(broken)]
    # fixed: not a word any more
    broken.write_text(broken.read_text().replace("category: [project-conventions", "category: project-conventions"))
    again = cli("recall", "deploy", "--lexical-only")
    assert "could not be read" not in again.err and "Tuesdays" in again.out


def test_show_names_the_file_and_the_reason(repo, cli):
    memory = add(cli, "Deploy on Tuesdays only.")
    path = Path(memory["path"])
    break_yaml(path)
    for ref in (memory["id"], memory["id"][4:12], memory["id"][4:6]):
        result = cli("show", ref)
        assert result.code == 2
        assert str(path) in result.err and "invalid YAML" in result.err and "line 8" in result.err
        assert "no memory has an id starting with" not in result.err
    # every command that resolves an id says the same
    for args in (("history", memory["id"][4:12]), ("forget", memory["id"][4:12]),
                 ("feedback", memory["id"][4:12], "useful")):
        result = cli(*args)
        assert result.code == 2 and str(path) in result.err, args
    assert "could not be read" in cli("slash", f"/memory show {memory['id'][4:12]}").out
    # an id no file has is still "no memory"
    assert "no memory has an id starting with 'ffffffff'" in cli("show", "ffffffff").err


def test_show_finds_the_file_by_the_short_id_its_name_ends_with(repo, cli):
    memory = add(cli, "Deploy on Tuesdays only.")
    path = Path(memory["path"])
    path.write_bytes(b"\x00binary now\n")  # no id left in the text: the name still holds its first 8 digits
    result = cli("show", memory["id"][4:12])
    assert result.code == 2 and str(path) in result.err and "binary file" in result.err


def test_conflict_markers_get_their_own_message_and_are_never_recalled(repo, cli):
    memory = add(cli, "Deploys happen on Tuesdays.")
    path = Path(memory["path"])
    text = path.read_text().replace("Deploys happen on Tuesdays.",
                                    "<<<<<<< HEAD\nDeploys happen on Tuesdays.\n=======\n"
                                    "Deploys happen on Thursdays.\n>>>>>>> feature")
    path.write_text(text)
    recall = cli("recall", "deploys thursdays", "--lexical-only", "--json")
    assert recall.json()["results"] == [] and LINE_1 in recall.json()["notes"]
    validate = cli("validate")
    assert validate.code == 1
    assert "unfinished git merge (conflict marker '<<<<<<< HEAD')" in validate.out
    assert "forgemem install git" in validate.out
    shown = cli("show", memory["id"][4:12])
    assert "unfinished git merge" in shown.err and str(path) in shown.err


def test_a_setext_underline_is_not_a_conflict_marker(repo, cli):
    memory = add(cli, "Release checklist\n=======\n\nTag, then push.")
    assert cli("validate").code == 0
    assert "Tag, then push." in cli("show", memory["id"]).out


def test_conflict_markers_in_every_corpus_file_are_reported_with_the_fix(cli, tmp_path):
    for name in ("conflict-front-matter", "conflict-body", "conflict-whole-file"):
        result = cli("--repo-dir", str(BAD_FILES / name), "--user-dir", str(tmp_path / "u"), "validate", "--json")
        [problem] = result.json()["problems"]
        assert problem["reason"].startswith("unfinished git merge") and "`forgemem install git`" in problem["reason"]
        assert problem["id"] == "mem_00000000-0000-4000-8000-00000000000a"  # recovered from the raw text


# ------------------------------------------------------------------ files that cannot be read at all


def test_entries_that_cannot_be_read_are_validate_problems(repo, cli):
    keep = add(cli, "Use ruff for linting.", "coding-preferences")
    folder = repo / "corrections"
    folder.mkdir()
    (folder / "proc-11111111.md").symlink_to("/proc/self/mem")  # stat says a file; reading fails
    (folder / "dangling-22222222.md").symlink_to(folder / "nowhere")
    (folder / "folder.md").mkdir()
    (folder / "folder.md" / "inside.md").write_text("not a memory")  # still walked into
    os.mkfifo(folder / "fifo.md")  # never opened: it would block
    (folder / "loop.md").symlink_to("loop.md")
    result = subprocess.run([sys.executable, "-m", "forgemem", "validate", "--json"], cwd=repo.parent.parent,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stderr
    reasons = {Path(p["path"]).name: p["reason"] for p in json.loads(result.stdout)["problems"]}
    assert reasons["proc-11111111.md"] == "cannot read: Input/output error (a link to /proc/self/mem)"
    assert reasons["dangling-22222222.md"].startswith("cannot read: No such file or directory (a link to ")
    assert reasons["folder.md"] == "a folder, not a memory file"
    assert reasons["inside.md"] == "no YAML front matter (the file must start with a '---' line)"
    assert reasons["fifo.md"] == "not a regular file (a FIFO), so it is never read"
    assert reasons["loop.md"].startswith("cannot read: Too many levels of symbolic links")
    recall = subprocess.run([sys.executable, "-m", "forgemem", "recall", "ruff", "--lexical-only", "--json"],
                            cwd=repo.parent.parent, capture_output=True, text=True, timeout=60)
    assert recall.returncode == 0
    assert [r["id"] for r in json.loads(recall.stdout)["results"]] == [keep["id"]]
    assert "6 memory files could not be read" in recall.stderr
    shown = subprocess.run([sys.executable, "-m", "forgemem", "show", "11111111"], cwd=repo.parent.parent,
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 2 and "proc-11111111.md" in shown.stderr and "Input/output error" in shown.stderr
    # named on the command line (the FIFO too, and the folder again): each once, nothing blocks, no traceback
    named = subprocess.run([sys.executable, "-m", "forgemem", "validate", "--json", str(folder / "fifo.md"),
                            str(folder / "loop.md"), str(folder)], cwd=repo.parent.parent,
                           capture_output=True, text=True, timeout=60)
    assert named.returncode == 1 and "internal error" not in named.stderr
    names = sorted(Path(p["path"]).name for p in json.loads(named.stdout)["problems"])
    assert names == sorted(["proc-11111111.md", "dangling-22222222.md", "folder.md", "inside.md", "fifo.md",
                            "loop.md"])


@pytest.mark.skipif(os.getuid() == 0, reason="root reads files whatever their mode")
def test_a_file_made_readable_again_comes_back_without_a_change_of_mtime(repo, cli):
    memory = add(cli, "Deploy on Tuesdays only.")
    path = Path(memory["path"])
    path.chmod(0)
    try:
        assert "Permission denied" in cli("show", memory["id"]).err
    finally:
        path.chmod(0o644)  # a chmod changes no mtime or size
    assert "Tuesdays" in cli("show", memory["id"]).out


# ------------------------------------------------------------------ the file limit


def test_add_refuses_text_over_the_file_limit_before_writing(repo, cli):
    before = sorted(repo.rglob("*"))
    result = cli("add", "-", "-c", "corrections", stdin="word " * (MAX_FILE_BYTES // 5 + 10))
    assert result.code == 2
    assert "a memory file holds at most 1 MiB" in result.err
    assert sorted(repo.rglob("*")) == before  # nothing written
    # under the limit alone, over it with its front matter: refused as well
    result = cli("add", "-", "-c", "corrections", stdin="x" * (MAX_FILE_BYTES - 100))
    assert result.code == 2 and "the memory file would be" in result.err and "at most 1 MiB" in result.err
    assert sorted(repo.rglob("*")) == before


def test_text_just_under_the_limit_is_written_and_can_be_shown_and_forgotten(repo, cli):
    result = cli("add", "-", "-c", "corrections", "--json", stdin="word " * ((MAX_FILE_BYTES - 2048) // 5))
    assert result.code == 0, result.err
    memory = result.json()
    assert Path(memory["path"]).stat().st_size <= MAX_FILE_BYTES
    assert cli("show", memory["id"]).code == 0
    assert cli("forget", memory["id"]).code == 0
    assert cli("validate").code == 0


def test_the_library_refuses_what_it_could_not_read_back(repo, cli):
    from forgemem.errors import UsageError
    from forgemem.workspace import Workspace

    ws = Workspace.open()
    with pytest.raises(UsageError, match="conflict marker"):
        ws.add("Resolve like this:\n>>>>>>> theirs", category="corrections")
    with pytest.raises(UsageError, match="at most 1 MiB"):
        ws.add("x" * (MAX_FILE_BYTES + 1), category="corrections")
    assert list(repo.rglob("*.md")) == []


def test_doctor_does_not_rebuild_forever_on_a_file_over_the_limit(repo, cli):
    add(cli, "Use ruff for linting.", "coding-preferences")
    big = repo / "corrections" / "huge-33333333.md"
    big.parent.mkdir()
    big.write_text("---\nid: mem_33333333-0000-4000-8000-000000000000\n---\n" + "a" * (MAX_FILE_BYTES + 10))
    for _ in range(2):
        report = cli("doctor", "--json")
        assert report.code == 0, report.out
        assert report.json()["repo"]["disagreements"] == [] and not report.json()["repo"]["rebuilt"]
    shown = cli("show", "33333333")
    assert "file is larger than 1 MiB" in shown.err and str(big) in shown.err


# ------------------------------------------------------------------ the hook: once per change


def test_the_prompt_hook_says_it_once_per_change(repo, cli, tmp_path):
    project = repo.parent.parent
    add(cli, "Run the linter with ruff before every commit.")
    first = Path(add(cli, "Deploy on Tuesdays only.")["path"])
    second = Path(add(cli, "Release on Fridays never.")["path"])
    git(project, "add", "-A")
    assert cli("install", "claude-code").code == 0
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    env = {**os.environ, "FORGEMEM_SERVER": "off"}

    sessions = iter(range(100))

    def prompt() -> dict:  # each in a new session: a memory is injected once per session (test_hook_sessions.py)
        event = {"hook_event_name": "UserPromptSubmit", "prompt": "run the linter with ruff before a commit", "cwd": str(project),
                 "session_id": f"s{next(sessions)}", "transcript_path": str(tmp_path / "t.jsonl")}
        done = subprocess.run(command, shell=True, input=json.dumps(event), capture_output=True, text=True,
                              cwd=project, env=env, timeout=60)
        assert done.returncode == 0 and done.stderr == ""
        return json.loads(done.stdout) if done.stdout else {}

    assert "systemMessage" not in prompt()
    break_yaml(first)
    said = prompt()
    assert said["systemMessage"] == f"forgemem: {LINE_1}"
    assert "ruff" in said["hookSpecificOutput"]["additionalContext"]  # recall still works
    assert "could not be read" not in said["hookSpecificOutput"]["additionalContext"]  # the model is not told
    assert "systemMessage" not in prompt()  # not on every prompt
    assert "systemMessage" not in prompt()
    break_yaml(second)
    assert "2 memory files could not be read" in prompt()["systemMessage"]  # a change: said again
    assert "systemMessage" not in prompt()
    for path in (first, second):
        path.write_text(path.read_text().replace("category: [project-conventions", "category: project-conventions"))
    assert "systemMessage" not in prompt()
    break_yaml(first)
    assert prompt()["systemMessage"] == f"forgemem: {LINE_1}"
