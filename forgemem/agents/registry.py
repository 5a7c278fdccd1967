"""The agents forgemem can be wired into: one module each, listed here.

Each module defines `NAME`, `install_plan(user, where)` and `uninstall_plan(user,
where)` (a `Plan` of file changes: `forgemem install|uninstall NAME`), and `hook`
(what `forgemem hook NAME [PAYLOAD]` runs; None when the agent has no hook).
Supporting a new agent means adding one module and its line here.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from forgemem.errors import UsageError

AGENTS = {
    "claude-code": "forgemem.agents.claude_code",
    "codex": "forgemem.agents.codex",
    "git": "forgemem.agents.git_diff",
}


def get(name: str) -> ModuleType:
    if name not in AGENTS:
        raise UsageError(f"unknown agent {name!r} (known: {', '.join(AGENTS)})")
    return importlib.import_module(AGENTS[name])
