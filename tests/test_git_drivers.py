"""git keeps working and merges: the diff and merge drivers, through real git, real branches, real merges."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from forgemem import spawn
from forgemem.git import drivers
from forgemem.store import memfile
from forgemem.workspace import Workspace, init_forge_dir

from .conftest import git, make_memory

MARKERS = ("<<<<<<< ", "=======", ">>>>>>> ")


@pytest.fixture
def repo(git_repo, monkeypatch) -> Path:
    init_forge_dir(git_repo / ".forge")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "forge")
    monkeypatch.chdir(git_repo)
    return git_repo


@pytest.fixture
def installed(cli, repo, tmp_path, monkeypatch) -> Path:
    """`forgemem install git` from a forgemem whose console script can be taken away later."""
    script = tmp_path / "tools" / "bin" / "forgemem"
    script.parent.mkdir(parents=True)
    script.symlink_to(Path(sys.executable).parent / "forgemem")
    monkeypatch.setattr(spawn, "console_script", lambda: script)
    assert cli("install", "git").code == 0
    assert str(script) in git(repo, "config", "--local", "merge.forgemem.driver")
    return script


def without_forgemem() -> dict[str, str]:
    """The environment with every folder that holds a `forgemem` program taken off PATH."""
    folders = [d for d in os.environ["PATH"].split(os.pathsep) if d and not (Path(d) / "forgemem").exists()]
    assert folders and all(not (Path(d) / "forgemem").exists() for d in folders)
    return {**os.environ, "PATH": os.pathsep.join(folders)}


def run_git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=repo, env=without_forgemem(), capture_output=True, text=True)


def add(cli, text: str, category: str = "project-conventions") -> str:
    result = cli("add", "--json", "--category", category, text)
    assert result.code == 0, result.err
    return result.json()["id"]


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def path_of(repo: Path, memory_id: str) -> Path:
    return Workspace.open(cwd=repo).load().get(memory_id).path


def at(repo: Path, rev: str, path: Path):
    return memfile.parse_bytes(subprocess.run(["git", "show", f"{rev}:{path.relative_to(repo)}"], cwd=repo,
                                              capture_output=True, check=True).stdout)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


# ------------------------------------------------------------------ merges


def test_two_branches_that_link_the_same_memory_merge_cleanly(cli, repo, installed):
    source = add(cli, "Migrations live in db/migrations.")
    run = add(cli, "Apply migrations with make migrate.")
    never = add(cli, "Never edit an applied migration; add a new one.")
    commit(repo, "base")
    file = path_of(repo, source)
    git(repo, "checkout", "-q", "-b", "left")
    assert cli("link", source, run, "--rel", "refines").code == 0
    file.write_text(re.sub(r"updated_at: \S+", "updated_at: 2030-01-01T00:00:00Z", file.read_text()))  # the newer
    edit(file, "trigger: manual\n", "trigger: manual\nreviewed_by: alice\n")  # and a key of the team's own
    commit(repo, "left links")
    git(repo, "checkout", "-q", "main")
    assert cli("link", source, never, "--rel", "relates-to").code == 0
    commit(repo, "main links")
    merged = run_git(repo, "merge", "--no-edit", "left")
    assert merged.returncode == 0 and "CONFLICT" not in merged.stdout, merged.stdout + merged.stderr
    memory = Workspace.open(cwd=repo).load().get(source)
    assert {(r.id, r.relationship) for r in memory.related} == {(run, "refines"), (never, "relates-to")}
    assert memfile.format_timestamp(memory.updated_at) == "2030-01-01T00:00:00Z"  # the newer of the two
    assert memory.extra == {"reviewed_by": "alice"} and memory.body == "Migrations live in db/migrations."
    assert file.read_text() == memfile.dumps(memory)  # the canonical file, no markers
    assert cli("validate").code == 0
    # the driver made it clean: git's own text merge of the same two commits conflicts
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    assert cli("uninstall", "git").code == 0
    plain = run_git(repo, "merge", "--no-edit", "left")
    assert plain.returncode == 1 and "CONFLICT" in plain.stdout


def test_a_true_conflict_leaves_markers_only_there_and_loses_neither_side(cli, repo, installed):
    source = add(cli, "Deploys run on Fridays.\nRollbacks use the previous image.")
    other = add(cli, "Staging mirrors production.")
    commit(repo, "base")
    file = path_of(repo, source)
    git(repo, "checkout", "-q", "-b", "left")
    edit(file, "Deploys run on Fridays.", "Deploys run on Thursdays.")
    edit(file, "trigger: manual\n", "trigger: manual\ntags:\n- deploy\nconfidence: 0.9\n")
    commit(repo, "left")
    git(repo, "checkout", "-q", "main")
    edit(file, "Deploys run on Fridays.", "Deploys never run on Fridays.")
    edit(file, "trigger: manual\n", "trigger: manual\ntags:\n- ops\nconfidence: 0.6\n")
    assert cli("link", source, other, "--rel", "relates-to").code == 0
    commit(repo, "main")
    merged = run_git(repo, "merge", "--no-edit", "left")
    assert merged.returncode == 1 and "CONFLICT (content)" in merged.stdout
    text = file.read_text()
    conflict_lines = [line for line in text.splitlines() if line.startswith(MARKERS)]
    assert len(conflict_lines) == 6  # two conflicts: confidence, and the sentence both changed
    front, body = text.split("\n---\n", 1)
    assert "<<<<<<< ours\nconfidence: 0.6\n=======\nconfidence: 0.9\n>>>>>>> theirs" in front
    assert "tags:\n- ops\n- deploy\n" in front and f"- id: {other}\n  relationship: relates-to" in front
    assert "Deploys never run on Fridays." in body and "Deploys run on Thursdays." in body
    assert body.count("Rollbacks use the previous image.") == 1
    # the person resolves the two conflicts; the result is a valid memory with everything else merged
    resolved = []
    for line in text.splitlines():
        if line.startswith(MARKERS) or line in ("confidence: 0.9", "Deploys run on Thursdays."):
            continue
        resolved.append(line)
    file.write_text("\n".join(resolved) + "\n")
    memory = memfile.read_file(file)
    assert memory.tags == ["ops", "deploy"] and memory.confidence == 0.6 and memory.related[0].id == other
    assert memory.body == "Deploys never run on Fridays.\nRollbacks use the previous image."


def test_merge_three_way_semantics():
    base = make_memory("One rule.", extra={"tags": ["a", "b"], "owner": "x"})
    ours = make_memory("One rule.", id=base.id, extra={"tags": ["b"], "owner": "x"})  # removed a
    theirs = make_memory("One rule.", id=base.id, extra={"tags": ["a", "b", "c"], "owner": "y"})  # added c, owner
    text, clean = drivers.merge(*(memfile.dumps(m).encode() for m in (base, ours, theirs)))
    merged = memfile.parse_text(text)
    assert clean and merged.tags == ["b", "c"] and merged.extra["owner"] == "y"
    # both added the same memory file (no common version): union, scalars that agree
    text, clean = drivers.merge(b"", memfile.dumps(ours).encode(), memfile.dumps(theirs).encode())
    assert not clean and "<<<<<<< ours\nowner: x\n=======\nowner: y\n>>>>>>> theirs\n" in text
    assert "tags:\n- b\n- a\n- c\n" in text
    # git's own merge would be clean here, but with `owner` twice (YAML keeps the last): a conflict instead
    plain = memfile.dumps(make_memory("One rule.", id=base.id, extra={"tags": ["a"]}))
    mine = plain.replace("trigger: manual\n", "trigger: manual\nowner: x\n")
    other = plain.replace("- a\n", "- a\nowner: y\n")
    assert drivers.merge_file(mine, plain, other)[1]  # clean for git
    text, clean = drivers.merge(plain.encode(), mine.encode(), other.encode())
    assert not clean and "<<<<<<< ours\nowner: x\n=======\nowner: y\n>>>>>>> theirs\n" in text
    # git's own merge is taken when it means the same: a comment of yours in the front matter stays
    mine = plain.replace("scope: repo\n", "scope: repo  # shared with the team\n")
    other = plain.replace("- a\n", "- a\n- b\n")
    text, clean = drivers.merge(plain.encode(), mine.encode(), other.encode())
    assert clean and "scope: repo  # shared with the team\n" in text and "- a\n- b\n" in text
    # not the same memory, or not a memory at all: git's own text merge does it
    stranger = make_memory("One rule.")
    assert drivers.merge(memfile.dumps(base).encode(), memfile.dumps(ours).encode(),
                         memfile.dumps(stranger).encode()) is None
    assert drivers.merge(b"", b"---\nnot: [a memory\n---\n", memfile.dumps(ours).encode()) is None
    assert drivers.merge(b"", b"\xff\xfe", memfile.dumps(ours).encode()) is None


# ------------------------------------------------------------------ git never fails because of forgemem


def test_git_diff_log_and_merge_work_off_path_and_after_forgemem_is_gone(cli, repo, installed):
    source = add(cli, "Use black for formatting.")
    target = add(cli, "Line length is 100.")
    commit(repo, "one")
    file = path_of(repo, source)
    edit(file, "trigger: manual\n", "trigger: manual\nowner: alice\n")  # a key of the team's own
    commit(repo, "owner")
    edit(file, "owner: alice", "owner: bob")
    # forgemem is nowhere on PATH: git starts it by the absolute path install wrote
    diff = run_git(repo, "diff")
    assert diff.returncode == 0 and f" memory {source} v1" in diff.stdout
    assert "-owner: alice" in diff.stdout and "+owner: bob" in diff.stdout  # custom keys show
    log = run_git(repo, "log", "-p", "-1")
    assert log.returncode == 0 and "+owner: alice" in log.stdout and "id: mem_" not in log.stdout
    git(repo, "checkout", "-q", "--", ".")
    git(repo, "checkout", "-q", "-b", "left")
    assert cli("link", source, target, "--rel", "refines").code == 0
    commit(repo, "left")
    git(repo, "checkout", "-q", "main")
    assert cli("link", target, source, "--rel", "relates-to").code == 0
    edit(file, "owner: alice", "owner: carol")
    commit(repo, "main")
    # the program install recorded is gone (uninstalled, its virtualenv deleted)
    installed.unlink()
    edit(file, "owner: carol", "owner: dave")
    diff = run_git(repo, "diff", "-U1000")
    assert diff.returncode == 0 and "-owner: carol" in diff.stdout and "+owner: dave" in diff.stdout
    assert "id: mem_" in diff.stdout  # the raw file: the driver could not run
    log = run_git(repo, "log", "-p", "-3", "--", ".forge")
    assert log.returncode == 0 and "+owner: alice" in log.stdout and "fatal" not in log.stderr
    git(repo, "checkout", "-q", "--", ".")
    merged = run_git(repo, "merge", "--no-edit", "left")  # git's own text merge runs instead
    assert "fatal" not in merged.stderr
    assert merged.returncode == 0, merged.stdout + merged.stderr  # different lines: git merges them itself
    text = file.read_text()
    assert f"- id: {target}\n  relationship: refines" in text and "owner: carol" in text


def test_a_merge_without_forgemem_falls_back_to_git_markers_and_keeps_both_sides(cli, repo, installed):
    source = add(cli, "Use black for formatting.")
    one, two = add(cli, "Line length is 100."), add(cli, "Imports are sorted by ruff.")
    commit(repo, "base")
    file = path_of(repo, source)
    git(repo, "checkout", "-q", "-b", "left")
    assert cli("link", source, one, "--rel", "refines").code == 0
    commit(repo, "left")
    git(repo, "checkout", "-q", "main")
    assert cli("link", source, two, "--rel", "relates-to").code == 0
    commit(repo, "main")
    installed.unlink()
    merged = run_git(repo, "merge", "--no-edit", "left")
    assert merged.returncode == 1 and "CONFLICT (content)" in merged.stdout and "fatal" not in merged.stderr
    text = file.read_text()
    assert "<<<<<<< ours" in text and ">>>>>>> theirs" in text
    assert f"- id: {one}" in text and f"- id: {two}" in text  # neither side lost


def test_the_drivers_come_from_local_config_never_from_the_repository(cli, repo, tmp_path):
    """A repository can name the drivers in .gitattributes, but only the user's own install says what
    runs: planted programs and packages in the repository never run, before or after install."""
    mark = tmp_path / "MARK"
    (repo / "bin").mkdir()
    (repo / "bin" / "forgemem").write_text(f"#!/bin/sh\ntouch {mark}\n")
    (repo / "bin" / "forgemem").chmod(0o755)
    (repo / "forgemem").mkdir()
    (repo / "forgemem" / "__init__.py").write_text(f"open({str(mark)!r}, 'w').close()\n")
    (repo / ".gitattributes").write_text(".forge/memory/**/*.md diff=forgemem merge=forgemem\n")
    (repo / ".gitconfig").write_text('[merge "forgemem"]\n\tdriver = touch ' + str(mark) + "\n")
    pairs = [(add(cli, f"Use black for formatting {n}."), add(cli, f"Line length is 10{n}.")) for n in (1, 2)]
    commit(repo, "a repository that names the drivers")
    env = {**without_forgemem(), "PATH": f"{repo / 'bin'}{os.pathsep}{without_forgemem()['PATH']}"}

    def branches_link(n: int) -> subprocess.CompletedProcess:
        source, other = pairs[n - 1]
        git(repo, "checkout", "-q", "-b", f"left{n}")
        assert cli("link", source, other, "--rel", "refines").code == 0
        commit(repo, "left")
        git(repo, "checkout", "-q", "main")
        assert cli("link", source, other, "--rel", "relates-to").code == 0
        commit(repo, "main")
        return subprocess.run(["git", "merge", "--no-edit", f"left{n}"], cwd=repo, env=env,
                              capture_output=True, text=True)

    assert subprocess.run(["git", "log", "-p"], cwd=repo, env=env, capture_output=True).returncode == 0
    assert branches_link(1).returncode == 1  # not installed: git's own merge, which conflicts
    git(repo, "merge", "--abort")
    assert not mark.exists()
    assert cli("install", "git").code == 0
    assert subprocess.run(["git", "log", "-p"], cwd=repo, env=env, capture_output=True).returncode == 0
    merged = branches_link(2)
    assert merged.returncode == 0, merged.stdout + merged.stderr  # forgemem's driver, the installed one
    assert not mark.exists()


def test_a_percent_or_shell_characters_in_forgemems_path_reach_git_intact(cli, repo, tmp_path, monkeypatch):
    script = tmp_path / "50%A %O %% $(touch PWNED) `id`" / "forgemem"
    script.parent.mkdir()
    script.symlink_to(Path(sys.executable).parent / "forgemem")
    monkeypatch.setattr(spawn, "console_script", lambda: script)
    assert cli("install", "git").code == 0
    source, other = add(cli, "Use black for formatting."), add(cli, "Line length is 100.")
    commit(repo, "base")
    git(repo, "checkout", "-q", "-b", "left")
    assert cli("link", source, other, "--rel", "refines").code == 0
    commit(repo, "left")
    git(repo, "checkout", "-q", "main")
    assert cli("link", source, other, "--rel", "relates-to").code == 0
    commit(repo, "main")
    merged = run_git(repo, "merge", "--no-edit", "left")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert len(Workspace.open(cwd=repo).load().get(source).related) == 2
    assert not list(repo.rglob("PWNED")) and not list(tmp_path.rglob("PWNED"))


def test_uninstall_git_keeps_what_the_user_wrote(cli, repo):
    (repo / ".gitattributes").write_text("*.png binary\n")
    assert cli("install", "git").code == 0
    assert (repo / ".gitattributes").read_text() == "*.png binary\n.forge/memory/**/*.md diff=forgemem merge=forgemem\n"
    git(repo, "config", "--local", "diff.forgemem.textconv", "my-own-textconv")
    git(repo, "config", "--local", "diff.forgemem.cachetextconv", "true")
    result = cli("uninstall", "git")
    assert result.code == 0 and "diff.forgemem.textconv is not what forgemem wrote" in result.err
    assert (repo / ".gitattributes").read_text() == "*.png binary\n"
    assert git(repo, "config", "--local", "--get-regexp", "forgemem").splitlines() == [
        "diff.forgemem.textconv my-own-textconv", "diff.forgemem.cachetextconv true"]
    # an install from before the merge driver is upgraded in place
    (repo / ".gitattributes").write_text(".forge/memory/**/*.md diff=forgemem\n*.png binary\n")
    assert cli("install", "git").code == 0
    assert (repo / ".gitattributes").read_text() == ".forge/memory/**/*.md diff=forgemem merge=forgemem\n*.png binary\n"


def test_textconv_shows_a_broken_file_as_it_is():
    assert drivers.textconv(b"---\nid: [broken\n---\ntext\n") == "---\nid: [broken\n---\ntext\n"
    assert drivers.textconv(b"\xff\xfe plain") == "\ufffd\ufffd plain"
    memory = make_memory("One rule.", extra={"owner": "alice", "review": {"by": "bob", "on": "2026-01-02"}})
    shown = drivers.textconv(memfile.dumps(memory).encode())
    assert "owner: alice\n" in shown and 'review: {"by": "bob", "on": "2026-01-02"}\n' in shown
