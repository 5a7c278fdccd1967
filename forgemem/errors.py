"""Errors and problems.

A `ForgememError` stops a command with one clear sentence and an exit code.
A `Problem` is something wrong with a memory file or the store; problems are
collected and reported, and never stop the other files from loading.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_USAGE = 2


class ForgememError(Exception):
    """A failure the user can act on; the message is one sentence."""

    exit_code = EXIT_PROBLEMS


class UsageError(ForgememError):
    """Bad arguments: an unknown or ambiguous id, a bad option value."""

    exit_code = EXIT_USAGE


class ConfigError(UsageError):
    """A configuration file that cannot be used."""


def unknown_choice(kind: str, value: object, allowed: tuple[str, ...]) -> str:
    """`unknown category 'misc' (expected one of: ...)`: the one wording for a bad choice."""
    return f"unknown {kind} {value!r} (expected one of: {', '.join(allowed)})"


def require_choice(kind: str, value: str, allowed: tuple[str, ...]) -> None:
    """A usage error unless `value` is one of `allowed`."""
    if value not in allowed:
        raise UsageError(unknown_choice(kind, value, allowed))


@dataclass(frozen=True)
class Problem:
    path: Path | None
    reason: str
    line: int | None = None
    memory_id: str | None = None
    #: for a file that gives no memory: the ids its `supersedes` still names in the raw text, so the versions it
    #: replaced do not become current again while it is broken (a git conflict in the newest version, say)
    supersedes: tuple[str, ...] = ()

    def __str__(self) -> str:
        where = str(self.path) if self.path else "<store>"
        if self.line is not None:
            where += f":{self.line}"
        return f"{where}: {self.reason}"

    def to_dict(self) -> dict:
        return {
            "path": str(self.path) if self.path else None,
            "line": self.line,
            "id": self.memory_id,
            "reason": self.reason,
            "supersedes": list(self.supersedes),
        }
