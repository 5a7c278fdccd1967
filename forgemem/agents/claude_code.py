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

Install merges the hooks into `.claude/settings.json` (or `~/.claude/` with `--user`) and writes
`.claude/commands/forgemem.md` (no shell line: the hook answers `/forgemem`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import traceback
from pathlib import Path

from forgemem.agents import jsonedit, sessions
from forgemem.agents.hooks import (
    _payload_cwd,
    announced,
    capture_in_background,
    context_for,
    log,
    recent_human_text,
    unreadable_notice,
)
from forgemem.agents.install import Change, Plan, _load_record, _read, _record_path, forgemem_command
from forgemem.config import classifier_run
from forgemem.errors import ForgememError, UsageError

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
            capture_in_background(cwd, transcript, "--compaction")
        elif event == "SessionEnd" and transcript:
            capture_in_background(cwd, transcript, "--final")
        elif event == "Stop" and transcript:
            capture_in_background(cwd, transcript)
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


#: The command file forgemem 0.1 wrote, word for word but for forgemem's path (it ran
#: `forgemem slash` on a shell line): install replaces it, uninstall removes it.
_OLD_SLASH_COMMAND = re.compile(
    r'---\ndescription: forgemem long-term memory \(/forgemem help\)\n'
    r'argument-hint: "\[list\|search\|show\|history\|graph\|conflicts\|forget\|add\|stats\|help\] \.\.\."\n'
    r'allowed-tools: Bash\((?P<command>[^\n]+) slash:\*\)\n---\n'
    r'!`(?P=command) slash "/memory \$ARGUMENTS"`\n\n'
    r'Show the forgemem answer above to the user as it is, without commentary\.\n\Z'
)


def claude_dir(project: Path | None, user: bool) -> Path:
    if user:
        return Path.home() / ".claude"
    if project is None:
        raise UsageError("not in a git repository: run this in your project, or pass --user for ~/.claude")
    return project / ".claude"


def _is_forgemem_command(command: object) -> bool:
    """A hook command in the one form install writes: forgemem's console script (or `python -P -m
    forgemem`) by absolute path, then `hook claude-code`, nothing else. A command that merely
    mentions forgemem (a wrapper, a log line) is not."""
    try:
        argv = shlex.split(command) if isinstance(command, str) else []
    except ValueError:
        return False
    head = argv[:-2]
    if argv[-2:] != ["hook", "claude-code"] or not head or not os.path.isabs(head[0]):
        return False
    return (len(head) == 1 and Path(head[0]).name == "forgemem") or head[1:] == ["-P", "-m", "forgemem"]


def _our_hook(command: str, event: str) -> dict:
    return {"type": "command", "command": f"{command} hook claude-code", "timeout": HOOK_EVENTS[event][1]}


def _our_entry(command: str, event: str) -> dict:
    matcher = HOOK_EVENTS[event][0]
    entry: dict = {"matcher": matcher} if matcher else {}
    entry["hooks"] = [_our_hook(command, event)]
    return entry


def _is_forgemem_hook(hook: object, event: str) -> bool:
    """A hook exactly as install writes it, from any forgemem path."""
    return (isinstance(hook, dict) and _is_forgemem_command(hook.get("command"))
            and hook == {**_our_hook("", event), "command": hook["command"]})


def _hooks_of(entry: object) -> list:
    hooks = entry.get("hooks") if isinstance(entry, dict) else None
    return hooks if isinstance(hooks, list) else []


def _shape(event: str) -> dict:
    """The keys but `hooks` of the entry install makes for an event (its matcher)."""
    return {k: v for k, v in _our_entry("", event).items() if k != "hooks"}


def _entry_as_installed(entry: object, event: str) -> bool:
    """An entry as an install makes it (any forgemem path): forgemem's matcher and, first, forgemem's
    hook exactly (hooks you added after it are yours). Without a record of what install added
    (an older forgemem's install, or the record lost), this is what counts as forgemem's."""
    hooks = _hooks_of(entry)
    return (bool(hooks) and _is_forgemem_hook(hooks[0], event) and isinstance(entry, dict)
            and {k: v for k, v in entry.items() if k != "hooks"} == _shape(event))


def is_old_slash_command(text: str) -> bool:
    return _OLD_SLASH_COMMAND.match(text) is not None


def _parse_settings(path: Path, text: str | None) -> dict:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ForgememError(f"{path} is not valid JSON (line {exc.lineno}); fix it first, nothing was changed") from None
    if not isinstance(data, dict) or not isinstance(data.get("hooks", {}), dict):
        raise ForgememError(f"{path} does not look like Claude Code settings; nothing was changed")
    for event, entries in data.get("hooks", {}).items():
        if event in HOOK_EVENTS and not isinstance(entries, list):
            raise ForgememError(f"{path}: hooks.{event} is not a list; nothing was changed")
    return data


def _dump(data: dict) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def plan_claude_code_install(folder: Path) -> Plan:
    """Add one entry per event holding forgemem's hook, unless that event runs forgemem's hook already.

    The settings text is edited in place (`jsonedit`): nothing else in it moves. The record
    (`install.record_path`) keeps the file as it was and each entry added, exactly, so that
    uninstall takes out those and nothing else.
    """
    settings, command_file = folder / "settings.json", folder / "commands" / COMMAND_NAME
    command = forgemem_command()
    record_path = _record_path("claude-code", folder)
    plan = Plan(record_path=record_path)
    old_record = _load_record(record_path) or {}
    before = _read(settings)
    data = _parse_settings(settings, before)
    text = before if (before or "").strip() else None
    if "added" in old_record:  # what an earlier install added and is still there
        kept = [a for a in old_record["added"] if _find(data, a["event"], a["entry"]["hooks"][0])]
    else:  # no record, or an older forgemem's: entries exactly as install makes them are forgemem's
        kept = [{"event": event, "entry": {**_shape(event), "hooks": [_hooks_of(e)[0]]}}
                for event in HOOK_EVENTS for e in data.get("hooks", {}).get(event, []) if _entry_as_installed(e, event)]
    added = []
    for event in HOOK_EVENTS:
        present = [h for e in data.get("hooks", {}).get(event, []) for h in _hooks_of(e) if _is_forgemem_hook(h, event)]
        if present:
            if not any(h["command"] == f"{command} hook claude-code" for h in present):
                plan.notes.append(f"{settings}: hooks.{event} runs forgemem as `{present[0]['command']}`; "
                                  "`forgemem uninstall claude-code` then `install` updates it")
            continue
        entry = _our_entry(command, event)
        added.append({"event": event, "entry": entry})
        if text is None:
            text = _dump({"hooks": {event: [entry]}})
        elif "hooks" not in data:
            text = jsonedit.append(text, [], {event: [entry]}, key="hooks")
        elif event not in data["hooks"]:
            text = jsonedit.append(text, ["hooks"], [entry], key=event)
        else:
            text = jsonedit.append(text, ["hooks", event], entry)
        data = json.loads(text)
    plan.changes.append(Change(settings, before, text if added else before))
    existing = _read(command_file)
    written: str | None
    if existing is None or existing == SLASH_COMMAND_TEXT or is_old_slash_command(existing):
        plan.changes.append(Change(command_file, existing, SLASH_COMMAND_TEXT))  # an old one had a shell line
        written = str(command_file)
    else:
        plan.notes.append(f"{command_file} exists and is not forgemem's; left alone (the /forgemem command is not installed)")
        written = old_record.get("command_file")  # install wrote it, you changed it since: still not yours to lose
    created = set(old_record.get("created_dirs", []))
    created.update(str(p) for p in (folder, folder / "commands") if not p.exists())
    plan.record = {
        "settings": str(settings),
        "original": old_record["original"] if "original" in old_record else before,
        "added": kept + added,
        "command_file": written,
        "created_dirs": sorted(created),
    }
    if not any(c.changed for c in plan.changes):
        plan.notes.append("already installed; nothing to change")
    return plan


def _find(data: dict, event: str, hook: dict) -> bool:
    entries = data.get("hooks", {}).get(event)
    return isinstance(entries, list) and any(hook in _hooks_of(e) for e in entries)


def _uninstall_settings(settings: Path, before: str, record: dict, notes: list[str]) -> str | None:
    """The settings text without forgemem's hooks: each one install recorded, matched exactly (with
    no record, entries as an install makes them: `_entry_as_installed`); an entry goes only when
    nothing but forgemem's hook was in it, an event or `hooks` only when install created it."""
    data = _parse_settings(settings, before)
    original = record.get("original")
    known = "original" in record  # what the file held before install (None: install created it)
    had = _parse_settings(settings, original) if known else None
    recorded = record.get("added")
    text = before
    for event, entries in list(data.get("hooks", {}).items()):
        if not isinstance(entries, list):
            continue
        mine = None if recorded is None else [a["entry"] for a in recorded if a["event"] == event]
        emptied = False
        for i in reversed(range(len(entries))):
            hooks = _hooks_of(entries[i])
            for j in reversed(range(len(hooks))):
                if mine is None:
                    shape = _shape(event) if j == 0 and _entry_as_installed(entries[i], event) else None
                else:
                    shape = _recorded(hooks[j], event, mine, notes, settings)
                if shape is None:
                    continue
                text = jsonedit.remove(text, ["hooks", event, i, "hooks", j])
                entry = json.loads(text)["hooks"][event][i]
                if not entry["hooks"] and {k: v for k, v in entry.items() if k != "hooks"} == shape:
                    text = jsonedit.remove(text, ["hooks", event, i])
                    emptied = True
        if emptied and not json.loads(text)["hooks"][event] and (had is None or event not in had.get("hooks", {})):
            text = jsonedit.remove(text, ["hooks", event])
    now = json.loads(text)
    if data.get("hooks") and now.get("hooks") == {} and (had is None or "hooks" not in had):
        text = jsonedit.remove(text, ["hooks"])
        now = json.loads(text)
    if original is not None and now == had:
        return original  # nothing else changed since install: the very same bytes come back
    if known and original is None and not now:
        return None  # install created the file and nothing else was added since
    return text


def _recorded(hook: object, event: str, mine: list[dict], notes: list[str], settings: Path) -> dict | None:
    """The keys (but `hooks`) of the entry install recorded for `hook`, if it is one it added
    (each recorded entry matches once), else None."""
    for entry in mine:
        if entry["hooks"][0] == hook:
            mine.remove(entry)
            return {k: v for k, v in entry.items() if k != "hooks"}
    if isinstance(hook, dict) and any(e["hooks"][0]["command"] == hook.get("command") for e in mine):
        notes.append(f"{settings}: forgemem's hooks.{event} hook was changed since install; left in place "
                     "(remove it by hand if you want it gone)")
    elif _is_forgemem_hook(hook, event):
        notes.append(f"{settings}: hooks.{event} runs forgemem's hook, but install did not add it; left in place")
    return None


def plan_claude_code_uninstall(folder: Path) -> Plan:
    settings = folder / "settings.json"
    record_path = _record_path("claude-code", folder)
    plan = Plan(record_path=record_path, remove_record=True)
    record = _load_record(record_path) or {}
    before = _read(settings)
    after = before if before is None or not before.strip() else _uninstall_settings(settings, before, record, plan.notes)
    plan.changes.append(Change(settings, before, after))
    command_file = folder / "commands" / COMMAND_NAME
    text = _read(command_file)
    if text is not None and (text == SLASH_COMMAND_TEXT or is_old_slash_command(text)):
        plan.changes.append(Change(command_file, text, None))
    elif text is not None:
        why = ("was changed since install" if record.get("command_file") == str(command_file)
               else "is not forgemem's")
        plan.notes.append(f"{command_file} {why}; kept")
    plan.remove_dirs = [Path(p) for p in sorted(record.get("created_dirs", []), key=len, reverse=True)]
    if not any(c.changed for c in plan.changes):
        plan.notes.append("forgemem is not installed there; nothing to remove")
    return plan


# ------------------------------------------------------------------ the registry's interface


def install_plan(user: bool, where: Path) -> Plan:
    from forgemem.store.folder import find_repo_root

    plan = plan_claude_code_install(claude_dir(find_repo_root(where), user))
    if not user and any(c.changed and c.path.name == "settings.json" for c in plan.changes):
        # the hook names this machine's console script by absolute path: a teammate's clone has another
        plan.notes.append(f"the hooks in .claude/settings.json run forgemem as {forgemem_command()}, a path "
                          "on this machine: commit that file only if your teammates have forgemem there too; "
                          "otherwise leave it uncommitted, or install with --user (~/.claude) instead")
    return plan


def uninstall_plan(user: bool, where: Path) -> Plan:
    from forgemem.store.folder import find_repo_root

    return plan_claude_code_uninstall(claude_dir(find_repo_root(where), user))


def hook(payload: str | None) -> None:
    """`forgemem hook claude-code`: the event on stdin, the answer on stdout."""
    main_claude_code()
