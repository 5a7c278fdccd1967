"""`forgemem install|uninstall claude-code|codex`: wire forgemem into an agent's own settings.

Claude Code (`.claude/` of the project, or `~/.claude/` with `--user`):
- hooks in `settings.json`, merged with what is there: UserPromptSubmit,
  SessionStart (matcher `compact`), PreCompact, Stop and SessionEnd run
  `forgemem hook claude-code`;
- the slash command `commands/forgemem.md`: `/forgemem …` runs the `/memory`
  language (Claude Code's own `/memory` is left alone).

Codex (`~/.codex/config.toml`, or `$CODEX_HOME`): `notify` runs `forgemem hook
codex` after every turn (capture), and an `[mcp_servers.forgemem]` entry
serves recall and the rest over MCP (Codex has no hook that can add context
to a prompt). Lines forgemem adds sit between marker comments.

Install is idempotent, `--dry-run` shows the diff, and uninstall removes
exactly what install added: a file is put back byte for byte when nothing
else changed in it since, files and folders install created are removed.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from forgemem.config import user_cache_dir
from forgemem.errors import ForgememError, UsageError

HOOK_EVENTS = {  # event: (matcher, timeout in seconds)
    "UserPromptSubmit": (None, 10),
    "SessionStart": ("compact", 10),
    "PreCompact": (None, 10),
    "Stop": (None, 10),
    "SessionEnd": (None, 10),
}
COMMAND_NAME = "forgemem.md"
CODEX_BEGIN = "# >>> forgemem: added by `forgemem install codex`; `forgemem uninstall codex` removes it"
CODEX_END = "# <<< forgemem"


def forgemem_argv() -> list[str]:
    """How agents and git should start forgemem: the console script by its absolute path
    (never a name looked up on PATH from the project folder), else `python -P -m forgemem`."""
    from forgemem.spawn import command_argv

    return command_argv()


def forgemem_command() -> str:
    """`forgemem_argv` as one POSIX shell command line (every word quoted as needed)."""
    return shlex.join(forgemem_argv())


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


def toml_string(value: str) -> str:
    """A TOML basic string: any text (non-ASCII kept as is; quotes, backslashes and controls escaped)."""
    escaped = []
    for ch in value:
        if ch in ('"', "\\"):
            escaped.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            escaped.append({"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}.get(ch, f"\\u{ord(ch):04X}"))
        else:
            escaped.append(ch)
    return '"' + "".join(escaped) + '"'


def toml_array(values: list[str]) -> str:
    return "[" + ", ".join(toml_string(v) for v in values) + "]"


@dataclass
class Change:
    """One file install/uninstall writes: its text before and after (None: absent)."""

    path: Path
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                (self.before or "").splitlines(keepends=True),
                (self.after or "").splitlines(keepends=True),
                fromfile=str(self.path) if self.before is not None else "/dev/null",
                tofile=str(self.path) if self.after is not None else "/dev/null",
            )
        )


@dataclass
class Plan:
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    record: dict | None = None  # what uninstall needs, kept in the cache
    record_path: Path | None = None
    remove_record: bool = False
    remove_dirs: list[Path] = field(default_factory=list)
    commands: list[tuple[Path, list[str]]] = field(default_factory=list)  # (cwd, argv) run after the files

    def apply(self) -> None:
        from forgemem.permissions import atomic_write_text

        for change in self.changes:
            if not change.changed:
                continue
            if change.after is None:
                change.path.unlink(missing_ok=True)
            else:
                change.path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_text(change.path, change.after)
        for cwd, argv in self.commands:
            import subprocess

            subprocess.run(argv, cwd=cwd, check=False, capture_output=True)
        for folder in self.remove_dirs:
            try:
                folder.rmdir()  # only when empty
            except OSError:
                pass
        if self.record_path is not None:
            if self.remove_record:
                self.record_path.unlink(missing_ok=True)
            elif self.record is not None:
                from forgemem.permissions import private_dir

                private_dir(self.record_path.parent)
                atomic_write_text(self.record_path, json.dumps(self.record, indent=2) + "\n", private=True)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _record_path(kind: str, target: Path) -> Path:
    digest = hashlib.sha256(str(target.absolute()).encode()).hexdigest()[:16]
    return user_cache_dir() / "install" / f"{kind}-{digest}.json"


def _load_record(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None


# ------------------------------------------------------------------ Claude Code


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


# ------------------------------------------------------------------ Codex


def codex_config_path() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex") / "config.toml"


def plan_codex_install(config: Path) -> Plan:
    import tomllib

    plan = Plan(record_path=_record_path("codex", config))
    before = _read(config)
    text = before or ""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ForgememError(f"{config} is not valid TOML ({exc}); nothing was changed") from None
    if CODEX_BEGIN in text:
        plan.changes.append(Change(config, before, before))
        plan.notes.append("already installed; nothing to change")
        return plan
    command = forgemem_argv()
    lines = text.splitlines(keepends=True)
    if text and not text.endswith("\n"):
        lines[-1] += "\n"
    top: list[str] = []
    if "notify" in data:
        plan.notes.append(f"{config} already has `notify`; capture after each turn is not installed "
                          "(run `forgemem observe ~/.codex/sessions` instead)")
    else:
        top = [CODEX_BEGIN + "\n", f"notify = {toml_array([*command, 'hook', 'codex'])}\n", CODEX_END + "\n"]
    bottom: list[str] = []
    if "forgemem" in data.get("mcp_servers", {}):
        plan.notes.append(f"{config} already has [mcp_servers.forgemem]; left alone")
    else:
        bottom = [
            ("\n" if lines else "") + CODEX_BEGIN + "\n",
            "[mcp_servers.forgemem]\n",
            f"command = {toml_string(command[0])}\n",
            f"args = {toml_array([*command[1:], 'mcp'])}\n",
            CODEX_END + "\n",
        ]
    # top-level keys must come before the first table
    first_table = next((i for i, line in enumerate(lines) if line.lstrip().startswith("[")), len(lines))
    after = "".join(lines[:first_table] + top + lines[first_table:] + bottom)
    try:
        tomllib.loads(after)  # never write a file Codex could not read
    except (tomllib.TOMLDecodeError, UnicodeError):
        raise ForgememError(
            f"cannot write forgemem's path {command[0]!r} into {config} as TOML; nothing was changed"
        ) from None
    plan.changes.append(Change(config, before, after))
    plan.record = {"config": str(config), "original": before, "installed": after,
                   "created_dirs": [] if config.parent.exists() else [str(config.parent)]}
    return plan


def plan_codex_uninstall(config: Path) -> Plan:
    plan = Plan(record_path=_record_path("codex", config), remove_record=True)
    record = _load_record(plan.record_path) or {}
    before = _read(config)
    if before is None or CODEX_BEGIN not in before:
        plan.changes.append(Change(config, before, before))
        plan.notes.append("forgemem is not installed there; nothing to remove")
        return plan
    out, inside = [], False
    lines = before.splitlines(keepends=True)
    for n, line in enumerate(lines):
        if line.rstrip("\n") == CODEX_BEGIN:
            inside = True
            following = lines[n + 1] if n + 1 < len(lines) else ""
            if following.startswith("[mcp_servers.forgemem]") and out and out[-1] == "\n":
                out.pop()  # the blank line install put before its table
            continue
        if inside and line.rstrip("\n") == CODEX_END:
            inside = False
            continue
        if not inside:
            out.append(line)
    after = "".join(out)
    original = record.get("original")
    if original is None and record and not after.strip():
        after = None
    elif original is not None and after.rstrip("\n") == original.rstrip("\n"):
        after = original
    plan.changes.append(Change(config, before, after))
    plan.remove_dirs = [Path(p) for p in record.get("created_dirs", [])]
    return plan


# ------------------------------------------------------------------ git


GITATTRIBUTES_LINE = ".forge/memory/**/*.md diff=forgemem"


def plan_git_install(root: Path) -> Plan:
    """`.gitattributes` sends memory files to the `forgemem` diff driver; local git config defines it."""
    plan = Plan()
    attributes = root / ".gitattributes"
    before = _read(attributes)
    lines = (before or "").splitlines()
    if GITATTRIBUTES_LINE in lines:
        after = before
    else:
        after = (before or "") + ("" if not before or before.endswith("\n") else "\n") + GITATTRIBUTES_LINE + "\n"
    plan.changes.append(Change(attributes, before, after))
    command = f"{forgemem_command()} diff-driver"
    plan.commands.append((root, ["git", "config", "--local", "diff.forgemem.textconv", command]))
    return plan


def plan_git_uninstall(root: Path) -> Plan:
    plan = Plan()
    attributes = root / ".gitattributes"
    before = _read(attributes)
    if before is not None and GITATTRIBUTES_LINE in before.splitlines():
        kept = [line for line in before.splitlines(keepends=True) if line.rstrip("\n") != GITATTRIBUTES_LINE]
        after = "".join(kept) or None
    else:
        after = before
    plan.changes.append(Change(attributes, before, after))
    plan.commands.append((root, ["git", "config", "--local", "--remove-section", "diff.forgemem"]))
    return plan
