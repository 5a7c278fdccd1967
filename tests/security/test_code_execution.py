"""A repository can never run its own code through forgemem.

Attack: a clone ships a `forgemem/` package (and a `yaml/` one, and a `bin/forgemem`
program) whose import writes a marker. Before the fix, `python -m forgemem` started
in the project folder (the recall server, the capture a hook starts) imported it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forgemem.store import memfile
from forgemem.store.folder import PARALLEL_FROM

from ..conftest import make_memory
from .conftest import claude_transcript, fire, forgemem_processes, passes_done, plant_package, wait_for


@pytest.mark.slow
def test_hooks_recall_and_capture_never_import_the_repositorys_code(cli, project, hook_env, tmp_path, monkeypatch):
    marker = plant_package(project)
    monkeypatch.chdir(project)
    assert cli("install", "claude-code").code == 0
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    commands = {event: entries[0]["hooks"][0]["command"] for event, entries in settings["hooks"].items()}
    assert set(commands) == {"UserPromptSubmit", "SessionStart", "PreCompact", "Stop", "SessionEnd"}
    # a hostile PATH too: relative entries that resolve inside the project come first
    env = {**hook_env, "PATH": f"bin:.:{hook_env['PATH']}"}
    env.pop("PYTHONSAFEPATH", None)
    transcript = tmp_path / "session.jsonl"
    claude_transcript(transcript, [("Never commit directly to main; always open a pull request.", "Okay."),
                                   ("how do I run the tests?", "make test")])
    common = {"session_id": "s-sec", "transcript_path": str(transcript), "cwd": str(project)}
    events = [
        {**common, "hook_event_name": "UserPromptSubmit", "prompt": "how do I run the tests?"},
        {**common, "hook_event_name": "UserPromptSubmit", "prompt": "/forgemem search tests"},
        {**common, "hook_event_name": "SessionStart", "source": "compact"},
        {**common, "hook_event_name": "Stop", "stop_hook_active": False},
        {**common, "hook_event_name": "PreCompact", "trigger": "manual", "custom_instructions": ""},
        {**common, "hook_event_name": "SessionEnd", "reason": "exit"},
    ]
    for event in events:
        done = fire(commands[event["hook_event_name"]], event, env, project)
        assert done.returncode == 0 and done.stderr == "", done.stderr
    # the background work the hooks started: a recall server and capture passes
    state = project / ".forge" / "cache" / "observer.sqlite"
    wait_for(lambda: passes_done(state) >= 1, what="a capture pass")
    wait_for(lambda: not forgemem_processes(), what="capture processes to end")
    recall = subprocess.run([str(Path(sys.executable).parent / "forgemem"), "recall", "how do I run the tests?"],
                            cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert recall.returncode == 0, recall.stderr
    wait_for(lambda: (Path(hook_env["FORGEMEM_SERVER_SOCKET"])).exists(), what="the recall server")
    observe = subprocess.run([str(Path(sys.executable).parent / "forgemem"), "observe", "--once", "--final",
                              str(transcript)], cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert observe.returncode == 0, observe.stderr
    assert not marker.exists(), f"the repository's code ran: {marker.read_text()}"


def test_parsing_workers_never_import_from_the_working_folder(project, tmp_path):
    """A large store is parsed by worker processes; they start without the project on sys.path."""
    marker = plant_package(project)
    # a worker process starts as `python -c …`, which puts its working folder first on sys.path
    # and imports multiprocessing from there before anything else
    (project / "multiprocessing").mkdir()
    (project / "multiprocessing" / "__init__.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('multiprocessing')\n")
    store = project / ".forge" / "memory" / "bulk"
    store.mkdir()
    for n in range(PARALLEL_FROM + 10):
        memory = make_memory(f"Bulk memory number {n} about the build.")
        (store / memfile.file_name(memory)).write_text(memfile.dumps(memory))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    done = subprocess.run([str(Path(sys.executable).parent / "forgemem"), "validate"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not marker.exists(), f"the repository's code ran: {marker.read_text()}"


def test_a_background_start_runs_outside_the_project_with_a_safe_path(project, monkeypatch, tmp_path):
    from forgemem import spawn
    from forgemem.agents import hooks

    started = []
    real = subprocess.Popen

    def popen(argv, **kw):  # records forgemem's own start; anything else (git) runs
        if argv[:4] == spawn.module_argv():
            return started.append((argv, kw))
        return real(argv, **kw)

    monkeypatch.setattr(subprocess, "Popen", popen)
    hooks.capture_in_background(project, "-weird name.jsonl", "--final")
    [(argv, options)] = started
    assert argv[:4] == [sys.executable, "-P", "-m", "forgemem"]
    assert argv[4:6] == ["-C", str(project)] and argv[-2:] == ["--", "-weird name.jsonl"]
    assert options["env"]["PYTHONSAFEPATH"] == "1"
    assert Path(options["cwd"]).resolve() != project.resolve() and not str(options["cwd"]).startswith(str(project))
