"""Nothing personal leaks into committed files, and nothing is written outside forgemem's folders.

Found before the fix: repo memory files carried `source.transcript:
/home/<username>/.claude/projects/-home-<username>-…` into the team's git history;
onnxruntime wrote `~/.cache/Microsoft/DeveloperTools/.onnxruntime/` (a device id and a
queue of telemetry events); memory files, `.gitattributes` and `.claude/settings.json`
were created 0600 whatever the umask.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forgemem.capture.capturer import provenance_path
from forgemem.capture.observer import claude_code_folder

from ..conftest import git
from .conftest import claude_transcript


def test_provenance_in_repo_files_never_names_the_user(cli, project, tmp_path, monkeypatch):
    home = tmp_path / "users" / "alice-smith"
    home.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    folder = claude_code_folder(project, home)
    folder.mkdir(parents=True)
    transcript = folder / "5f0c-session.jsonl"
    claude_transcript(transcript, [("In this repo we always squash-merge pull requests.", "Okay.")])
    monkeypatch.chdir(project)
    before = set((project / ".forge" / "memory").rglob("*.md"))
    assert cli("observe", "--once", "--final", "--claude-code").code == 0
    new = set((project / ".forge" / "memory").rglob("*.md")) - before
    assert new
    for path in new:
        text = path.read_text()
        assert "alice-smith" not in text and str(home) not in text and "transcript:" in text


def test_provenance_paths():
    home, project = Path("/home/alice"), Path("/home/alice/work/harbor")
    claude = "/home/alice/.claude/projects/-home-alice-work-harbor/5f0c.jsonl"
    assert provenance_path(claude, project, home) == "~/.claude/projects/~-work-harbor/5f0c.jsonl"
    assert provenance_path("/home/alice/work/harbor/logs/s.jsonl", project, home) == "logs/s.jsonl"
    assert provenance_path("/home/alice/.codex/sessions/r.jsonl", None, home) == "~/.codex/sessions/r.jsonl"
    assert provenance_path("/srv/alice/s.jsonl", None, home) == "s.jsonl"  # the name would still show
    assert provenance_path("/var/log/agent/s.jsonl", None, home) == "/var/log/agent/s.jsonl"


@pytest.mark.slow
def test_recall_capture_and_install_write_nothing_outside_forgemems_and_the_agents_folders(tmp_path):
    home = tmp_path / "fresh-home"
    home.mkdir()
    project = tmp_path / "proj"
    project.mkdir()
    git(project, "init", "-q")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORGEMEM_", "XDG_"))}
    env.update(HOME=str(home), FORGEMEM_SERVER="off")  # a first run: the model is prepared in ~/.forge too
    script = str(Path(sys.executable).parent / "forgemem")

    def run(*args: str) -> None:
        done = subprocess.run([script, *args], cwd=project, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (args, done.stderr)

    run("init")
    run("add", "Run the tests with make test.", "-c", "project-conventions")
    run("recall", "how do I run the tests?")
    transcript = tmp_path / "session.jsonl"
    claude_transcript(transcript, [("From now on, always use pnpm, never npm.", "Okay.")])
    run("observe", "--once", "--final", str(transcript))
    run("install", "claude-code", "--user")
    run("install", "codex")
    written = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    outside = [p for p in written if p.split("/")[0] not in (".forge", ".claude", ".codex")]
    assert outside == [], outside
    assert any(p.startswith(".forge/cache/models") for p in written)  # the run did load the model
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings["hooks"]
