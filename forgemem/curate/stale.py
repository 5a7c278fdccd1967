"""Stale memories: those that name repository paths or code symbols that moved on.

A memory that mentions a backticked path (`harbor/booking/service.py`,
`db/migrations/`) or a code symbol (`GitTemporaryDirectory`,
`harbor.clock.now`) is flagged when

- the path no longer exists in the working tree;
- the file changed a lot since the memory was written: lines added plus
  removed since its `created_at` (git log --numstat) are at least
  CHANGED_SHARE of the file's current length (and at least MIN_CHANGED lines);
- the symbol appears nowhere in the tracked files (git grep).

Only repo-scope memories are checked (user memories speak of other projects too).

`forgemem review` flags the memories that cite what the new side of a diff no
longer has (`review`, `gone_at`: a path or symbol checked at that revision, in
the index or in the working tree): the memories the diff writes, and the ones
whose citation the diff took away (it existed on the old side). Memories stale
before the diff are left to `doctor`, `status` and `tidy`.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from forgemem.store.citations import cited_path, mentions
from forgemem.store.model import Memory, format_timestamp

CHANGED_SHARE = 0.5
MIN_CHANGED = 10
GONE = ("missing-path", "missing-symbol")  # the kinds that say a cited thing no longer exists



@dataclass
class Finding:
    memory: Memory
    kind: str  # missing-path | changed-file | missing-symbol
    name: str
    detail: str

    def to_dict(self) -> dict:
        return {"id": self.memory.id, "kind": self.kind, "name": self.name, "detail": self.detail}

    def cites(self) -> str:
        """What a person reads: "cites `src/old.py`, which no longer exists"."""
        if self.kind == "missing-symbol":
            return f"cites `{self.name}`, which appears nowhere in the repository"
        if self.kind == "missing-path":
            return f"cites `{self.name}`, which no longer exists"
        return self.detail


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    from forgemem.git.review import git_argv

    return subprocess.run(git_argv(*args), cwd=root, capture_output=True, text=True)


def changed_lines_since(root: Path, path: str, since: str) -> int:
    done = _git(root, "log", "--no-textconv", "--no-ext-diff", f"--since={since}", "--numstat", "--format=", "--", path)
    total = 0
    for line in done.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
            total += int(parts[0]) + int(parts[1])
    return total


def find_stale(memories: list[Memory], root: Path) -> list[Finding]:
    findings: list[Finding] = []
    symbol_found: dict[str, bool] = {}
    for memory in memories:
        if memory.scope != "repo" or memory.retracted:
            continue
        paths, symbols = mentions(memory.body)
        for name in paths:
            target = cited_path(root, name)
            if not target.exists():
                findings.append(Finding(memory, "missing-path", name, f"`{name}` no longer exists"))
                continue
            if target.is_file():
                since = format_timestamp(memory.created_at + timedelta(seconds=1))  # --since is inclusive
                changed = changed_lines_since(root, name, since)
                try:
                    length = sum(1 for _ in target.open("rb"))
                except OSError:
                    continue
                if changed >= MIN_CHANGED and changed >= CHANGED_SHARE * max(length, 1):
                    findings.append(Finding(
                        memory, "changed-file", name,
                        f"`{name}` changed a lot since the memory was written "
                        f"({changed} lines added or removed; {length} lines now)",
                    ))
        for name in symbols:
            if name not in symbol_found:
                # the memory files themselves do not count as a mention
                found = _git(root, "grep", "-q", "-w", "-F", "-e", name, "--", ".", ":(exclude).forge")
                symbol_found[name] = found.returncode == 0
            if not symbol_found[name]:
                findings.append(Finding(memory, "missing-symbol", name, f"`{name}` appears nowhere in the repository"))
    return findings


# ------------------------------------------------------------------ at a side of a diff (review)


class _Side:
    """Which paths and symbols one side of a diff has: a revision, the index or the working tree."""

    def __init__(self, root: Path, where: str):
        from forgemem.git.review import INDEX, WORKTREE

        self.root, self.where = root, where
        self.worktree, self.index = where == WORKTREE, where == INDEX
        self._files: set[str] | None = None
        self._symbols: dict[str, bool] = {}

    def files(self) -> set[str]:
        if self._files is None:
            args = ("ls-files", "-z") if self.index else ("ls-tree", "-r", "--name-only", "-z", self.where)
            done = _git(self.root, *args)
            self._files = set(filter(None, done.stdout.split("\0"))) if done.returncode == 0 else set()
        return self._files

    def has_path(self, name: str) -> bool:
        if self.worktree:
            return cited_path(self.root, name).exists()
        name = name.rstrip("/")
        return name in self.files() or any(f.startswith(name + "/") for f in self.files())

    def has_symbol(self, name: str) -> bool:
        if name not in self._symbols:
            where = () if self.worktree else ("--cached",) if self.index else (self.where,)
            done = _git(self.root, "grep", "-q", "-w", "-F", "-e", name, *where, "--", ".", ":(exclude).forge")
            self._symbols[name] = done.returncode == 0
        return self._symbols[name]

    def gone(self, memory: Memory) -> list[Finding]:
        paths, symbols = mentions(memory.body)
        found = [Finding(memory, "missing-path", p, f"`{p}` no longer exists") for p in paths if not self.has_path(p)]
        return found + [Finding(memory, "missing-symbol", s, f"`{s}` appears nowhere in the repository")
                        for s in symbols if not self.has_symbol(s)]


def review(root: Path, rev_range: str | None = None, staged: bool = False):
    """`forgemem review` (`git.review.review`), with the memories that cite what the new side no longer has."""
    from forgemem.git import review as git_review

    result = git_review.review(root, rev_range, staged)
    old_where, new_where = git_review.sides_for(root, rev_range, staged)
    old, new = _Side(root, old_where), _Side(root, new_where)
    changed = {i.memory.id for i in result.items if i.kind != "deleted"}
    graph = result.new.graph
    for memory in sorted(result.new.memories.values(), key=lambda m: (m.created_at, m.id)):
        if memory.scope != "repo" or memory.retracted or not graph.is_head(memory.id):
            continue
        for finding in new.gone(memory):
            if memory.id not in changed:  # only what this diff took away
                had = old.has_path if finding.kind == "missing-path" else old.has_symbol
                if not had(finding.name):
                    continue
            result.stale.append({"id": memory.id, "kind": finding.kind, "name": finding.name,
                                 "cites": finding.cites(), "changed": memory.id in changed})
    return result
