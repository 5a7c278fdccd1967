"""Commands for agents: slash, hook, install, uninstall, mcp."""

from __future__ import annotations

import shlex
import sys
from typing import Optional

import typer
from rich.markup import escape

from forgemem.agents.registry import AGENTS
from forgemem.cli.app import app, err, out, state, warn


@app.command()
def slash(line: str = typer.Argument(..., metavar='"/memory …"', help="One /memory command line.")) -> None:
    """Run one /memory command (what agent harnesses route to forgemem); prints markdown."""
    from forgemem.agents import slash as slash_module

    workspace = state.workspace()
    print(slash_module.run(line, workspace, search=slash_module.server_search(workspace, on_notice=warn)))


@app.command()
def hook(
    agent: str = typer.Argument(..., help="claude-code or codex."),
    payload: Optional[str] = typer.Argument(None, help="codex: the JSON Codex passes to its notify program."),
) -> None:
    """Handle an agent's hook event (Claude Code: JSON on stdin). Always exits 0: hooks fail open."""
    from forgemem.agents import hooks, registry

    adapter = registry.get(agent) if agent in registry.AGENTS else None
    if adapter is None or adapter.hook is None:
        hooks.log(f"hook for unknown agent {agent!r} ignored")
        return
    adapter.hook(payload)




_AGENT_ARGUMENT = typer.Argument(..., help=", ".join(AGENTS))
#: `--help` shows no argument's help: the agents are named in the command's own text, from the registry
_AGENTS_ACCEPTED = f"AGENT: one of {', '.join(AGENTS)}."


_USER_OPTION = typer.Option(False, "--user", help="claude-code: ~/.claude instead of this project's .claude.")


_DRY_RUN_OPTION = typer.Option(False, "--dry-run", help="Show the diff; change nothing.")


def _install_plan(agent: str, user: bool, uninstall: bool):
    from forgemem.agents import registry

    adapter = registry.get(agent)
    return (adapter.uninstall_plan if uninstall else adapter.install_plan)(user, state.where())


def _run_plan(plan, dry_run: bool, verb: str) -> None:
    for note in plan.notes:
        warn(note)
    changed = [c for c in plan.changes if c.changed]
    if dry_run:
        for change in changed:
            sys.stdout.write(change.diff())
        for _, argv in plan.commands:
            sys.stdout.write("$ " + " ".join(shlex.quote(a) for a in argv) + "\n")
        if not changed and not plan.commands:
            err.print("nothing would change")
        return
    plan.apply()
    for _, argv in plan.commands:
        out.print(escape("ran " + " ".join(shlex.quote(a) for a in argv)))
    for change in changed:
        action = "removed" if change.after is None else ("created" if change.before is None else "updated")
        out.print(f"{action} {escape(str(change.path))}")
    if changed:
        err.print(f"forgemem {verb}")


@app.command(help="Wire forgemem in: hooks and /forgemem (Claude Code), notify + MCP (Codex), the diff and merge "
             f"drivers (git).\n\n{_AGENTS_ACCEPTED}")
def install(
    agent: str = _AGENT_ARGUMENT,
    user: bool = _USER_OPTION,
    dry_run: bool = _DRY_RUN_OPTION,
) -> None:
    _run_plan(_install_plan(agent, user, uninstall=False), dry_run, "installed")
    if agent != "git":  # which classifier capture uses, and how to have the agent itself decide
        from forgemem.capture.classify.agent_cli import install_note

        warn(install_note(agent, state.workspace))


@app.command(help=f"Remove exactly what `forgemem install` added.\n\n{_AGENTS_ACCEPTED}")
def uninstall(
    agent: str = _AGENT_ARGUMENT,
    user: bool = _USER_OPTION,
    dry_run: bool = _DRY_RUN_OPTION,
) -> None:
    _run_plan(_install_plan(agent, user, uninstall=True), dry_run, "uninstalled")


@app.command()
def mcp() -> None:
    """Serve the memory over the Model Context Protocol on stdio (needs `pip install forgemem[mcp]`)."""
    from forgemem.agents.mcp import build_server

    build_server(state.workspace()).run("stdio")

