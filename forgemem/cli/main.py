"""The `forgemem` command: a thin layer over `forgemem.workspace`.

Exit codes: 0 ok, 1 problems found (or an operation failed), 2 usage error.
Errors go to stderr as one sentence; set FORGEMEM_DEBUG=1 for tracebacks.
"""

from __future__ import annotations

import sys

from forgemem.cli import agents, capture, dispatch, git, interop, memories, overview, recall, status, tidy  # noqa: F401 - they register their commands
from forgemem.cli.app import app

__all__ = ["app", "main", "run"]


def main(argv: list[str] | None = None) -> int:
    """Run the CLI (every command registered); returns the exit code instead of raising (see `dispatch.main`)."""
    return dispatch.main(argv)


def run() -> None:
    sys.exit(main())

