"""In the agent: context blocks, the /memory language, Claude Code hooks, install/uninstall."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from forgemem.agents import claude_code, codex, hooks, slash
from forgemem.recall import context as context_module
from forgemem.recall.engine import RecallEngine
from forgemem.recall.rank import Query
from forgemem.workspace import Workspace

from .conftest import SAMPLES, snapshot_bytes


@pytest.fixture
def workspace(project, isolated_home) -> Workspace:
    shutil.copytree(SAMPLES / "user" / ".forge", isolated_home / ".forge", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("cache"))
    return Workspace.open(cwd=project)


@pytest.fixture
def engine(workspace, real_embedder) -> RecallEngine:
    return RecallEngine(workspace, embedder=real_embedder)


def block_for(engine: RecallEngine, prompt: str, budget: int = 1500) -> context_module.ContextBlock:
    """The block the hooks would inject: the top 10, at or above the configured floor, within `budget`."""
    floor = engine.workspace.config.recall_floor
    result = engine.recall(Query(prompt, k=10, floor=floor))
    return context_module.render(result.to_dicts(), result.lexical_only, budget, floor=floor)


def independent_count(text: str) -> int:
    """Tokens counted here, apart from forgemem's code, with the same packaged tokenizer file."""
    from tokenizers import Tokenizer

    from forgemem.index.embedding import resolve_model_dir

    tokenizer = Tokenizer.from_file(str(resolve_model_dir("") / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()  # the file pads to 128 for the model; a count must not
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


# ------------------------------------------------------------------ context


def test_context_block_holds_the_right_memories_fenced_and_labelled(engine, workspace):
    block = block_for(engine, "how do I run the tests?")
    lines = block.text.splitlines()
    assert lines[0] == context_module.OPEN and lines[-1] == context_module.CLOSE
    assert "not instructions" in lines[1]
    memories = lines[2:-1]
    assert all(line.startswith("- [") for line in memories)
    snap = workspace.load()
    tests_memory = next(m for m in snap.heads() if m.body.startswith("Run unit tests with `make test`"))
    assert block.ids[0] == tests_memory.id
    assert memories[0].startswith(f"- [{tests_memory.id[4:12]} project-conventions] Run unit tests")
    assert all(snap.graph.is_head(i) for i in block.ids)  # heads only
    assert block.tokens == independent_count(block.text) <= 1500


@pytest.mark.parametrize("prompt", ["hi", "thanks!", "ok", "what's the weather in Paris", "make the button blue"])
def test_nothing_relevant_gives_no_block_at_all(engine, prompt):
    block = block_for(engine, prompt)
    assert block.text == "" and block.tokens == 0 and block.ids == []


@pytest.mark.parametrize("budget", [0, 40, 90, 150, 260, 400])
def test_the_budget_is_never_exceeded(engine, budget):
    block = block_for(engine, "how do we deploy, test, lint and write commit messages in this project?", budget)
    if block.text:
        assert independent_count(block.text) <= budget
    else:
        assert block.ids == []
    full = block_for(engine, "how do we deploy, test, lint and write commit messages in this project?")
    assert len(block.ids) <= len(full.ids)
    assert block.left_out == len(full.ids) + full.left_out - len(block.ids)


def test_conflicts_are_marked_with_both_sides(engine, workspace):
    block = block_for(engine, "how should staff admin screens be built? React app or server-rendered HTMX?")
    conflicted = [line for line in block.text.splitlines() if "⚠ CONFLICT with" in line]
    assert len(conflicted) == 2  # both sides of the React / HTMX contradiction


def test_context_command(cli, workspace, project, monkeypatch):
    monkeypatch.chdir(project)
    result = cli("context", "--json", "which database migrations tool do we use?")
    assert result.code == 0, result.err
    data = result.json()
    assert "Alembic" in data["context"] and data["tokens"] <= 1500
    assert cli("context", "hi").out == ""
    assert "Alembic" in cli("context", "-", stdin="where do migrations live?").out


def test_the_block_marks_a_memory_whose_cited_file_is_gone(cli, workspace, project, monkeypatch):
    monkeypatch.chdir(project)
    (project / "calc").mkdir()
    (project / "calc" / "ops.py").write_text("def add(a, b):\n    return a + b\n")
    memory, _ = workspace.add("Keep the arithmetic helpers in `calc/ops.py` free of I/O.", scope="repo",
                              category="project-conventions")
    prompt = "where do the arithmetic helpers live, and can they do I/O?"
    before = cli("context", "--json", prompt).json()
    assert memory.id in before["ids"] and "may be out of date" not in before["context"]
    (project / "calc" / "ops.py").rename(project / "calc" / "arith.py")
    after = cli("context", "--json", prompt).json()
    line = next(x for x in after["context"].splitlines() if "arithmetic helpers" in x)
    assert line.endswith("(may be out of date: cites `calc/ops.py`, no longer in the repository)")


# ------------------------------------------------------------------ /memory


def test_slash_commands_answer_usefully(workspace):
    run = lambda line: slash.run(line, workspace)  # noqa: E731
    summary = run("/memory")
    assert summary.startswith("**forgemem**: 43 current memories") and "1 conflict" in summary
    assert run("/memory help").startswith("**/memory**")
    listed = run("/memory list corrections").splitlines()
    assert listed[0] == "**5 memories** (corrections):" and all(line.startswith("- `") for line in listed[1:])
    assert "Run unit tests with `make test`" in run("/forgemem search how do we run tests")
    snap = workspace.load()
    head = next(m for m in snap.heads() if m.body.startswith("Run unit tests with"))
    history = run(f"/memory history {head.id[4:10]}")  # a short prefix is enough when unambiguous
    assert history.splitlines()[0].endswith("(3 version(s), oldest first):")
    assert history.splitlines()[-1].startswith(f"- v3 `{head.id[4:12]}`") and "← current" in history
    shown = run(f"/memory show {head.id}")
    assert "v3" in shown and "supersedes" in shown and head.body in shown
    assert "from ~/.claude/projects/harbor/8c1d2e3f.jsonl:412-430 — “integration tests only run with make test-all now”" \
        in shown.splitlines()
    assert "supersedes →" in run(f"/memory graph {head.id[4:12]}")
    assert "**Conflict**" in run("/memory conflicts")
    assert '(`forgemem add "NEW TEXT" --supersedes A --supersedes B`)' in run("/memory conflicts")
    assert "current memories" in run("/memory stats")


def test_slash_mistakes_get_one_line_never_a_traceback(workspace, project):
    answers = [
        slash.run("/memory frobnicate", workspace),
        slash.run("/memory show", workspace),
        slash.run("/memory show deadbeefdead", workspace),
        slash.run("/memory list nonsense", workspace),
        slash.run("/memory search", workspace),
        slash.run("/memory add", workspace),
        slash.run("/memory forget", workspace),
        slash.run("/memory show 0", workspace),
    ]
    for answer in answers:
        assert "\n" not in answer and "Traceback" not in answer, answer
    assert answers[0].startswith("Unknown /memory command `frobnicate`")
    # the answers name the command the user typed: `/forgemem` in Claude Code (its own /memory is another thing)
    assert slash.run("/forgemem frobnicate", workspace).startswith("Unknown /forgemem command `frobnicate`")
    assert slash.run("/forgemem", workspace).endswith("`/forgemem help` for commands.")
    assert slash.run("/forgemem help", workspace).startswith("**/forgemem**") and "/memory" not in \
        slash.run("/forgemem help", workspace)
    assert slash.run("/forgemem show", workspace).startswith("Usage: `/forgemem show <id>`")
    hooked = json.loads(claude_code.claude_code(json.dumps({
        "hook_event_name": "UserPromptSubmit", "prompt": "/forgemem", "cwd": str(project)})))
    assert hooked["reason"].endswith("`/forgemem help` for commands.")
    assert answers[2] == "No memory has an id starting with `deadbeefdead`."
    assert "matches" in answers[7]  # ambiguous prefix: says so


def test_slash_add_and_forget_write_files(workspace):
    answer = slash.run("/memory add corrections: use `rg`, never `grep -r` here", workspace)
    assert answer.startswith("Remembered `") and "repo/corrections" in answer
    short = answer.split("`")[1]
    memory = workspace.load().resolve(short)
    assert memory.body == "use `rg`, never `grep -r` here" and memory.path.exists()
    guessed = slash.run('/memory add "I am a data engineer based in Oslo"', workspace)
    assert "user/user-facts" in guessed
    forgot = slash.run(f"/memory forget {short} wrong place", workspace)
    assert forgot.startswith(f"Forgot `{short}`")
    assert workspace.load().resolve(short).id not in {m.id for m in workspace.load().heads()}


def test_slash_cli(cli, workspace, project, monkeypatch):
    monkeypatch.chdir(project)
    result = cli("slash", "/memory search how do we lint Python code?")
    assert result.code == 0 and "ruff" in result.out
    nothing = cli("slash", "/memory search thanks")
    assert nothing.out.startswith("Nothing found for “thanks” (no memory scores 0.25 or more for it).")
    assert cli("slash", "/memory nope").out.startswith("Unknown /memory command")


# ------------------------------------------------------------------ hooks (in-process)


def prompt_event(project: Path, prompt: str, transcript: str = "/tmp/none.jsonl") -> str:
    # the shape of Claude Code's UserPromptSubmit input (hooks reference: common fields + prompt)
    return json.dumps({
        "session_id": "2f0c9c8e-4b8e-4a57-9d0e-4bb2f0a3c111",
        "transcript_path": transcript,
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    })


def test_user_prompt_submit_injects_context(project, workspace, model_cache):
    output = claude_code.claude_code(prompt_event(project, "how do I run the tests?"), timeout_ms=60_000)
    data = json.loads(output)
    specific = data["hookSpecificOutput"]
    assert specific["hookEventName"] == "UserPromptSubmit"
    assert specific["additionalContext"].startswith(context_module.OPEN)
    assert "make test" in specific["additionalContext"]
    assert claude_code.claude_code(prompt_event(project, "thanks"), timeout_ms=60_000) == ""


def test_session_start_after_compaction_reinjects_for_the_recent_turns(project, workspace, tmp_path):
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(json.dumps({"type": "user", "sessionId": "s", "message": {
        "role": "user", "content": "we need a new database migration for the berths table"}}) + "\n")
    event = {"session_id": "s", "transcript_path": str(transcript), "cwd": str(project),
             "hook_event_name": "SessionStart", "source": "compact"}
    output = json.loads(claude_code.claude_code(json.dumps(event), timeout_ms=60_000))
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    # the memory about migrations of large tables such as berths (Alembic's comes second, under the floor)
    assert "additive migration" in output["hookSpecificOutput"]["additionalContext"]
    assert claude_code.claude_code(json.dumps({**event, "source": "startup"})) == ""


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '{"hook_event_name": "UserPromptSubmit", "prompt": 5}'])
def test_hooks_fail_open(project, stdin, isolated_home, monkeypatch):
    monkeypatch.chdir(project)
    assert claude_code.claude_code(stdin) == ""
    if stdin not in ("",):
        assert "claude-code hook failed" in hooks.log_path().read_text()


def test_a_slow_recall_is_cut_off(project, workspace, monkeypatch):
    from forgemem.recall import client

    def slow(*args, **kwargs):
        time.sleep(2)
        return {"ok": True, "context": "late", "tokens": 1, "ids": [], "left_out": 0}

    monkeypatch.setattr(client, "answer", slow)
    started = time.monotonic()
    assert claude_code.claude_code(prompt_event(project, "how do I run the tests?"), timeout_ms=200) == ""
    assert time.monotonic() - started < 1.5
    assert "longer than 0.2 s" in hooks.log_path().read_text()


def test_injected_context_is_never_captured_again(tmp_path):
    from forgemem.capture.transcripts import Turn, read_all

    block = "<forgemem-context>\nReference data …\n- [1234abcd corrections] Never use mocks for the db.\n</forgemem-context>"
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(
        json.dumps({"type": "user", "sessionId": "s", "message": {"role": "user", "content": f"fix the test\n{block}"}})
        + "\n"
        + json.dumps({"type": "attachment", "sessionId": "s", "attachment": {
            "type": "hook_additional_context", "content": [block], "hookEvent": "UserPromptSubmit"}}) + "\n"
    )
    texts = [e.text for e in read_all(transcript) if isinstance(e, Turn)]
    assert texts == ["fix the test"]


# ------------------------------------------------------------------ install / uninstall


def test_install_claude_code_merges_is_idempotent_and_uninstall_restores_bytes(cli, project, monkeypatch):
    monkeypatch.chdir(project)
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    original = '{\n    "permissions": {"allow": ["Bash(make test)"]},\n    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}\n}\n'
    settings.write_text(original)
    dry = cli("install", "claude-code", "--dry-run")
    assert dry.code == 0 and "+" in dry.out and "forgemem hook claude-code" in dry.out
    assert settings.read_text() == original  # a dry run writes nothing
    assert cli("install", "claude-code").code == 0
    data = json.loads(settings.read_text())
    assert data["permissions"] == {"allow": ["Bash(make test)"]}
    assert [h["hooks"][0]["command"] for h in data["hooks"]["Stop"]][0] == "notify-send done"
    for event in claude_code.HOOK_EVENTS:
        ours = [e for e in data["hooks"][event] if "forgemem hook claude-code" in e["hooks"][0]["command"]]
        assert len(ours) == 1
    assert data["hooks"]["SessionStart"][0]["matcher"] == "compact"
    command_file = project / ".claude" / "commands" / "forgemem.md"
    assert command_file.read_text() == claude_code.SLASH_COMMAND_TEXT
    assert "!`" not in command_file.read_text() and "$ARGUMENTS" not in command_file.read_text()
    installed = settings.read_text()
    again = cli("install", "claude-code")
    assert settings.read_text() == installed and "already installed" in again.err
    assert cli("uninstall", "claude-code").code == 0
    assert settings.read_text() == original  # byte for byte
    assert not (project / ".claude" / "commands").exists()
    assert sorted(p.name for p in (project / ".claude").iterdir()) == ["settings.local.json"]


def test_install_into_a_project_without_claude_settings_and_back(cli, project, monkeypatch):
    monkeypatch.chdir(project)
    before = snapshot_bytes(project)
    assert cli("install", "claude-code").code == 0
    assert (project / ".claude" / "settings.local.json").exists()
    # a hand edit made after install survives uninstall
    settings = project / ".claude" / "settings.local.json"
    data = json.loads(settings.read_text())
    data["env"] = {"FOO": "1"}
    settings.write_text(json.dumps(data))
    assert cli("uninstall", "claude-code").code == 0
    assert json.loads(settings.read_text()) == {"env": {"FOO": "1"}}
    settings.unlink()
    (project / ".claude").rmdir()
    assert snapshot_bytes(project) == before


def test_install_user_scope_and_errors(cli, project, isolated_home, monkeypatch):
    monkeypatch.chdir(project)
    assert cli("install", "claude-code", "--user").code == 0
    assert (isolated_home / ".claude" / "settings.json").exists()
    assert cli("uninstall", "claude-code", "--user").code == 0
    assert not (isolated_home / ".claude").exists()
    broken = project / ".claude" / "settings.local.json"
    broken.parent.mkdir()
    broken.write_text("{ not json")
    result = cli("install", "claude-code")
    assert result.code == 1 and "not valid JSON" in result.err and broken.read_text() == "{ not json"
    assert cli("install", "vim").code == 2


def test_install_codex_and_back(cli, project, isolated_home, monkeypatch):
    import tomllib

    monkeypatch.chdir(project)
    config = isolated_home / ".codex" / "config.toml"
    config.parent.mkdir()
    original = 'model = "gpt-5"\n\n[mcp_servers.other]\ncommand = "other"\n'
    config.write_text(original)
    assert cli("install", "codex").code == 0
    data = tomllib.loads(config.read_text())
    assert data["notify"][-2:] == ["hook", "codex"]
    assert data["mcp_servers"]["forgemem"]["args"][-1] == "mcp"
    assert data["mcp_servers"]["other"] == {"command": "other"}
    assert data["model"] == "gpt-5"
    assert cli("install", "codex").code == 0 and config.read_text().count("[mcp_servers.forgemem]") == 1
    assert cli("uninstall", "codex").code == 0
    assert config.read_text() == original
    config.write_text('notify = ["my-notifier"]\n')
    result = cli("install", "codex")
    assert "already has `notify`" in result.err
    assert tomllib.loads(config.read_text())["notify"] == ["my-notifier"]


# ------------------------------------------------------------------ end to end, real processes


def wait_for(condition, timeout: float = 60.0):
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise AssertionError("timed out")
        time.sleep(0.05)


def test_claude_code_end_to_end(cli, project, workspace, isolated_home, monkeypatch, tmp_path, model_cache):
    """Install, then feed the installed hook command the documented JSON while a transcript grows."""
    monkeypatch.chdir(project)
    assert cli("install", "claude-code").code == 0
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    env = {**os.environ, "FORGEMEM_SERVER": "on", "FORGEMEM_SERVER_SOCKET": str(tmp_path / "recall.sock"),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}

    def fire(event: dict) -> subprocess.CompletedProcess:
        return subprocess.run(command, shell=True, input=json.dumps(event), capture_output=True, text=True,
                              cwd=project, env=env, timeout=60)

    transcript = tmp_path / "session.jsonl"
    transcript.write_text("")
    common = {"session_id": "s-e2e", "transcript_path": str(transcript), "cwd": str(project),
              "permission_mode": "default"}
    try:
        injected = ""
        for _ in range(40):  # the first calls start the recall server; later ones are answered by it
            done = fire({**common, "hook_event_name": "UserPromptSubmit", "prompt": "how do I run the tests?"})
            assert done.returncode == 0 and done.stderr == ""
            if done.stdout:
                injected = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
                break
            time.sleep(0.5)
        assert "make test" in injected and independent_count(injected) <= 1500
        # the conversation goes on; the transcript grows, Stop fires after each answer
        with open(transcript, "a") as handle:
            for n, text in enumerate(["how do I run the tests?", "Never run the integration tests against the "
                                      "staging database; use the local container."]):
                handle.write(json.dumps({"type": "user", "sessionId": "s-e2e",
                                         "message": {"role": "user", "content": text}}) + "\n")
                handle.write(json.dumps({"type": "assistant", "sessionId": "s-e2e", "message": {
                    "id": f"m{n}", "role": "assistant", "content": [{"type": "text", "text": "Okay."}]}}) + "\n")
                assert fire({**common, "hook_event_name": "Stop", "stop_hook_active": False}).returncode == 0
        stores = [project / ".forge" / "memory", isolated_home / ".forge" / "memory"]

        def files() -> set[Path]:
            return {p for store in stores for p in store.rglob("*.md")}

        before = files()
        started = time.monotonic()
        done = fire({**common, "hook_event_name": "PreCompact", "trigger": "manual", "custom_instructions": ""})
        assert done.returncode == 0 and time.monotonic() - started < 5  # compaction is not held up
        wait_for(lambda: files() - before)
        [new] = files() - before
        assert "staging database" in new.read_text() and "trigger: compaction" in new.read_text()
        assert fire({**common, "hook_event_name": "SessionEnd", "reason": "exit"}).returncode == 0
    finally:
        subprocess.run([sys.executable, "-m", "forgemem", "serve", "--stop"], env=env, capture_output=True)
    assert cli("uninstall", "claude-code").code == 0
    assert not (project / ".claude").exists()


def test_codex_notify_captures_from_the_sessions_rollout(cli, project, isolated_home, monkeypatch, model_cache):
    monkeypatch.chdir(project)
    folder = isolated_home / ".codex" / "sessions" / "2026" / "05" / "11"
    folder.mkdir(parents=True)
    rollout = folder / "rollout-2026-05-11T08-26-55-cx-1.jsonl"
    shutil.copy(Path(__file__).parent / "fixtures" / "transcripts" / "codex_small.jsonl", rollout)
    payload = json.dumps({"type": "agent-turn-complete", "thread-id": "cx-1", "turn-id": "t1",
                          "cwd": str(project), "input-messages": ["we always use pnpm, never npm"],
                          "last-assistant-message": "Switching the scripts to pnpm."})
    assert codex.find_codex_rollout("cx-1") == rollout
    store = project / ".forge" / "memory"
    before = set(store.rglob("*.md"))
    monkeypatch.setenv("FORGEMEM_REPO_DIR", str(store))
    (project / ".forge" / "config.yaml").write_text("memory:\n  cadence_turns: 1\n")
    assert cli("hook", "codex", payload).code == 0
    wait_for(lambda: set(store.rglob("*.md")) - before)
    [new] = set(store.rglob("*.md")) - before
    assert "pnpm" in new.read_text()
    assert cli("hook", "codex", "{broken").code == 0  # fails open
    assert "codex hook failed" in hooks.log_path().read_text()


def test_the_hooks_log_holds_one_line_per_event_and_stays_bounded(monkeypatch):
    from forgemem.agents import hooks

    monkeypatch.setattr(hooks, "LOG_LIMIT", 4096)
    hooks.log("first line\nTraceback (most recent call last):\n  File \"x.py\", line 1\nValueError: boom")
    [line] = hooks.log_path().read_text().splitlines()
    assert line.endswith("first line | Traceback (most recent call last): | File \"x.py\", line 1 | ValueError: boom")
    for n in range(400):
        hooks.log(f"event {n} " + "x" * 40)
    text = hooks.log_path().read_text()
    assert len(text.encode()) < 2 * 4096 + 200
    lines = text.splitlines()
    assert all(line[:4].isdigit() and line[4] == "-" for line in lines)  # every line whole, with its time
    assert lines[-1].split(" ", 1)[1].startswith("event 399")
