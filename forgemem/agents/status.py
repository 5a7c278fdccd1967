"""`forgemem status`: one screen of everything, and the one thing to do next.

The stores, stale memories, observer and recall server come from
`forgemem.curate.status`; this adds which agents forgemem is wired into and
picks the next action. An install counts as present when `forgemem install
AGENT` would change nothing (its plan is computed, never applied); "partly"
when some of it is there (say, `.gitattributes` names the git drivers in a fresh
clone whose local git config does not define them yet). Nothing is written and
no server is started.
"""

from __future__ import annotations

from pathlib import Path

from forgemem.errors import ForgememError
from forgemem.workspace import Workspace

#: (agent, --user?) looked at: Claude Code both in the project and in ~/.claude
INSTALLS = (("claude-code", False), ("claude-code", True), ("codex", True), ("git", False))


def installs(where: Path, in_repo: bool) -> list[dict]:
    """Each agent's install: {"agent", "where" (project | user), "state" (installed | partly | not installed |
    unknown), "detail"}."""
    from forgemem.agents import registry

    found = []
    for agent, user in INSTALLS:
        if not user and not in_repo:
            continue
        entry = {"agent": agent, "where": "user" if user else "project", "state": "unknown", "detail": ""}
        try:
            plan = registry.get(agent).install_plan(user, where)
        except (ForgememError, OSError, ValueError) as exc:
            entry["detail"] = str(exc)
            found.append(entry)
            continue
        needed = [str(c.path) for c in plan.changes if c.changed] + (["local git config"] if plan.commands else [])
        present = [not c.changed and c.before is not None for c in plan.changes]
        if agent == "git":  # its second part is the local git config (commands install would run)
            present.append(not plan.commands)
        if not needed:
            entry["state"] = "installed"
        elif any(present):
            entry["state"], entry["detail"] = "partly", "missing: " + ", ".join(needed)
        else:
            entry["state"] = "not installed"
        found.append(entry)
    return found


def next_action(report: dict) -> str:
    """The one thing that matters most now, as a sentence with the command that does it."""
    stores = report["stores"]
    if report["root"] is not None and not stores.get("repo", {}).get("exists"):
        return "this repository has no memory store yet: forgemem init"
    if report["broken_files"]:
        return f"{_n(report['broken_files'], 'memory file')} cannot be read: forgemem validate"
    if report["conflicts"] or report["forks"]:
        count = len(report["conflicts"]) + len(report["forks"])
        return f"{_n(count, 'conflict')} between memories {_wait(count)}: forgemem conflicts, then forgemem resolve ID"
    proposed = sum(s.get("proposed", 0) for s in stores.values())
    if proposed:
        return f"{_n(proposed, 'proposed memory', 'proposed memories')} {_wait(proposed)}: forgemem review"
    failed = report["observer"]["passes"]["failed"]
    if failed:
        return f"{_n(failed, 'capture pass', 'capture passes')} failed: forgemem observe --status"
    agents = [i for i in report["installs"] if i["agent"] != "git"]
    if report["root"] is not None and agents and not any(i["state"] == "installed" for i in agents):
        return "no agent gets your memories yet: forgemem install claude-code (or codex)"
    if report["not_captured"]:
        return f"{_n(report['not_captured'], 'past session')} not captured yet: forgemem observe --backfill"
    if report["stale"]:
        ids = len({s["id"] for s in report["stale"]})
        gone = any(s["kind"] in ("missing-path", "missing-symbol") for s in report["stale"])
        return (f"{_n(ids, 'memory', 'memories')} name paths or symbols that moved on: "
                + ("forgemem tidy" if gone else "forgemem doctor"))
    return "nothing needs you"


def _wait(count: int) -> str:
    return "waits" if count == 1 else "wait"


def _n(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else many or one + 's'}"


def status(workspace: Workspace, where: Path) -> dict:
    """Everything `forgemem status` shows, for the repository around `where` (read-only)."""
    from forgemem.curate.status import report
    from forgemem.store.folder import find_repo_root

    root = find_repo_root(where)
    result = report(workspace, root)
    result["installs"] = installs(where, root is not None)
    result["next"] = next_action(result)
    return result
