"""Claude Code: its hook events in (`forgemem hook claude-code`), and `install claude-code`.

| event | what forgemem does |
|---|---|
| `UserPromptSubmit` | recall for `prompt`; the context block goes out as `hookSpecificOutput.additionalContext`. A prompt that is a `/forgemem …` command is answered here instead (`decision: block`, the answer as `reason`); the model is not called |
| `SessionStart` with `source: compact` | the same, for the last human turns of `transcript_path` |
| `PreCompact` / `Stop` / `SessionEnd` | a capture pass over `transcript_path` in a background process |

Within a session (`session_id`), a memory already injected and unchanged is not injected again
(`forgemem.agents.sessions` keeps the record in the user cache) until the context is compacted
(`PreCompact`, `SessionStart`, or a compaction seen in the transcript) or a new session starts;
when nothing new is relevant, nothing is injected. `hook_repeat_memories: true` in the config
injects every relevant memory on every prompt, as before.

Install (`forgemem.agents.claude_settings`) merges the hooks into the project's
`.claude/settings.local.json`, kept out of git (or `~/.claude/settings.json` with `--user`), and writes
`.claude/commands/forgemem.md` (no shell line: the hook answers `/forgemem`).
"""

from __future__ import annotations

import json
import re
import sys
import traceback
from pathlib import Path

from forgemem.agents import sessions
from forgemem.agents.claude_settings import (  # noqa: F401 - the names tests and other modules use from here
    COMMAND_NAME,
    HOOK_EVENTS,
    SLASH_COMMAND_TEXT,
    _is_forgemem_command,
    claude_dir,
    is_old_slash_command,
    plan_claude_code_install,
    plan_claude_code_uninstall,
)
from forgemem.agents.hooks import (
    _payload_cwd,
    announced,
    capture_in_background,
    context_for,
    log,
    recent_human_text,
    unreadable_notice,
)
from forgemem.agents.install import Plan, forgemem_command  # noqa: F401
from forgemem.config import classifier_run

NAME = "claude-code"


#: `/forgemem …` typed as a prompt (the Claude Code command name), answered by the hook itself
SLASH_PROMPT = re.compile(r"\A\s*/forgemem(?=\s|\Z)")


def claude_code(stdin_text: str, timeout_ms: int | None = None) -> str:
    """Handle one Claude Code hook event; returns what to print (possibly nothing)."""
    if classifier_run():  # forgemem's own agent run (llm.agent_cli): hands off
        return ""
    try:
        payload = json.loads(stdin_text)
        if not isinstance(payload, dict):
            raise ValueError("the hook input is not a JSON object")
        event = payload.get("hook_event_name", "")
        cwd = _payload_cwd(payload)
        if event == "UserPromptSubmit":
            prompt = payload.get("prompt")
            if not isinstance(prompt, str):
                raise ValueError("UserPromptSubmit input has no prompt string")
            if SLASH_PROMPT.match(prompt):
                return json.dumps({"decision": "block", "reason": slash_answer(prompt, cwd)}, ensure_ascii=False)
            return _inject(event, prompt, cwd, timeout_ms, payload)
        if event in ("SessionStart", "PreCompact"):  # the context starts again: everything may be injected again
            sessions.reset(payload.get("session_id"))
        if event == "SessionStart":
            if payload.get("source") != "compact":
                return ""
            query = recent_human_text(payload.get("transcript_path"))
            return _inject(event, query, cwd, timeout_ms, payload) if query else ""
        transcript = payload.get("transcript_path")
        if not isinstance(transcript, str):
            transcript = None
        if event == "PreCompact" and transcript:
            capture_in_background(cwd, transcript, "--due", "--compaction")
        elif event == "SessionEnd" and transcript:
            capture_in_background(cwd, transcript, "--due", "--final")
        elif event == "Stop" and transcript:
            capture_in_background(cwd, transcript, "--due")
        return ""
    except Exception as exc:  # noqa: BLE001 - hooks fail open
        frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        where = f" (at {Path(frame.filename).name}:{frame.lineno} in {frame.name})" if frame else ""
        log(f"claude-code hook failed: {type(exc).__name__}: {exc}{where}")
        return ""


def _inject(event: str, query: str, cwd: Path, timeout_ms: int | None, payload: dict) -> str:
    """The hook's answer: the context block for `query` and, on a prompt, what capture saved since
    the last one (`forgemem.announce`): shown to the user as `systemMessage`, and to the agent as a
    fenced block after the context block (outside the token budget, at most five memories)."""
    from forgemem.workspace import Workspace

    workspace = Workspace.open(cwd=cwd)
    for warning in workspace.warnings:
        log(warning)
    block = ""
    seen = None
    if not workspace.config.hook_repeat_memories:
        seen = sessions.load(payload.get("session_id"), payload.get("transcript_path"))
    if query.strip():
        try:
            block = context_for(query, cwd, timeout_ms, workspace=workspace, seen=seen)
        except Exception as exc:  # noqa: BLE001 - the notice below still goes out
            log(f"recall failed: {type(exc).__name__}: {exc}")
    if seen is not None:
        seen.save()
    saved = announced(workspace) if event == "UserPromptSubmit" else []
    broken = unreadable_notice(workspace) if event == "UserPromptSubmit" else None
    output: dict = {}
    if saved:
        from forgemem.capture.announce import context_block, notice

        output["systemMessage"] = notice(saved)
        notice_block = context_block(saved, model=workspace.config.embedding_model)
        block = "\n".join(part for part in (block, notice_block) if part)
    if broken:  # to the user, who can fix the file: the model gets no word of it
        output["systemMessage"] = "\n".join(part for part in (output.get("systemMessage"), broken) if part)
    if block:
        output["hookSpecificOutput"] = {"hookEventName": event, "additionalContext": block}
    return json.dumps(output) if output else ""


def slash_answer(prompt: str, cwd: Path) -> str:
    """The answer to a `/forgemem …` prompt (the `/memory` language), as markdown for the user."""
    from forgemem.agents import slash
    from forgemem.workspace import Workspace

    line = prompt.strip()  # `/forgemem …`: the answers name the command the user typed
    try:
        workspace = Workspace.open(cwd=cwd)
    except Exception as exc:  # noqa: BLE001 - one line for the user, not a traceback
        return f"forgemem: {exc}"
    for warning in workspace.warnings:
        log(warning)
    answer = slash.run(line, workspace, search=slash.server_search(workspace, on_notice=log))
    log(f"answered /forgemem {line.split()[1] if len(line.split()) > 1 else 'summary'}")
    return answer


def main_claude_code() -> int:
    """`forgemem hook claude-code`: the event on stdin, the output on stdout, always exit 0."""
    try:
        text = sys.stdin.read()
    except (OSError, UnicodeDecodeError) as exc:
        log(f"claude-code hook could not read its input: {exc}")
        return 0
    output = claude_code(text)
    if output:
        sys.stdout.write(output + "\n")
    sys.stdout.flush()
    return 0


# ------------------------------------------------------------------ the registry's interface


def install_plan(user: bool, where: Path) -> Plan:
    from forgemem.store.folder import find_repo_root

    root = find_repo_root(where)
    return plan_claude_code_install(claude_dir(root, user), None if user else root)


def uninstall_plan(user: bool, where: Path) -> Plan:
    from forgemem.store.folder import find_repo_root

    root = find_repo_root(where)
    return plan_claude_code_uninstall(claude_dir(root, user), None if user else root)


def hook(payload: str | None) -> None:
    """`forgemem hook claude-code`: the event on stdin, the answer on stdout."""
    main_claude_code()
