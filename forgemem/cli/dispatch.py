"""Running the `forgemem` command: which module registers each command, and the one way errors end a run.

The console script imports only the module of the command it runs (`module_for`): typer builds a
click command for every registered command on each run, and importing them all (agents, capture,
git, …) costs about 40 ms a call, more than a warm recall itself. `forgemem.cli.main` still imports
them all (for `--help`, an unknown command, and whoever imports the app); `tests/test_cli_dispatch.py`
checks this table against it.
"""

from __future__ import annotations

#: command -> the module of forgemem.cli that registers it
MODULES = {
    "slash": "agents", "hook": "agents", "install": "agents", "uninstall": "agents", "mcp": "agents",
    "observe": "capture",
    "review": "git", "diff-driver": "git", "merge-driver": "git", "consolidate": "git",
    "import": "interop", "export": "interop",
    "init": "memories", "trust": "memories", "untrust": "memories", "add": "memories", "list": "memories",
    "show": "memories", "history": "memories", "link": "memories", "forget": "memories", "resolve": "memories",
    "edit": "memories",
    "graph": "overview", "validate": "overview", "stats": "overview",
    "recall": "recall", "index": "recall", "doctor": "recall", "serve": "recall", "conflicts": "recall",
    "feedback": "recall", "context": "recall",
    "status": "status",
    "tidy": "tidy",
}
#: what an interrupted command says on stderr (exit code 130)
INTERRUPTED = "forgemem: interrupted"


def internal_error(exc: BaseException) -> str:
    """The one line an unexpected error (a bug) ends a command with, unless FORGEMEM_DEBUG asks for the traceback."""
    return f"forgemem: internal error: {type(exc).__name__}: {exc} (set FORGEMEM_DEBUG=1 for the traceback)"


#: the global options that take a value (see `forgemem.cli.app.main_options`)
VALUE_OPTIONS = ("--repo-dir", "--user-dir", "-C", "--cwd")


def module_for(args: list[str]) -> str | None:
    """The module of the command these arguments run; None when all are needed (help, version, a typo)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in VALUE_OPTIONS:
            i += 2
        elif arg.startswith(tuple(f"{o}=" for o in VALUE_OPTIONS if o.startswith("--"))):
            i += 1
        elif arg.startswith("-"):
            return None  # --help, --version, or something only the whole CLI can answer
        else:
            return MODULES.get(arg)
    return None


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with the commands registered so far; returns the exit code instead of raising.

    Usage errors are reported by typer itself (exit 2); a `ForgememError` is
    one sentence on stderr with its own exit code; anything else is a bug,
    reported in one line unless FORGEMEM_DEBUG is set.
    """
    from rich.markup import escape

    from forgemem.cli.app import app, err
    from forgemem.config import debug
    from forgemem.errors import EXIT_PROBLEMS, ForgememError

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
        err.print(INTERRUPTED)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: one line, traceback on request
        if debug():
            raise
        err.print(escape(internal_error(exc)))
        return EXIT_PROBLEMS
    return 0
