"""Claude Code: its hook events in (`forgemem hook claude-code`), and `install claude-code`.

| event | what forgemem does |
|---|---|
| `UserPromptSubmit` | recall for `prompt`; the context block goes out as `hookSpecificOutput.additionalContext`. A prompt that is a `/forgemem …` command is answered here instead (`decision: block`, the answer as `reason`); the model is not called |
| `SessionStart` with `source: compact` | the same, for the last human turns of `transcript_path` |
| `PreCompact` / `Stop` / `SessionEnd` | a capture pass over `transcript_path` in a background process |

Install merges the hooks into `.claude/settings.json` (or `~/.claude/` with `--user`) and writes
`.claude/commands/forgemem.md` (no shell line: the hook answers `/forgemem`).
"""

from __future__ import annotations

import json
import os
import re
import sys
import traceback
from pathlib import Path

from forgemem.agents.hooks import (
    _payload_cwd,
    announced,
    capture_in_background,
    context_for,
    log,
    recent_human_text,
)
from forgemem.agents.install import Change, Plan, _load_record, _read, _record_path, forgemem_command
from forgemem.errors import ForgememError, UsageError

NAME = "claude-code"


#: `/forgemem …` typed as a prompt (the Claude Code command name), answered by the hook itself
SLASH_PROMPT = re.compile(r"\A\s*/forgemem(?=\s|\Z)")


def claude_code(stdin_text: str, timeout_ms: int | None = None) -> str:
    """Handle one Claude Code hook event; returns what to print (possibly nothing)."""
    if os.environ.get("FORGEMEM_CLASSIFIER_RUN"):  # capture's own classifier run (classify.agent_cli): hands off
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
            return _inject(event, prompt, cwd, timeout_ms)
        if event == "SessionStart":
            if payload.get("source") != "compact":
                return ""
            query = recent_human_text(payload.get("transcript_path"))
            return _inject(event, query, cwd, timeout_ms) if query else ""
        transcript = payload.get("transcript_path")
        if not isinstance(transcript, str):
            transcript = None
        if event == "PreCompact" and transcript:
            capture_in_background(cwd, transcript, "--compaction")
        elif event == "SessionEnd" and transcript:
            capture_in_background(cwd, transcript, "--final")
        elif event == "Stop" and transcript:
            capture_in_background(cwd, transcript)
        return ""
    except Exception as exc:  # noqa: BLE001 - hooks fail open
        log(f"claude-code hook failed: {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}")
        return ""


def _inject(event: str, query: str, cwd: Path, timeout_ms: int | None) -> str:
    """The hook's answer: the context block for `query` and, on a prompt, what capture saved since
    the last one (`forgemem.announce`): shown to the user as `systemMessage`, and to the agent as a
    fenced block after the context block (outside the token budget, at most five memories)."""
    from forgemem.workspace import Workspace

    workspace = Workspace.open(cwd=cwd)
    for warning in workspace.warnings:
        log(warning)
    block = ""
    if query.strip():
        try:
            block = context_for(query, cwd, timeout_ms, workspace=workspace)
        except Exception as exc:  # noqa: BLE001 - the notice below still goes out
            log(f"recall failed: {type(exc).__name__}: {exc}")
    saved = announced(workspace) if event == "UserPromptSubmit" else []
    output: dict = {}
    if saved:
        from forgemem.capture.announce import context_block, notice

        output["systemMessage"] = notice(saved)
        notice_block = context_block(saved, model=workspace.config.embedding_model)
        block = "\n".join(part for part in (block, notice_block) if part)
    if block:
        output["hookSpecificOutput"] = {"hookEventName": event, "additionalContext": block}
    return json.dumps(output) if output else ""


def slash_answer(prompt: str, cwd: Path) -> str:
    """The answer to a `/forgemem …` prompt (the `/memory` language), as markdown for the user."""
    from forgemem.agents import slash
    from forgemem.workspace import Workspace

    line = SLASH_PROMPT.sub("/memory", prompt, count=1).strip()
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



HOOK_EVENTS = {  # event: (matcher, timeout in seconds)
    "UserPromptSubmit": (None, 10),
    "SessionStart": ("compact", 10),
    "PreCompact": (None, 10),
    "Stop": (None, 10),
    "SessionEnd": (None, 10),
}


COMMAND_NAME = "forgemem.md"


#: The /forgemem command file. It holds no shell line: the UserPromptSubmit hook sees
#: the typed text (`/forgemem search …`) on stdin and answers it itself, so the
#: user's words never reach a shell. Claude Code needs the file to offer the command.
SLASH_COMMAND_TEXT = """---
description: forgemem long-term memory (/forgemem help)
argument-hint: "[list|search|show|history|graph|conflicts|forget|add|stats|help] ..."
---
forgemem's UserPromptSubmit hook answers `/forgemem` commands before they reach you. If you are
reading this, that hook is not installed or did not run: tell the user to run
`forgemem install claude-code` (or `forgemem slash "/memory help"` in a terminal), and do nothing else.
"""


def claude_dir(project: Path | None, user: bool) -> Path:
    if user:
        return Path.home() / ".claude"
    if project is None:
        raise UsageError("not in a git repository: run this in your project, or pass --user for ~/.claude")
    return project / ".claude"


def _is_ours(entry: dict) -> bool:
    return any("forgemem hook claude-code" in str(h.get("command", "")) for h in entry.get("hooks", []) or [])


def _is_old_slash_command(text: str) -> bool:
    """The command file forgemem 0.1 wrote (it ran `forgemem slash` on a shell line)."""
    return text.startswith("---\ndescription: forgemem long-term memory") and "slash \"/memory $ARGUMENTS\"" in text


def _parse_settings(path: Path, text: str | None) -> dict:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ForgememError(f"{path} is not valid JSON (line {exc.lineno}); fix it first, nothing was changed") from None
    if not isinstance(data, dict) or not isinstance(data.get("hooks", {}), dict):
        raise ForgememError(f"{path} does not look like Claude Code settings; nothing was changed")
    return data


def _dump(data: dict) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def plan_claude_code_install(folder: Path) -> Plan:
    settings, command_file = folder / "settings.json", folder / "commands" / COMMAND_NAME
    command = forgemem_command()
    plan = Plan(record_path=_record_path("claude-code", folder))
    before = _read(settings)
    data = _parse_settings(settings, before)
    hooks = data.setdefault("hooks", {})
    for event, (matcher, timeout) in HOOK_EVENTS.items():
        entries = hooks.setdefault(event, [])
        if not isinstance(entries, list):
            raise ForgememError(f"{settings}: hooks.{event} is not a list; nothing was changed")
        if any(isinstance(e, dict) and _is_ours(e) for e in entries):
            continue
        entry: dict = {"matcher": matcher} if matcher else {}
        entry["hooks"] = [{"type": "command", "command": f"{command} hook claude-code", "timeout": timeout}]
        entries.append(entry)
    after = _dump(data)
    changed = _parse_settings(settings, before) != data
    plan.changes.append(Change(settings, before, after if changed else before))
    wanted = SLASH_COMMAND_TEXT
    existing = _read(command_file)
    if existing is not None and existing != wanted and _is_old_slash_command(existing):
        existing_is_ours = True  # an older forgemem's command file (with a shell line): replaced
    else:
        existing_is_ours = existing is None or existing == wanted
    if existing_is_ours:
        plan.changes.append(Change(command_file, existing, wanted))
    else:
        plan.notes.append(f"{command_file} exists and is not forgemem's; left alone (the /forgemem command is not installed)")
    old_record = _load_record(plan.record_path) or {}
    created = set(old_record.get("created_dirs", []))
    for path in (folder, folder / "commands"):
        if not path.exists():
            created.add(str(path))
    plan.record = {
        "settings": str(settings),
        "original": old_record.get("original", before) if old_record else before,
        "installed": after if changed else old_record.get("installed", after),
        "command_file": str(command_file) if existing_is_ours else old_record.get("command_file"),
        "created_dirs": sorted(created),
    }
    if not any(c.changed for c in plan.changes):
        plan.notes.append("already installed; nothing to change")
    return plan


def plan_claude_code_uninstall(folder: Path) -> Plan:
    settings = folder / "settings.json"
    plan = Plan(record_path=_record_path("claude-code", folder), remove_record=True)
    record = _load_record(plan.record_path) or {}
    before = _read(settings)
    data = _parse_settings(settings, before)
    hooks = data.get("hooks", {})
    for event in list(hooks):
        entries = hooks[event]
        if isinstance(entries, list):
            kept = [e for e in entries if not (isinstance(e, dict) and _is_ours(e))]
            if kept != entries:
                if kept:
                    hooks[event] = kept
                else:
                    del hooks[event]
    if "hooks" in data and not data["hooks"] and "hooks" not in _parse_settings(settings, record.get("original")):
        del data["hooks"]
    original = record.get("original")
    if before is None:
        after = None
    elif original is not None and _parse_settings(settings, original) == data:
        after = original  # nothing else changed since install: the very same bytes come back
    elif original is None and "settings" in record and not data:
        after = None  # install created the file and nothing else was added since
    else:
        after = _dump(data) if data != _parse_settings(settings, before) else before
    plan.changes.append(Change(settings, before, after))
    command_file = folder / "commands" / COMMAND_NAME
    text = _read(command_file)
    if text is not None and (text == SLASH_COMMAND_TEXT or _is_old_slash_command(text)):
        plan.changes.append(Change(command_file, text, None))
    plan.remove_dirs = [Path(p) for p in sorted(record.get("created_dirs", []), key=len, reverse=True)]
    if not any(c.changed for c in plan.changes):
        plan.notes.append("forgemem is not installed there; nothing to remove")
    return plan


# ------------------------------------------------------------------ the registry's interface


def install_plan(user: bool, where: Path) -> Plan:
    from forgemem.store.folder import find_repo_root

    return plan_claude_code_install(claude_dir(find_repo_root(where), user))


def uninstall_plan(user: bool, where: Path) -> Plan:
    from forgemem.store.folder import find_repo_root

    return plan_claude_code_uninstall(claude_dir(find_repo_root(where), user))


def hook(payload: str | None) -> None:
    """`forgemem hook claude-code`: the event on stdin, the answer on stdout."""
    main_claude_code()
