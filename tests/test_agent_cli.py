"""The agent-CLI classifiers (`claude-cli`, `codex-cli`) against fake `claude` and `codex` executables.

Each fake is a small Python script put first on PATH. It records its argv,
working folder, FORGEMEM_CLASSIFIER_RUN and stdin, then behaves as the test's
`mode` file says: answer (the way the real CLI does), print garbage, exit
non-zero, or hang (with a grandchild, to check the whole group is killed).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from forgemem.agents import claude_code, codex
from forgemem.capture.capturer import Capturer, make_classifier
from forgemem.capture.classify import agent_cli
from forgemem.capture.classify.agent_cli import ClaudeCLIClassifier, CodexCLIClassifier
from forgemem.capture.classify.llm import ANSWER_SCHEMA, SYSTEM_PROMPT
from forgemem.capture.classify.offline import OfflineClassifier
from forgemem.errors import ConfigError
from forgemem.recall.engine import RecallEngine
from forgemem.workspace import Workspace, init_forge_dir

from .test_capture import batch

FAKE = r'''#!{python}
import json, os, subprocess, sys, time
from pathlib import Path

here = Path(__file__).resolve().parent
stdin = sys.stdin.read()
mode = (here / "mode").read_text().strip()
record = {{"argv": sys.argv, "cwd": os.getcwd(), "run_env": os.environ.get("FORGEMEM_CLASSIFIER_RUN"),
          "session_env": sorted(k for k in ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_PROJECT_DIR")
                                if k in os.environ),
          "stdin": stdin, "pid": os.getpid(), "files": sorted(os.listdir("."))}}
answer = json.loads((here / "answer.json").read_text())
if "--output-schema" in sys.argv:
    record["schema"] = json.loads(Path(sys.argv[sys.argv.index("--output-schema") + 1]).read_text())
if mode == "hang":
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    record["grandchild"] = grandchild.pid
with open(here / "calls.jsonl", "a") as log:
    log.write(json.dumps(record) + "\n")
if mode == "hang":
    time.sleep(120)
if mode == "exit":
    sys.stderr.write("error: something went wrong in the fake\n")
    sys.exit(3)
if mode == "garbage":
    print("Sure! Here is what I would remember: nothing much.")
    sys.exit(0)
if "{kind}" == "claude":
    envelope = {{"type": "result", "subtype": "success", "is_error": False, "result": "done",
                "structured_output": answer, "total_cost_usd": 0.0123, "duration_ms": 2100,
                "usage": {{"input_tokens": 1200, "cache_creation_input_tokens": 300,
                          "cache_read_input_tokens": 5000, "output_tokens": 150}}}}
    if mode == "text":  # no structured_output: the answer as JSON text in a fence
        envelope["structured_output"] = None
        envelope["result"] = "```json\n" + json.dumps(answer) + "\n```"
    if mode == "error":
        envelope.update(subtype="error_max_turns", is_error=True, result="Reached max turns",
                        structured_output=None)
    if mode == "wrong-shape":
        envelope["structured_output"] = {{"memory": "not the schema"}}
    print(json.dumps(envelope))
    sys.exit(1 if mode == "error" else 0)
events = [{{"type": "thread.started", "thread_id": "t-1"}}, {{"type": "turn.started"}}]
if mode == "error":
    events.append({{"type": "turn.failed", "error": {{"message": "stream disconnected"}}}})
    print("\n".join(json.dumps(e) for e in events))
    sys.exit(1)
text = json.dumps({{"memory": "not the schema"}}) if mode == "wrong-shape" else json.dumps(answer)
events.append({{"type": "item.completed", "item": {{"id": "i1", "type": "agent_message", "text": text}}}})
events.append({{"type": "turn.completed",
               "usage": {{"input_tokens": 4000, "cached_input_tokens": 3000, "output_tokens": 90}}}})
if mode != "text":  # "text": no -o file written; the message comes from the event stream
    Path(sys.argv[sys.argv.index("--output-last-message") + 1]).write_text(text)
print("\n".join(json.dumps(e) for e in events))
'''

AWS_KEY = "AKIA2E0A8F3B244C9986"
PASSWORD = "Tr0ub4dor&3"


class FakeAgent:
    """A fake `claude` or `codex` on PATH; `calls()` is what it saw."""

    def __init__(self, folder: Path, kind: str):
        self.folder, self.kind = folder, kind
        folder.mkdir(parents=True, exist_ok=True)
        script = folder / kind
        script.write_text(FAKE.format(python=sys.executable, kind=kind))
        script.chmod(0o755)
        self.mode("answer")
        self.answer([])

    def mode(self, mode: str) -> None:
        (self.folder / "mode").write_text(mode)

    def answer(self, memories: list[dict]) -> None:
        (self.folder / "answer.json").write_text(json.dumps({"memories": memories}))

    def calls(self) -> list[dict]:
        log = self.folder / "calls.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def agents(tmp_path, monkeypatch):
    folder = tmp_path / "bin"
    fakes = {"claude": FakeAgent(folder, "claude"), "codex": FakeAgent(folder, "codex")}
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return fakes


def item(text, category="coding-preferences", scope="user", relation="new", target=None, turn=1, quote=""):
    return {"text": text, "category": category, "scope": scope, "relation": relation,
            "target": target, "turn": turn, "quote": quote, "confidence": 0.9}


def configure(tmp_path: Path, model: str, timeout: int = 20) -> Workspace:
    init_forge_dir(tmp_path / "project" / ".forge")
    init_forge_dir(tmp_path / "home" / ".forge")
    (tmp_path / "home/.forge/config.yaml").write_text(  # the user's own config (HOME is tmp_path/home)
        f"memory:\n  classifier_model: {model}\n  classifier_timeout: {timeout}\n"
    )
    return Workspace.open(
        cwd=tmp_path, repo_dir=tmp_path / "project/.forge/memory", user_dir=tmp_path / "home/.forge/memory"
    )


def capture(ws: Workspace, embedder, *texts: str):
    return Capturer(ws, RecallEngine(ws, embedder=embedder)).run(batch(*texts))


def alive(pid: int) -> bool:
    """Whether a process is still running (a zombie waiting to be reaped counts as ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


# ------------------------------------------------------------------ answers become memories


def test_claude_cli_answer_becomes_memories_with_cost(agents, tmp_path, real_embedder, monkeypatch):
    for name in ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_PROJECT_DIR"):  # as under a hook's capture
        monkeypatch.setenv(name, "1" if name != "CLAUDE_PROJECT_DIR" else str(tmp_path / "project"))
    ws = configure(tmp_path, "claude-cli:sonnet")
    old, _ = ws.add("The user prefers black for formatting.", scope="user", category="coding-preferences")
    agents["claude"].answer([item("The user formats Python with ruff format, not black.", relation="supersedes",
                                  target="M1", quote="ruff format instead of black")])
    result = capture(ws, real_embedder, "From now on use ruff format instead of black.", "Okay.")
    [memory] = result.written
    assert result.classifier == "claude-cli:sonnet"
    assert memory.supersedes == (old.id,) and memory.version == 2
    assert result.notes == ["cost: $0.0123, 6,500 tokens in, 150 out (reported by claude)"]
    [call] = agents["claude"].calls()
    argv = call["argv"]
    assert argv[1] == "-p" and argv[argv.index("--output-format") + 1] == "json"
    assert json.loads(argv[argv.index("--json-schema") + 1]) == ANSWER_SCHEMA
    assert argv[argv.index("--system-prompt") + 1] == SYSTEM_PROMPT
    assert json.loads(argv[argv.index("--settings") + 1]) == {"disableAllHooks": True}
    assert argv[argv.index("--model") + 1] == "sonnet"
    assert "--no-session-persistence" in argv and "--strict-mcp-config" in argv
    assert call["run_env"] == "1"
    assert call["session_env"] == []  # else Claude Code refuses to start "inside another session"
    prompt = json.loads(call["stdin"])  # the prompt is on stdin: the turns and M-references, never ids
    assert prompt["existing_memories"][0]["ref"] == "M1" and old.id not in call["stdin"]
    assert result.chars_sent == len(SYSTEM_PROMPT) + len(call["stdin"])


def test_codex_cli_answer_becomes_memories_with_tokens(agents, tmp_path, real_embedder):
    ws = configure(tmp_path, "codex-cli")
    agents["codex"].answer([item("In this repo, releases are tagged vX.Y.Z.", category="project-conventions",
                                 scope="repo")])
    result = capture(ws, real_embedder, "We tag releases as vX.Y.Z here.", "Got it.")
    [memory] = result.written
    assert result.classifier == "codex-cli" and memory.scope == "repo"
    assert result.notes == ["cost: 4,000 tokens in (3,000 cached), 90 out (reported by codex)"]
    [call] = agents["codex"].calls()
    argv = call["argv"]
    assert argv[1] == "exec" and argv[-1] == "-"  # `-`: the prompt is read from stdin
    assert call["schema"] == ANSWER_SCHEMA  # --output-schema names a file holding the schema
    assert argv[argv.index("--sandbox") + 1] == "read-only"
    assert {"--skip-git-repo-check", "--ephemeral", "--json", "--output-last-message"} <= set(argv)
    assert "notify=[]" in argv and "--model" not in argv
    assert call["run_env"] == "1"
    assert call["stdin"].startswith(SYSTEM_PROMPT) and "vX.Y.Z" in call["stdin"]


@pytest.mark.parametrize("kind, model", [("claude", "claude-cli"), ("codex", "codex-cli")])
def test_an_answer_given_as_text_is_checked_and_used(agents, tmp_path, real_embedder, kind, model):
    ws = configure(tmp_path, model)
    agents[kind].mode("text")
    agents[kind].answer([item("The user wants commit messages in the imperative mood.")])
    result = capture(ws, real_embedder, "Write commit messages in the imperative mood, always.", "ok")
    assert result.classifier == model and [m.body for m in result.written] == [
        "The user wants commit messages in the imperative mood."
    ]


# ------------------------------------------------------------------ every failure falls back


WHY = {
    ("garbage", "claude"): "claude's output is not its JSON result",
    ("garbage", "codex"): "codex wrote no final message",
    ("exit", "claude"): "claude exited with status 3: error: something went wrong in the fake",
    ("exit", "codex"): "codex exited with status 3: error: something went wrong in the fake",
    ("error", "claude"): "claude exited with status 1: Reached max turns",
    ("error", "codex"): "codex exited with status 1: stream disconnected",
    ("wrong-shape", "claude"): "the answer does not follow the schema",
    ("wrong-shape", "codex"): "the answer does not follow the schema",
}


@pytest.mark.parametrize("kind, model", [("claude", "claude-cli"), ("codex", "codex-cli")])
@pytest.mark.parametrize("mode", ["garbage", "exit", "error", "wrong-shape"])
def test_failures_fall_back_to_the_offline_classifier_with_a_note(agents, tmp_path, real_embedder, kind, model,
                                                                  mode):
    ws = configure(tmp_path, model)
    agents[kind].mode(mode)
    result = capture(ws, real_embedder, "Please always add type hints to new functions.", "ok")
    assert result.classifier == "offline" and result.written  # the offline rules decided
    assert result.notes[0] == f"{model} unavailable ({WHY[mode, kind]}); the offline classifier decided"
    assert len(agents[kind].calls()) == 1  # a CLI is not retried


def test_claude_error_result_says_what_claude_said_and_keeps_the_cost(agents, tmp_path, real_embedder):
    ws = configure(tmp_path, "claude-cli")
    agents["claude"].mode("error")
    result = capture(ws, real_embedder, "Please always add type hints to new functions.", "ok")
    assert "Reached max turns" in result.notes[0]
    assert result.notes[1].startswith("cost: $0.0123")  # a failed call still cost something


@pytest.mark.slow
@pytest.mark.parametrize("kind, model", [("claude", "claude-cli"), ("codex", "codex-cli")])
def test_a_hung_cli_is_killed_with_its_children_after_the_timeout(agents, tmp_path, real_embedder, kind, model):
    ws = configure(tmp_path, model, timeout=3)
    agents[kind].mode("hang")
    started = time.monotonic()
    result = capture(ws, real_embedder, "Never leave print statements in committed code.", "ok")
    assert time.monotonic() - started < 30  # 3 s, the kill and the offline pass; never the fake's 120 s
    assert result.classifier == "offline" and "timed out after 3 s and was stopped" in result.notes[0]
    assert len(result.written) == 1
    [call] = agents[kind].calls()
    deadline = time.monotonic() + 5
    while (alive(call["pid"]) or alive(call["grandchild"])) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(call["pid"]) and not alive(call["grandchild"])  # the whole process group


@pytest.mark.parametrize("model, command", [("claude-cli", "claude"), ("codex-cli:gpt-5-codex", "codex")])
def test_a_missing_executable_falls_back(tmp_path, monkeypatch, real_embedder, model, command):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    ws = configure(tmp_path, model)
    result = capture(ws, real_embedder, "Please always add type hints to new functions.", "ok")
    assert result.classifier == "offline"
    assert f"the `{command}` command is not on PATH" in result.notes[0] and len(result.written) == 1


# ------------------------------------------------------------------ isolation


@pytest.mark.parametrize("kind, model", [("claude", "claude-cli"), ("codex", "codex-cli")])
def test_the_cli_sees_only_redacted_text_on_stdin_and_runs_outside_the_project(agents, tmp_path, real_embedder,
                                                                              kind, model, monkeypatch):
    ws = configure(tmp_path, model)
    monkeypatch.chdir(tmp_path / "project")
    agents[kind].answer([item("The deploy credentials live in the team vault.", category="project-conventions",
                              scope="repo")])
    said = (f"Deploy with key {AWS_KEY}; the staging password is {PASSWORD} and the tarball goes "
            "to the quokka bucket")
    result = capture(ws, real_embedder, said, "I will deploy it to the quokka bucket.")
    assert result.classifier == model
    [call] = agents[kind].calls()
    seen = call["stdin"] + "\n".join(call["argv"])
    assert AWS_KEY not in seen and PASSWORD not in seen
    assert "[REDACTED:" in call["stdin"] and "quokka" in call["stdin"]
    assert not any("quokka" in arg or "staging" in arg for arg in call["argv"])  # conversation never on argv
    cwd = Path(call["cwd"])
    run_folder = Path.home() / ".forge" / "cache" / "run"
    assert cwd.parent == run_folder and cwd.name.startswith("classifier-")
    assert tmp_path / "project" not in (cwd, *cwd.parents)
    assert not cwd.exists()  # removed after the run
    assert oct(run_folder.stat().st_mode & 0o777) == "0o700"
    for memory_file in (tmp_path / "project/.forge/memory").rglob("*.md"):
        assert AWS_KEY not in memory_file.read_text() and PASSWORD not in memory_file.read_text()


def test_the_hooks_do_nothing_inside_a_classifier_run(tmp_path, monkeypatch):
    started: list[tuple] = []
    for module in (claude_code, codex):  # each agent's module starts capture through its own import of it
        monkeypatch.setattr(module, "capture_in_background", lambda *args: started.append(args))
    monkeypatch.setattr(claude_code, "context_for", lambda *args, **kw: "SHOULD NOT BE INJECTED")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    stop = json.dumps({"hook_event_name": "Stop", "transcript_path": str(transcript), "cwd": str(tmp_path)})
    prompt = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "how do we test?", "cwd": str(tmp_path)})
    rollout = tmp_path / "sessions" / "rollout-2026-t-1.jsonl"
    rollout.parent.mkdir()
    rollout.write_text("")
    monkeypatch.setenv("CODEX_HOME", str(tmp_path))
    notify = json.dumps({"type": "agent-turn-complete", "thread-id": "t-1", "cwd": str(tmp_path)})

    monkeypatch.setenv(agent_cli.CLASSIFIER_RUN_ENV, "1")
    assert claude_code.claude_code(stop) == "" and claude_code.claude_code(prompt) == ""
    codex.codex(notify)
    assert started == []  # nothing captured, nothing injected

    monkeypatch.delenv(agent_cli.CLASSIFIER_RUN_ENV)  # the same events in the user's own session do act
    claude_code.claude_code(stop)
    codex.codex(notify)
    assert len(started) == 2


# ------------------------------------------------------------------ configuration


def test_classifier_model_values_are_checked(tmp_path):
    ws = configure(tmp_path, "claude-cli")
    assert isinstance(make_classifier(ws), ClaudeCLIClassifier) and make_classifier(ws).name == "claude-cli"
    ws = configure(tmp_path, "codex-cli:gpt-5-codex")
    classifier = make_classifier(ws)
    assert isinstance(classifier, CodexCLIClassifier) and classifier.model == "gpt-5-codex"
    assert isinstance(classifier.fallback, OfflineClassifier)
    for bad, message in [("claude-cli:", "name a model"), ("codex-cli:--yolo", "not a model name"),
                         ("claude-cli:a b", "not a model name")]:
        ws = configure(tmp_path, json.dumps(bad))
        with pytest.raises(ConfigError, match=message):
            make_classifier(ws)
    ws = configure(tmp_path, "bogus:model")
    with pytest.raises(ConfigError, match="claude-cli, codex-cli"):
        make_classifier(ws)  # the known providers include the agent CLIs


def test_a_repository_config_cannot_choose_an_agent_cli(tmp_path):
    ws = configure(tmp_path, '""')
    (tmp_path / "project/.forge/config.yaml").write_text("memory:\n  classifier_model: claude-cli\n")
    ws = Workspace.open(cwd=tmp_path, repo_dir=tmp_path / "project/.forge/memory",
                        user_dir=tmp_path / "home/.forge/memory")
    assert ws.config.classifier_model == "" and any("classifier_model" in w for w in ws.warnings)
    assert isinstance(make_classifier(ws), OfflineClassifier)


def test_envelope_and_cost_parsing_is_lenient():
    result = {"type": "result", "subtype": "success", "structured_output": {"memories": []}, "total_cost_usd": 0}
    assert agent_cli.claude_envelope(json.dumps(result)) == result
    assert agent_cli.claude_envelope("warning: update available\n" + json.dumps(result)) == result
    assert agent_cli.claude_envelope(json.dumps([{"type": "system"}, result])) == result
    assert agent_cli.claude_envelope("not json") is None
    assert agent_cli.claude_cost(result) == ["cost: $0.0000 (reported by claude)"]
    assert agent_cli.claude_cost({"total_cost_usd": True, "usage": "x"}) == []
    assert agent_cli.codex_cost([{"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 2}},
                                 {"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": -1}}]) \
        == ["cost: 15 tokens in, 2 out (reported by codex)"]


# ------------------------------------------------------------------ end to end


def test_observe_once_with_claude_cli_in_the_users_config(agents, tmp_path, cli, monkeypatch):
    home = Path.home()
    (home / ".forge").mkdir(parents=True, exist_ok=True)
    (home / ".forge" / "config.yaml").write_text("memory:\n  classifier_model: claude-cli\n")
    project = tmp_path / "project"
    init_forge_dir(project / ".forge")
    monkeypatch.chdir(project)
    agents["claude"].answer([item("In this repo, migrations are applied with make migrate.",
                                  category="project-conventions", scope="repo")])
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"role": "user", "content": "we apply migrations with make migrate"}) + "\n"
                          + json.dumps({"role": "assistant", "content": "Noted."}) + "\n")
    result = cli("--repo-dir", str(project / ".forge/memory"), "observe", "--once", "--final", "--json",
                 str(transcript))
    assert result.code == 0, result.err
    [p] = result.json()["passes"]
    assert p["classifier"] == "claude-cli" and p["written"][0]["content"].startswith("In this repo")
    assert p["notes"] == ["cost: $0.0123, 6,500 tokens in, 150 out (reported by claude)"]
    [call] = agents["claude"].calls()
    assert call["run_env"] == "1" and Path(call["cwd"]).parent == home / ".forge/cache/run"
    status = cli("--repo-dir", str(project / ".forge/memory"), "observe", "--status", str(transcript))
    assert status.code == 0, status.err
    assert "by claude-cli: 1 written" in status.out and "cost: $0.0123" in status.out


def test_install_says_which_classifier_capture_uses(cli, project, monkeypatch):
    monkeypatch.chdir(project)
    result = cli("install", "claude-code")
    assert result.code == 0, result.err
    assert "capture uses the offline classifier" in result.err
    assert "memory.classifier_model: claude-cli in ~/.forge/config.yaml" in result.err
    (Path.home() / ".forge" / "config.yaml").write_text("memory:\n  classifier_model: claude-cli:sonnet\n")
    result = cli("install", "claude-code")
    assert "capture uses Claude Code itself (classifier_model: claude-cli:sonnet)" in result.err
    result = cli("install", "codex")
    assert result.code == 0 and "set it to codex-cli" in result.err

