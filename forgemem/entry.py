"""The `forgemem` console script.

`forgemem hook claude-code` runs on every prompt an agent sends, so it skips
the CLI framework (typer and rich cost about 60 ms to import); everything else
goes to `forgemem.cli`.
"""

from __future__ import annotations

import sys


def run() -> None:
    from .spawn import enter_safe_mode

    enter_safe_mode()  # no Python process forgemem starts imports from the folder it runs in
    if sys.argv[1:] == ["hook", "claude-code"]:
        from .hooks import main_claude_code

        sys.exit(main_claude_code())
    from .cli import run as cli_run

    cli_run()
