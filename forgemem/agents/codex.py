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
from forgemem.config import classifier_run
from forgemem.errors import ForgememError

NAME = "codex"


def codex(payload_text: str) -> None:
    """Codex's `notify` program: after a turn, capture from that session's rollout in the background."""
    if classifier_run():  # forgemem's own agent run (llm.agent_cli): hands off
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
        capture_in_background(_payload_cwd(payload), str(rollout), "--due")
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


def _blocks(text: str) -> list[tuple[int, int]]:
    """(first, last) line numbers of each block between forgemem's marker comments."""
    found, start = [], None
    for n, line in enumerate(text.splitlines()):
        if line == CODEX_BEGIN and start is None:
            start = n
        elif line == CODEX_END and start is not None:
            found.append((start, n))
            start = None
    return found


def _forgemem_argv(value: object, *tail: str) -> bool:
    """An argv in the form install writes: forgemem's console script (or `python -P -m forgemem`)
    by absolute path, then `tail`."""
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)) or value[len(value) - len(tail):] != list(tail):
        return False
    head = value[:len(value) - len(tail)]
    if not head or not os.path.isabs(head[0]):
        return False
    return (len(head) == 1 and Path(head[0]).name == "forgemem") or head[1:] == ["-P", "-m", "forgemem"]


def _is_forgemem_block(inner: str) -> bool:
    """A block exactly as install writes it (any forgemem path): what uninstall removes without a record."""
    import tomllib

    try:
        data = tomllib.loads(inner)
    except tomllib.TOMLDecodeError:
        return False
    if set(data) == {"notify"}:
        return _forgemem_argv(data["notify"], "hook", "codex")
    server = data.get("mcp_servers", {}).get("forgemem") if set(data) == {"mcp_servers"} else None
    return (isinstance(server, dict) and set(data["mcp_servers"]) == {"forgemem"} and set(server) == {"command", "args"}
            and _forgemem_argv([server["command"], *server["args"]] if isinstance(server["args"], list) else None, "mcp"))


def plan_codex_install(config: Path) -> Plan:
    import tomllib

    record_path = _record_path("codex", config)
    plan = Plan(record_path=record_path)
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
    blocks = [block for block in (top, bottom) if block]
    plan.record = {"config": str(config), "original": before, "installed": after,
                   "blocks": ["".join(block[1:-1]) for block in blocks],  # the lines between the markers
                   "created_dirs": [] if config.parent.exists() else [str(config.parent)]}
    return plan


def plan_codex_uninstall(config: Path) -> Plan:
    """Remove each block between forgemem's markers that holds exactly what install wrote there
    (with no record: a block in the exact form install writes); a block you changed is kept
    and reported, and so is one whose removal would change what your own lines mean."""
    import tomllib

    record_path = _record_path("codex", config)
    plan = Plan(record_path=record_path, remove_record=True)
    record = _load_record(record_path) or {}
    before = _read(config)
    if before is None or CODEX_BEGIN not in before:
        plan.changes.append(Change(config, before, before))
        plan.notes.append("forgemem is not installed there; nothing to remove")
        return plan
    lines = before.splitlines(keepends=True)
    recorded = record.get("blocks")
    drop: set[int] = set()
    for first, last in _blocks(before):
        inner = "".join(lines[first + 1:last])
        if not (inner in recorded if isinstance(recorded, list) else _is_forgemem_block(inner)):
            plan.notes.append(f"{config}: the forgemem block at line {first + 1} was changed since install; kept")
            continue
        block = set(range(first, last + 1))
        if lines[first + 1].startswith("[mcp_servers.forgemem]") and first and lines[first - 1] == "\n":
            block.add(first - 1)  # the blank line install put before its table
        kept = "".join(line for n, line in enumerate(lines) if n not in drop)
        trial = "".join(line for n, line in enumerate(lines) if n not in drop | block)
        try:
            same = tomllib.loads(trial) == _without_block(tomllib.loads(kept), tomllib.loads(inner))
        except tomllib.TOMLDecodeError:
            same = False
        if not same:  # e.g. keys you wrote under forgemem's table: they would move to another, or dangle
            plan.notes.append(f"{config}: lines after the forgemem block at line {first + 1} belong to it; kept")
            continue
        drop |= block
    remaining = "".join(line for n, line in enumerate(lines) if n not in drop)
    original = record.get("original")
    after: str | None = remaining
    if original is None and record and not remaining.strip():
        after = None
    elif original is not None and remaining.rstrip("\n") == original.rstrip("\n"):
        after = original
    plan.changes.append(Change(config, before, after))
    plan.remove_dirs = [Path(p) for p in record.get("created_dirs", [])]
    return plan


def _without_block(data: dict, block: dict) -> dict:
    """A config without what one of forgemem's blocks defines: its `notify`, or its whole MCP server."""
    data = dict(data)
    if "notify" in block:
        data.pop("notify", None)
    if "mcp_servers" in block:
        servers = {k: v for k, v in data.get("mcp_servers", {}).items() if k != "forgemem"}
        data.pop("mcp_servers", None)
        if servers:
            data["mcp_servers"] = servers
    return data


# ------------------------------------------------------------------ the registry's interface


def install_plan(user: bool, where: Path) -> Plan:
    return plan_codex_install(codex_config_path())


def uninstall_plan(user: bool, where: Path) -> Plan:
    return plan_codex_uninstall(codex_config_path())


def hook(payload: str | None) -> None:
    """`forgemem hook codex JSON`: Codex's notify program."""
    codex(payload or "")
