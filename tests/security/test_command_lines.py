"""No user text on a shell line; every command forgemem writes survives a hostile path.

Attack (reproduced before the fix): `.claude/commands/forgemem.md` held
``!`forgemem slash "/memory $ARGUMENTS"` ``; Claude Code substitutes the typed text
before bash runs the line, so backticks and `$(…)` executed and `$HOME` was expanded
into a committed memory. A backtick in the Python path ended the span early, and an
emoji in the path broke `install codex` (TOML).

Each installed command is rendered the way its host runs it (Claude Code: a bash line
with the event on stdin; Codex: an argv list from TOML with the JSON as last argument;
git: a textconv shell line), with forgemem's own path under a hostile folder name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from forgemem import spawn
from forgemem.agents import claude_code, codex
from forgemem.store.model import normalize_body
from forgemem.workspace import Workspace

from ..conftest import git
from .conftest import HOSTILE_TEXTS, fire

HOSTILE_DIR = "we ird 'quo\"te' $HOME `id` $(id) 🚀 Ünï\nnewline"


@pytest.fixture
def hostile_forgemem(tmp_path, monkeypatch) -> Path:
    """forgemem's console script, reached through a folder whose name a shell would act on."""
    folder = tmp_path / HOSTILE_DIR / "bin"
    folder.mkdir(parents=True)
    script = folder / "forgemem"
    script.symlink_to(Path(sys.executable).parent / "forgemem")
    monkeypatch.setattr(spawn, "console_script", lambda: script)
    return script


def markers(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("MARK"))


def test_the_slash_command_file_holds_no_shell_line(cli, project, monkeypatch):
    monkeypatch.chdir(project)
    assert cli("install", "claude-code").code == 0
    text = (project / ".claude" / "commands" / "forgemem.md").read_text()
    assert "!`" not in text and "$ARGUMENTS" not in text and "allowed-tools" not in text


@pytest.mark.slow
def test_claude_code_hooks_take_hostile_text_as_data(cli, project, hostile_forgemem, tmp_path, monkeypatch,
                                                     isolated_home):
    monkeypatch.chdir(project)
    assert cli("install", "claude-code").code == 0
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command.startswith("'") and HOSTILE_DIR.split()[0] in command
    env = {**os.environ, "FORGEMEM_SERVER": "off", "AWS_SECRET_ACCESS_KEY": "not-this-one"}
    mark = tmp_path / "MARK"
    for template in HOSTILE_TEXTS:
        text = template.format(marker=mark)
        base = {"session_id": "s", "transcript_path": str(tmp_path / "none.jsonl"), "cwd": str(project),
                "hook_event_name": "UserPromptSubmit"}
        # an ordinary prompt: recall for it
        done = fire(command, {**base, "prompt": text}, env, project)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        # /forgemem add: answered by the hook itself, shown to the user, the model not called
        done = fire(command, {**base, "prompt": f"/forgemem add project-conventions: {text}"}, env, project)
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        assert answer["decision"] == "block" and answer["reason"].startswith("Remembered")
    assert markers(tmp_path) == []
    bodies = {m.body for m in Workspace.open(cwd=project).load().memories}
    for template in HOSTILE_TEXTS:
        assert normalize_body(template.format(marker=mark)) in bodies  # byte-identical, nothing expanded
    assert not any("not-this-one" in body or str(isolated_home) in body for body in bodies)


def test_slash_answers_every_command_through_the_hook(project, monkeypatch):

    monkeypatch.chdir(project)
    event = {"hook_event_name": "UserPromptSubmit", "cwd": str(project), "session_id": "s"}
    for prompt, expected in [("/forgemem", "memories"), ("/forgemem help", "/forgemem list"),
                             ("/forgemem list corrections", "corrections"), ("/forgemem bogus", "Unknown")]:
        out = json.loads(claude_code.claude_code(json.dumps({**event, "prompt": prompt})))
        assert out["decision"] == "block" and expected in out["reason"], (prompt, out)
    # a prompt that merely mentions the command is an ordinary prompt
    assert "decision" not in (claude_code.claude_code(json.dumps({**event, "prompt": "what does /forgemem do?"}))
                              or "{}")
    assert "decision" not in (claude_code.claude_code(json.dumps({**event, "prompt": "/forgemember x"})) or "{}")


def test_codex_entries_are_valid_toml_argv_and_take_hostile_json_as_data(cli, hostile_forgemem, tmp_path,
                                                                         monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    assert cli("install", "codex").code == 0, cli("install", "codex").err
    config = tomllib.loads((tmp_path / "codex" / "config.toml").read_text())
    assert config["notify"] == [str(hostile_forgemem), "hook", "codex"]
    assert config["mcp_servers"]["forgemem"] == {"command": str(hostile_forgemem), "args": ["mcp"]}
    mark = tmp_path / "MARK"
    for template in HOSTILE_TEXTS:
        payload = json.dumps({"type": "agent-turn-complete", "thread-id": "t-1", "cwd": str(tmp_path),
                              "input-messages": [template.format(marker=mark)]})
        done = subprocess.run([*config["notify"], payload], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "CODEX_HOME": str(tmp_path / "codex")})
        assert done.returncode == 0, done.stderr
    assert markers(tmp_path) == []
    assert cli("uninstall", "codex").code == 0


def test_the_git_diff_driver_runs_from_a_hostile_path(cli, project, hostile_forgemem, monkeypatch):
    monkeypatch.chdir(project)
    assert cli("install", "git").code == 0
    textconv = git(project, "config", "--get", "diff.forgemem.textconv").strip()
    assert ' diff-driver "$1"' in textconv and HOSTILE_DIR.split()[0] in textconv
    memory_file = next((project / ".forge" / "memory").rglob("*.md"))
    memory_file.write_text(memory_file.read_text() + "\nOne more sentence.\n")
    diff = git(project, "diff", "-U1000", "--", str(memory_file.relative_to(project)))
    assert "+One more sentence." in diff
    assert " memory mem_" in diff and "id: mem_" not in diff  # the driver's view: it ran, from the hostile path


def test_install_codex_with_an_emoji_in_the_path_writes_valid_toml(tmp_path):
    config = tmp_path / "codex" / "config.toml"
    plan = codex.plan_codex_install(config)
    plan.apply()
    tomllib.loads(config.read_text())
