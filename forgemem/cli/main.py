"""The `forgemem` command: a thin layer over `forgemem.workspace`.

Exit codes: 0 ok, 1 problems found (or an operation failed), 2 usage error.
Errors go to stderr as one sentence; set FORGEMEM_DEBUG=1 for tracebacks.
"""

from __future__ import annotations

import sys

from rich.markup import escape

from forgemem.cli import agents, capture, git, interop, memories, overview, recall, status, tidy  # noqa: F401 - they register their commands
from forgemem.cli.app import app, err
from forgemem.config import debug
from forgemem.errors import EXIT_PROBLEMS, ForgememError

__all__ = ["app", "main", "run"]


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code instead of raising.

    Usage errors are reported by typer itself (exit 2); a `ForgememError` is
    one sentence on stderr with its own exit code; anything else is a bug,
    reported in one line unless FORGEMEM_DEBUG is set.
    """
    try:
        app(args=argv, prog_name="forgemem")
    except SystemExit as exc:
        if exc.code is None:
            return 0
        return exc.code if isinstance(exc.code, int) else EXIT_PROBLEMS
    except ForgememError as exc:
        err.print(f"forgemem: error: {escape(str(exc))}")
        return exc.exit_code
    except KeyboardInterrupt:
        err.print("forgemem: interrupted")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: one line, traceback on request
        if debug():
            raise
        err.print(
            f"forgemem: internal error: {escape(type(exc).__name__)}: {escape(str(exc))} "
            "(set FORGEMEM_DEBUG=1 for the traceback)"
        )
        return EXIT_PROBLEMS
    return 0


def run() -> None:
    sys.exit(main())

