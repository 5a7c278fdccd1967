"""Codex: its `notify` program (`forgemem hook codex JSON`: capture after each turn), and `install codex`.

Codex has no hook that can add context to a prompt, so install also adds an
`[mcp_servers.forgemem]` entry: recall reaches Codex over MCP. Lines forgemem adds to
`~/.codex/config.toml` sit between marker comments.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from forgemem.agents.hooks import _payload_cwd, capture_in_background, log
from forgemem.agents.install import (
    Change,
    Plan,
    _load_record,
    _read,
    _record_path,
    forgemem_argv,
    toml_array,
    toml_string,
)
from forgemem.errors import ForgememError

NAME = "codex"


def codex(payload_text: str) -> None:
    """Codex's `notify` program: after a turn, capture from that session's rollout in the background."""
    if os.environ.get("FORGEMEM_CLASSIFIER_RUN"):  # capture's own classifier run (classify.agent_cli): hands off
        return
    try:
        payload = json.loads(payload_text) if payload_text else {}
        if not isinstance(payload, dict) or payload.get("type") != "agent-turn-complete":
            return
        thread = str(payload.get("thread-id") or "")
        rollout = find_codex_rollout(thread) if thread else None
        if rollout is None:
            log(f"codex notify: no rollout found for thread {thread!r}")
            return
        capture_in_background(_payload_cwd(payload), str(rollout))
    except Exception as exc:  # noqa: BLE001 - hooks fail open
        log(f"codex hook failed: {type(exc).__name__}: {exc}")


def find_codex_rollout(thread_id: str) -> Path | None:
    """The rollout file of a Codex session: `$CODEX_HOME/sessions/**/rollout-*-<thread id>.jsonl`."""
    home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
    matches = sorted((home / "sessions").rglob(f"rollout-*{thread_id}.jsonl"))
    return matches[-1] if matches else None



CODEX_BEGIN = "# >>> forgemem: added by `forgemem install codex`; `forgemem uninstall codex` removes it"


CODEX_END = "# <<< forgemem"


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


# ------------------------------------------------------------------ the registry's interface


def install_plan(user: bool, where: Path) -> Plan:
    return plan_codex_install(codex_config_path())


def uninstall_plan(user: bool, where: Path) -> Plan:
    return plan_codex_uninstall(codex_config_path())


def hook(payload: str | None) -> None:
    """`forgemem hook codex JSON`: Codex's notify program."""
    codex(payload or "")
