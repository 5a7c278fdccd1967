"""Where the `forgemem` command writes, without the CLI framework: the consoles, warnings, JSON.

`forgemem.cli.app` re-exports these for the commands; the fast path of a warm `forgemem recall`
(`forgemem.cli.quick`) uses them without importing typer.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def warn(message: str) -> None:
    err.print(f"forgemem: {escape(message)}")


def style_scope(scope: str) -> str:
    return "[cyan]repo[/]" if scope == "repo" else "[magenta]user[/]"
