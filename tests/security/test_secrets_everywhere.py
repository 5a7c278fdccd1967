"""After a real capture run, no secret from the conversation is anywhere: files, names, caches, logs.

Attack (reproduced before the fix): `.forge/cache/observer.sqlite` (0644) kept every
credential from a transcript (table `arc`, and `passes` for failed passes); the user
cache held the text of private memories world-readable; a password in a captured
sentence reached the memory's file name.

Here a Claude Code session full of secrets (every shape of the development corpora) is
captured by the installed hooks in real background processes, with an LLM classifier
the user configured (a real HTTP server on 127.0.0.1), and then every byte under the
home folder, the project and the socket folder is searched for every secret.
"""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from forgemem.permissions import current_umask

from ..conftest import ROOT
from ..test_llm import FakeModelServer, item, openai_reply
from .conftest import claude_transcript, fire, forgemem_processes, passes_done, wait_for

CORPORA = [ROOT / "tests" / "fixtures" / "secrets_corpus.yaml",
           ROOT / "tests" / "security" / "fixtures" / "secret_shapes.yaml"]


def shapes() -> list[tuple[str, list[str]]]:
    """(text, secrets) of both development corpora. Secrets shorter than 6 characters (a
    card's CVV, a PIN) are left out of the search: "847" turns up in any binary file."""
    found = []
    for corpus in CORPORA:
        for entry in yaml.safe_load(corpus.read_text()):
            secrets = entry["secret"] if isinstance(entry["secret"], list) else [entry["secret"]]
            found.append((entry["text"], [str(s) for s in secrets if len(str(s)) >= 6]))
    return found


def files_under(*folders: Path, skip: set[Path]) -> list[Path]:
    return [p for folder in folders if folder.exists() for p in folder.rglob("*")
            if p.is_file() and p not in skip]


@pytest.fixture
def model_server():
    server = FakeModelServer()
    # the model answers with one memory quoting the turn: whatever it is sent comes back
    server.replies = [(200, openai_reply([item("Deploys go through the staging host first.",
                                                category="project-conventions", scope="repo")]), 0)]
    yield server
    server.close()


@pytest.mark.slow
def test_no_secret_survives_a_capture_run_anywhere(cli, project, hook_env, model_server, tmp_path, monkeypatch,
                                                   isolated_home):
    user_config = isolated_home / ".forge" / "config.yaml"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text(f"memory:\n  cadence_turns: 2\n  classifier_model: openai:gpt-test\n"
                           f"  classifier_base_url: {model_server.url}/v1\n")
    monkeypatch.chdir(project)
    assert cli("install", "claude-code").code == 0
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    commands = {event: entries[0]["hooks"][0]["command"] for event, entries in settings["hooks"].items()}
    cases = shapes()
    assert len(cases) >= 60
    transcript = tmp_path / "session.jsonl"
    common = {"session_id": "s-secrets", "transcript_path": str(transcript), "cwd": str(project)}
    # each exchange states a rule around the secret, so the offline classifier would write it too
    for n in range(0, len(cases), 2):
        pair = cases[n:n + 2]
        claude_transcript(transcript, [(f"Always remember this for deploys: {text}", f"Noted: {text}")
                                       for text, _ in pair], session="s-secrets")
        done = fire(commands["Stop"], {**common, "hook_event_name": "Stop", "stop_hook_active": False},
                    hook_env, project)
        assert done.returncode == 0
        done = fire(commands["UserPromptSubmit"], {**common, "hook_event_name": "UserPromptSubmit",
                                                   "prompt": pair[0][0]}, hook_env, project)
        assert done.returncode == 0
    fire(commands["PreCompact"], {**common, "hook_event_name": "PreCompact", "trigger": "auto"}, hook_env, project)
    fire(commands["SessionEnd"], {**common, "hook_event_name": "SessionEnd", "reason": "exit"}, hook_env, project)
    wait_for(lambda: not forgemem_processes(), timeout=300, what="capture to end")
    # passes a busy observer left pending (one transcript's passes never run at once) run now
    assert cli("observe", "--once", str(transcript)).code == 0
    assert passes_done(project / ".forge" / "cache" / "observer.sqlite") >= 10
    assert model_server.requests, "the configured model was never asked: the test proves nothing"
    sent = json.dumps([r["body"] for r in model_server.requests])
    leaks = []
    for _text, secrets in cases:
        for secret in secrets:
            if secret in sent:
                leaks.append(("sent to the model", secret))
    socket_folder = Path(hook_env["FORGEMEM_SERVER_SOCKET"]).parent
    for path in files_under(isolated_home, project, socket_folder, skip={transcript}):
        data = path.read_bytes()
        for _text, secrets in cases:
            for secret in secrets:
                if secret.encode() in data or secret in str(path):
                    leaks.append((str(path.relative_to(tmp_path)), secret))
    assert leaks == []
    memory_files = list((project / ".forge" / "memory").rglob("*.md")) + list(
        (isolated_home / ".forge" / "memory").rglob("*.md"))
    assert any("REDACTED" in p.read_text() for p in memory_files), "nothing was captured: the test proves nothing"


def test_caches_and_logs_are_private_and_memory_files_follow_the_umask(cli, project, hook_env, tmp_path,
                                                                        monkeypatch, isolated_home):
    monkeypatch.chdir(project)
    assert cli("install", "claude-code").code == 0
    assert cli("install", "git").code == 0
    settings = project / ".claude" / "settings.local.json"
    assert stat.S_IMODE(settings.stat().st_mode) == 0o666 & ~current_umask()
    command = json.loads(settings.read_text())["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
    transcript = tmp_path / "session.jsonl"
    claude_transcript(transcript, [("From now on we always squash-merge pull requests.", "Okay.")])
    event = {"session_id": "s", "transcript_path": str(transcript), "cwd": str(project),
             "hook_event_name": "SessionEnd", "reason": "exit"}
    before = set((project / ".forge" / "memory").rglob("*.md"))
    done = subprocess.run(["bash", "-c", f"umask 002; {command}"], input=json.dumps(event), text=True,
                          capture_output=True, cwd=project, env=hook_env, timeout=120)
    assert done.returncode == 0
    wait_for(lambda: set((project / ".forge" / "memory").rglob("*.md")) - before, what="a captured memory")
    wait_for(lambda: not forgemem_processes(), what="capture to end")
    [new] = set((project / ".forge" / "memory").rglob("*.md")) - before
    assert stat.S_IMODE(new.stat().st_mode) == 0o664  # a teammate on a shared checkout can read it
    assert cli("add", "Squash-merge pull requests.", "-c", "project-conventions").code == 0
    for cache in (project / ".forge" / "cache", isolated_home / ".forge" / "cache"):
        assert stat.S_IMODE(cache.stat().st_mode) == 0o700, cache
        for path in cache.rglob("*"):
            if path.is_file() and path.name != ".gitignore" and not path.is_socket():
                assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path
    log = isolated_home / ".forge" / "cache" / "hooks.log"
    assert log.exists() and stat.S_IMODE(log.stat().st_mode) == 0o600
