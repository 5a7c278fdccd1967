"""`forgemem install git`: git shows memory files readably (`git diff`, `git log -p`).

`.gitattributes` sends `.forge/memory/**/*.md` to the `forgemem` diff driver, and the
repository's local git config names the driver's textconv command (forgemem's console
script by its absolute path, quoted for the shell git runs it with).
"""

from __future__ import annotations

from pathlib import Path

from forgemem.agents.install import Change, Plan, _read, forgemem_command
from forgemem.errors import UsageError

NAME = "git"


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



# ------------------------------------------------------------------ the registry's interface


def _root(where: Path) -> Path:
    from forgemem.store.folder import find_repo_root

    root = find_repo_root(where)
    if root is None:
        raise UsageError("not in a git repository")
    return root


def install_plan(user: bool, where: Path) -> Plan:
    return plan_git_install(_root(where))


def uninstall_plan(user: bool, where: Path) -> Plan:
    return plan_git_uninstall(_root(where))


hook = None  # git runs the diff driver itself (`forgemem diff-driver FILE`)
