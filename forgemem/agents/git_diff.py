"""`forgemem install git`: git shows memory files readably (`git diff`, `git log -p`) and merges them.

`.gitattributes` sends `.forge/memory/**/*.md` to the `forgemem` diff and merge drivers;
the repository's *local* git config (never a file the repository ships) says what they
run: forgemem's console script by its absolute path, quoted for the shell git runs it
with, inside a shell function that falls back to git's own behaviour when forgemem
cannot run (moved, uninstalled, broken): the raw file for a diff, `git merge-file` for a
merge. So `git diff`, `git log -p` and `git merge` never fail because of forgemem.

Uninstall removes the `.gitattributes` lines and the config values forgemem wrote, each
only when it still holds exactly what install put there.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from forgemem.agents.install import Change, Plan, _load_record, _read, _record_path, forgemem_argv
from forgemem.errors import UsageError

NAME = "git"


GITATTRIBUTES_LINE = ".forge/memory/**/*.md diff=forgemem merge=forgemem"
#: what earlier versions wrote (a diff driver only): replaced by install, removed by uninstall
OLD_GITATTRIBUTES_LINES = (".forge/memory/**/*.md diff=forgemem",)
MERGE_NAME = "forgemem: memory files (edges and tags of both sides merged)"


def textconv_command(argv: list[str]) -> str:
    """`diff.forgemem.textconv`: git appends the file's path; the raw file when forgemem fails."""
    return (f'forgemem_textconv() {{ {shlex.join(argv)} diff-driver "$1" 2>/dev/null || cat "$1"; }}; '
            "forgemem_textconv")


def merge_command(argv: list[str]) -> str:
    """`merge.forgemem.driver`: forgemem's merge, else git's own text merge (`git merge-file`).

    git replaces %O %A %B %L with its temporary files' names and the marker size (so a `%`
    in forgemem's path is written `%%`); the driver's status 0 is merged, 3 merged with
    conflict markers; any other status means forgemem did not run or did not merge.
    """
    forgemem = shlex.join(argv).replace("%", "%%")
    return ("forgemem_merge() { " + forgemem + ' merge-driver "$1" "$2" "$3" "$4" 2>/dev/null; s=$?; '
            '[ "$s" -eq 0 ] && return 0; [ "$s" -eq 3 ] && return 1; '
            'git merge-file -L ours -L base -L theirs --marker-size="$4" "$2" "$1" "$3"; }; '
            "forgemem_merge %O %A %B %L")


def config_values(argv: list[str]) -> dict[str, str]:
    return {"diff.forgemem.textconv": textconv_command(argv), "merge.forgemem.name": MERGE_NAME,
            "merge.forgemem.driver": merge_command(argv)}


def _local_config(root: Path) -> dict[str, str]:
    """The repository's local `diff.forgemem.*` and `merge.forgemem.*` values (read, nothing run)."""
    from forgemem.git.run import git_argv

    done = subprocess.run(git_argv("config", "--local", "-z", "--get-regexp", r"^(diff|merge)\.forgemem\."),
                          cwd=root, capture_output=True, check=False)
    values = {}
    for item in done.stdout.decode("utf-8", "replace").split("\0"):
        if item:
            key, _, value = item.partition("\n")
            values[key] = value
    return values


def plan_git_install(root: Path, argv: list[str] | None = None) -> Plan:
    """`.gitattributes` sends memory files to the `forgemem` drivers; local git config defines them.

    `argv`: how git should start forgemem (default: this forgemem, by absolute path)."""
    record_path = _record_path("git", root)
    plan = Plan(record_path=record_path)
    attributes = root / ".gitattributes"
    before = _read(attributes)
    lines = (before or "").splitlines(keepends=True)
    if any(line.rstrip("\r\n") == GITATTRIBUTES_LINE for line in lines):
        after = before
    elif any(line.rstrip("\r\n") in OLD_GITATTRIBUTES_LINES for line in lines):
        after = "".join(GITATTRIBUTES_LINE + line[len(line.rstrip("\r\n")):]
                        if line.rstrip("\r\n") in OLD_GITATTRIBUTES_LINES else line for line in lines)
    else:
        after = (before or "") + ("" if not before or before.endswith("\n") else "\n") + GITATTRIBUTES_LINE + "\n"
    plan.changes.append(Change(attributes, before, after))
    values = config_values(argv or forgemem_argv())
    current = _local_config(root)
    for key, value in values.items():
        if current.get(key) != value:
            plan.commands.append((root, ["git", "config", "--local", key, value]))
    plan.record = {"root": str(root), "config": values}
    if not plan.commands and after == before:
        plan.notes.append("already installed; nothing to change")
    return plan


def _is_ours(key: str, value: str, record: dict) -> bool:
    """Does this config value hold exactly what a forgemem install wrote?"""
    if value in (record.get("config", {}).get(key), config_values(forgemem_argv()).get(key)):
        return True
    if key == "diff.forgemem.textconv":  # earlier versions: the bare command, without the fallback
        try:
            words = shlex.split(value)
        except ValueError:
            return False
        return words[-1:] == ["diff-driver"] and (Path(words[0]).name == "forgemem" or words[1:4] == ["-P", "-m", "forgemem"])
    return False


def plan_git_uninstall(root: Path) -> Plan:
    record_path = _record_path("git", root)
    plan = Plan(record_path=record_path, remove_record=True)
    record = _load_record(record_path) or {}
    attributes = root / ".gitattributes"
    before = _read(attributes)
    ours = (GITATTRIBUTES_LINE, *OLD_GITATTRIBUTES_LINES)
    if before is not None and any(line in ours for line in before.splitlines()):
        kept = [line for line in before.splitlines(keepends=True) if line.rstrip("\r\n") not in ours]
        after = "".join(kept) or None
    else:
        after = before
    plan.changes.append(Change(attributes, before, after))
    current = _local_config(root)
    mine = [key for key, value in current.items() if _is_ours(key, value, record)]
    for key in sorted(set(current) - set(mine)):
        plan.notes.append(f"git config {key} is not what forgemem wrote; left alone")
    for section in ("diff.forgemem", "merge.forgemem"):
        keys = [k for k in current if k.startswith(section + ".")]
        if keys and all(k in mine for k in keys):
            plan.commands.append((root, ["git", "config", "--local", "--remove-section", section]))
        else:
            plan.commands += [(root, ["git", "config", "--local", "--unset", k]) for k in keys if k in mine]
    if not plan.commands and after == before:
        plan.notes.append("forgemem is not installed there; nothing to remove")
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


hook = None  # git runs the drivers itself (`forgemem diff-driver FILE`, `forgemem merge-driver %O %A %B %L`)
