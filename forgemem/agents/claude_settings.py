"""`forgemem install|uninstall claude-code`: forgemem's hooks in Claude Code's settings, and `/forgemem`.

A project install writes the hooks into `.claude/settings.local.json` (Claude Code reads it beside
`.claude/settings.json`; it is this user's, never committed): the hook names this machine's
forgemem by absolute path, which a teammate's clone does not have. When git does not ignore that
file already, install adds `/.claude/settings.local.json` to the clone's `.git/info/exclude` (not
a tracked file) and records it; uninstall takes out that line again. `--user` installs into
`~/.claude/settings.json`. `.claude/commands/forgemem.md` (no machine path in it) is written either way.

An earlier forgemem wrote a project's hooks into `.claude/settings.json`: installing again moves the
entries its record names (and only those) into `settings.local.json`; uninstall reads either record.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

from forgemem.agents import jsonedit
from forgemem.agents.install import Change, Plan, _load_record, _read, _record_path, forgemem_command
from forgemem.errors import ForgememError, UsageError

#: Where a project install puts the hooks (Claude Code's per-user project settings), and the line
#: that keeps it out of git when nothing ignores it yet
LOCAL_SETTINGS = "settings.local.json"
EXCLUDE_LINE = "/.claude/settings.local.json"


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


def plan_claude_code_install(folder: Path, project: Path | None = None) -> Plan:
    """Add one entry per event holding forgemem's hook, unless that event runs forgemem's hook already.

    `project`: the repository a project install is for (the hooks go into `settings.local.json`,
    kept out of git, and out of `settings.json` where an earlier install put them); None: `--user`
    (`settings.json` in `folder`). The settings text is edited in place (`jsonedit`): nothing else
    in it moves. The record (`install.record_path`) keeps the file as it was and each entry added,
    exactly, so that uninstall takes out those and nothing else.
    """
    shared = folder / "settings.json"
    settings = shared if project is None else folder / LOCAL_SETTINGS
    command_file = folder / "commands" / COMMAND_NAME
    command = forgemem_command()
    record_path = _record_path("claude-code", folder)
    plan = Plan(record_path=record_path)
    old_record = _load_record(record_path) or {}
    others: dict = {}  # the shared settings of a project: a forgemem hook there must not run twice
    if project is not None:
        others = _move_out_of_shared(shared, settings, old_record, plan)
        if old_record and old_record.get("settings", str(shared)) == str(shared):  # an install into settings.json
            old_record = {k: v for k, v in old_record.items() if k not in ("settings", "original", "added")}
            old_record["added"] = []
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
        if _runs_forgemem(others, event):
            plan.notes.append(f"{shared}: hooks.{event} runs forgemem's hook already; none added to "
                              f"{settings.name} (it would run twice)")
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
    exclude = None if project is None else _plan_exclude(project, old_record.get("git_exclude"), plan, created)
    plan.record = {
        "settings": str(settings),
        "original": old_record["original"] if "original" in old_record else before,
        "added": kept + added,
        "command_file": written,
        "created_dirs": sorted(created),
        "git_exclude": exclude,
    }
    if not any(c.changed for c in plan.changes):
        plan.notes.append("already installed; nothing to change")
    return plan


def _move_out_of_shared(shared: Path, local: Path, record: dict, plan: Plan) -> dict:
    """A project's `settings.json` (shared with the team) without the hooks an earlier install put
    there (those its record names: `_uninstall_settings`), as a change of `plan`; returns the
    settings it keeps (a broken file is Claude Code's to report: read as none)."""
    before = _read(shared)
    after = before
    if before is not None and before.strip() and record and record.get("settings", str(shared)) == str(shared):
        after = _uninstall_settings(shared, before, record, plan.notes)
        if after != before:
            plan.changes.append(Change(shared, before, after))
            plan.notes.append(f"forgemem's hooks move from {shared} (shared with your team) to {local.name} "
                              "(yours alone, not committed)")
    try:
        return _parse_settings(shared, after)
    except ForgememError:
        return {}


def _runs_forgemem(data: dict, event: str) -> bool:
    """Whether an event runs forgemem's hook command (whatever its timeout: a changed one runs too)."""
    entries = data.get("hooks", {}).get(event)
    return isinstance(entries, list) and any(isinstance(h, dict) and _is_forgemem_command(h.get("command"))
                                             for e in entries for h in _hooks_of(e))


def _git_exclude_path(project: Path) -> Path:
    """This clone's `info/exclude` (a worktree's is its main repository's)."""
    from forgemem.git.run import git

    named = git(project, "rev-parse", "--git-path", "info/exclude").decode("utf-8", "surrogateescape").strip()
    return project / named  # an absolute path stays as it is


def _git_ignores(project: Path, relative: str) -> bool:
    from forgemem.git.run import git_argv

    done = subprocess.run(git_argv("check-ignore", "-q", "--", relative), cwd=project, capture_output=True, check=False)
    if done.returncode not in (0, 1):
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise UsageError(f"git check-ignore: {message[-1] if message else 'failed'}")
    return done.returncode == 0


def _plan_exclude(project: Path, recorded: object, plan: Plan, created: set[str]) -> dict | None:
    """Keep `settings.local.json` out of commits: when git does not ignore it, one line in the clone's
    `.git/info/exclude` (a change of `plan`); what was added, for the record (None: nothing)."""
    try:
        exclude = _git_exclude_path(project)
        text = _read(exclude)
        if isinstance(recorded, dict) and EXCLUDE_LINE in (text or "").splitlines():
            return recorded  # an earlier install added it, and it is still there
        if _git_ignores(project, EXCLUDE_LINE.lstrip("/")):
            return None
    except (ForgememError, OSError) as exc:
        plan.notes.append(f"could not ask git whether {EXCLUDE_LINE.lstrip('/')} is ignored ({exc}); "
                          "make sure it is not committed")
        return None
    added = ("\n" if text and not text.endswith("\n") else "") + EXCLUDE_LINE + "\n"
    plan.changes.append(Change(exclude, text, (text or "") + added))
    if not exclude.parent.exists():
        created.add(str(exclude.parent))
    return {"path": str(exclude), "added": added, "created": text is None}


def _unplan_exclude(recorded: object, plan: Plan) -> None:
    """Take out the line install added to `.git/info/exclude` (and the file, when install created it
    and nothing else is in it)."""
    if not isinstance(recorded, dict) or not isinstance(recorded.get("path"), str):
        return
    exclude, added = Path(recorded["path"]), str(recorded.get("added", EXCLUDE_LINE + "\n"))
    text = _read(exclude) if exclude.name == "exclude" else None
    if text is None:
        return
    if text.endswith(added):
        after = text[:len(text) - len(added)]
    else:  # lines were added after it: that one line goes, wherever it is now
        lines = text.splitlines(keepends=True)
        at = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == EXCLUDE_LINE]
        if not at:
            return
        after = "".join(lines[:at[-1]] + lines[at[-1] + 1:])
    plan.changes.append(Change(exclude, text, None if after == "" and recorded.get("created") else after))


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


def plan_claude_code_uninstall(folder: Path, project: Path | None = None) -> Plan:
    """Take out what install recorded: from the settings file its record names (a project's
    `settings.local.json`, or `settings.json` where an earlier forgemem put the hooks); without a
    record, entries as install makes them from either; the line it added to `.git/info/exclude`."""
    shared = folder / "settings.json"
    local = folder / LOCAL_SETTINGS
    record_path = _record_path("claude-code", folder)
    plan = Plan(record_path=record_path, remove_record=True)
    record = _load_record(record_path) or {}
    if project is None:
        targets = [shared]
    elif record:  # a record without `settings` is an older forgemem's: settings.json
        targets = [local if record.get("settings") == str(local) else shared]
    else:
        targets = [local, shared]
    for settings in targets:
        before = _read(settings)
        after = (before if before is None or not before.strip()
                 else _uninstall_settings(settings, before, record, plan.notes))
        plan.changes.append(Change(settings, before, after))
    if project is not None:
        _unplan_exclude(record.get("git_exclude"), plan)
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
