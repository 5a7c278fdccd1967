"""A project install puts forgemem's hooks in `.claude/settings.local.json` (this user's, never
committed: the hook names this machine's forgemem by absolute path), keeps that file out of git
through `.git/info/exclude`, and moves an earlier install's hooks out of the shared
`.claude/settings.json`. Real git repositories; the old-style install is made by the same code an
earlier forgemem ran (hooks in settings.json, its record naming that file)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from forgemem.agents import claude_code, claude_settings

from .conftest import git
from .test_install import AUDIT, GUARD, USER_SETTINGS, forgemem_hooks, only_removals
from .test_install import claude_settings as as_claude_writes

LINE = "/.claude/settings.local.json"


@pytest.fixture
def claude(project, monkeypatch) -> Path:
    monkeypatch.chdir(project)
    (project / ".claude").mkdir()
    return project / ".claude"


def exclude_file(project: Path) -> Path:
    return project / ".git" / "info" / "exclude"


def ignored(project: Path, path: str) -> bool:
    done = subprocess.run(["git", "check-ignore", "-q", "--", path], cwd=project, check=False)
    return done.returncode == 0


def untracked(project: Path) -> list[str]:
    out = git(project, "status", "--porcelain", "--untracked-files=all")
    return sorted(line[3:] for line in out.splitlines() if line.startswith("??"))


def old_style_install(claude: Path) -> None:
    """What an earlier forgemem did for a project: the hooks into `.claude/settings.json`, recorded."""
    claude_settings.plan_claude_code_install(claude).apply()
    record = json.loads(claude_settings._record_path("claude-code", claude).read_text())
    assert record["settings"] == str(claude / "settings.json") and len(record["added"]) == len(claude_code.HOOK_EVENTS)


def count_forgemem_hooks(*files: Path) -> dict[str, int]:
    counts = dict.fromkeys(claude_code.HOOK_EVENTS, 0)
    for path in files:
        if path.exists():
            for event, _ in forgemem_hooks(json.loads(path.read_text())):
                counts[event] += 1
    return counts


def test_a_project_install_writes_settings_local_and_keeps_it_out_of_git(cli, claude, project):
    exclude = exclude_file(project)
    exclude_before = exclude.read_text()
    assert not ignored(project, ".claude/settings.local.json")
    result = cli("install", "claude-code")
    assert result.code == 0, result.err
    local = claude / "settings.local.json"
    assert sorted(e for e, _ in forgemem_hooks(json.loads(local.read_text()))) == sorted(claude_code.HOOK_EVENTS)
    assert not (claude / "settings.json").exists()  # the shared file is not touched
    assert exclude.read_text() == exclude_before + ("" if exclude_before.endswith("\n") else "\n") + LINE + "\n"
    assert ignored(project, ".claude/settings.local.json")
    assert untracked(project) == [".claude/commands/forgemem.md"]  # the command file names no machine path
    again = cli("install", "claude-code")
    assert "already installed" in again.err and exclude.read_text().count(LINE) == 1
    assert cli("uninstall", "claude-code").code == 0
    assert exclude.read_text() == exclude_before  # byte for byte
    assert not local.exists() and not (claude / "commands").exists()
    assert not ignored(project, ".claude/settings.local.json")


def test_the_exclude_line_goes_even_when_lines_were_added_after_it(cli, claude, project):
    exclude = exclude_file(project)
    exclude.write_text("# mine\n*.swp")  # no newline at the end
    assert cli("install", "claude-code").code == 0
    assert exclude.read_text() == f"# mine\n*.swp\n{LINE}\n"
    exclude.write_text(exclude.read_text() + "build/\n")
    assert cli("uninstall", "claude-code").code == 0
    assert exclude.read_text() == "# mine\n*.swp\nbuild/\n"


def test_no_exclude_line_when_gitignore_already_ignores_the_file(cli, claude, project):
    (project / ".gitignore").write_text(".claude/settings.local.json\n")
    git(project, "add", ".gitignore")
    git(project, "commit", "-q", "-m", "ignore local settings")
    exclude = exclude_file(project)
    exclude_before = exclude.read_text()
    assert cli("install", "claude-code").code == 0
    assert (claude / "settings.local.json").exists()
    assert exclude.read_text() == exclude_before
    record = json.loads(claude_settings._record_path("claude-code", claude).read_text())
    assert record["git_exclude"] is None
    assert cli("uninstall", "claude-code").code == 0
    assert exclude.read_text() == exclude_before and (project / ".gitignore").read_text() == ".claude/settings.local.json\n"


def test_a_user_install_keeps_home_settings_json_and_no_exclude(cli, claude, project, isolated_home):
    exclude_before = exclude_file(project).read_text()
    assert cli("install", "claude-code", "--user").code == 0
    assert forgemem_hooks(json.loads((isolated_home / ".claude" / "settings.json").read_text()))
    assert not (isolated_home / ".claude" / "settings.local.json").exists()
    assert exclude_file(project).read_text() == exclude_before and not (claude / "settings.local.json").exists()


def test_an_install_into_settings_json_is_moved_and_the_users_hooks_stay_byte_for_byte(cli, claude, project):
    shared = claude / "settings.json"
    original = as_claude_writes(json.dumps(USER_SETTINGS))
    shared.write_text(original)
    git(project, "add", ".claude/settings.json")
    git(project, "commit", "-q", "-m", "team settings")
    old_style_install(claude)
    assert count_forgemem_hooks(shared) == dict.fromkeys(claude_code.HOOK_EVENTS, 1)
    result = cli("install", "claude-code")
    assert result.code == 0, result.err
    assert shared.read_text() == original  # the user's file, byte for byte: as if forgemem had never been there
    assert git(project, "status", "--porcelain", "--", ".claude/settings.json") == ""
    assert [line for line in result.err.splitlines() if "forgemem's hooks move from" in line] == [
        f"forgemem: forgemem's hooks move from {shared} (shared with your team) to settings.local.json "
        "(yours alone, not committed)"]
    local = claude / "settings.local.json"
    assert count_forgemem_hooks(shared, local) == dict.fromkeys(claude_code.HOOK_EVENTS, 1)  # never twice
    assert count_forgemem_hooks(local) == dict.fromkeys(claude_code.HOOK_EVENTS, 1)
    assert ignored(project, ".claude/settings.local.json")
    again = cli("install", "claude-code")
    assert "already installed" in again.err and "hooks move" not in again.err
    assert cli("uninstall", "claude-code").code == 0
    assert shared.read_text() == original and not local.exists()


def test_the_move_takes_only_recorded_entries_and_keeps_later_edits(cli, claude, project):
    shared = claude / "settings.json"
    shared.write_text(as_claude_writes(json.dumps(USER_SETTINGS)))
    old_style_install(claude)
    # after that install the user added a hook inside forgemem's entry and a key of their own
    data = json.loads(shared.read_text())
    data["hooks"]["UserPromptSubmit"][0]["hooks"].append(GUARD)
    data["statusLine"] = {"type": "command", "command": "~/bin/status"}
    shared.write_text(as_claude_writes(json.dumps(data)))
    edited = shared.read_text()
    assert cli("install", "claude-code").code == 0
    after = shared.read_text()
    removed = only_removals(edited, after)  # only lines taken out, nothing else changed
    assert sum("forgemem hook claude-code" in line for line in removed) == len(claude_code.HOOK_EVENTS)
    assert not any(AUDIT in line or "prompt-guard" in line for line in removed)
    left = json.loads(after)
    assert forgemem_hooks(left) == [] and left["hooks"]["UserPromptSubmit"] == [{"hooks": [GUARD]}]
    assert left["statusLine"] == {"type": "command", "command": "~/bin/status"}
    assert count_forgemem_hooks(claude / "settings.local.json") == dict.fromkeys(claude_code.HOOK_EVENTS, 1)


def test_a_hook_left_in_settings_json_is_not_added_again(cli, claude, project):
    shared = claude / "settings.json"
    shared.write_text(as_claude_writes(json.dumps(USER_SETTINGS)))
    old_style_install(claude)
    data = json.loads(shared.read_text())
    stop = [e for e in data["hooks"]["Stop"] if forgemem_hooks({"hooks": {"Stop": [e]}})][0]
    stop["hooks"][0]["timeout"] = 60  # the user changed forgemem's Stop hook: it is theirs now, and stays
    shared.write_text(as_claude_writes(json.dumps(data)))
    result = cli("install", "claude-code")
    assert result.code == 0
    assert "hooks.Stop hook was changed since install; left in place" in result.err
    assert "none added to settings.local.json (it would run twice)" in result.err
    local = claude / "settings.local.json"
    assert count_forgemem_hooks(shared) == {**dict.fromkeys(claude_code.HOOK_EVENTS, 0), "Stop": 1}
    assert count_forgemem_hooks(shared, local) == dict.fromkeys(claude_code.HOOK_EVENTS, 1)


def test_forgemems_hook_a_teammate_committed_is_not_doubled(cli, claude, project):
    shared = claude / "settings.json"
    mine = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": AUDIT},
                                          {"type": "command", "command": "'/opt/fm/bin/forgemem' hook claude-code",
                                           "timeout": 10}]}]}}
    shared.write_text(as_claude_writes(json.dumps(mine)))
    committed = shared.read_text()
    assert cli("install", "claude-code").code == 0
    assert shared.read_text() == committed  # not install's to move
    local = claude / "settings.local.json"
    assert count_forgemem_hooks(shared, local) == dict.fromkeys(claude_code.HOOK_EVENTS, 1)
    assert cli("uninstall", "claude-code").code == 0
    assert shared.read_text() == committed and not local.exists()


def test_uninstall_of_an_install_into_settings_json(cli, claude, project):
    shared = claude / "settings.json"
    original = as_claude_writes(json.dumps(USER_SETTINGS))
    shared.write_text(original)
    exclude_before = exclude_file(project).read_text()
    old_style_install(claude)
    result = cli("uninstall", "claude-code")
    assert result.code == 0, result.err
    assert shared.read_text() == original
    assert not (claude / "settings.local.json").exists() and not (claude / "commands").exists()
    assert exclude_file(project).read_text() == exclude_before
    assert not claude_settings._record_path("claude-code", claude).exists()


def test_dry_run_shows_every_file_the_move_would_change(cli, claude, project):
    shared = claude / "settings.json"
    shared.write_text(as_claude_writes(json.dumps(USER_SETTINGS)))
    old_style_install(claude)
    installed = shared.read_text()
    exclude_before = exclude_file(project).read_text()
    dry = cli("install", "claude-code", "--dry-run")
    assert dry.code == 0
    for path in (shared, claude / "settings.local.json", exclude_file(project)):
        assert f"+++ {path}" in dry.out or f"--- {path}" in dry.out, path
    assert f"+{LINE}" in dry.out and "-" in dry.out
    assert shared.read_text() == installed and not (claude / "settings.local.json").exists()
    assert exclude_file(project).read_text() == exclude_before


def test_a_worktree_uses_the_repositorys_exclude(cli, project, tmp_path, monkeypatch):
    tree = tmp_path / "tree"
    git(project, "worktree", "add", "-q", str(tree), "-b", "side")
    monkeypatch.chdir(tree)
    exclude = exclude_file(project)
    exclude_before = exclude.read_text()
    assert cli("install", "claude-code").code == 0
    assert exclude.read_text().endswith(LINE + "\n") and ignored(tree, ".claude/settings.local.json")
    assert untracked(tree) == [".claude/commands/forgemem.md"]
    assert cli("uninstall", "claude-code").code == 0
    assert exclude.read_text() == exclude_before
