"""Where the `forgemem` command writes: its two consoles, warnings, JSON.

`forgemem.cli.app` re-exports these for the commands. The same `Printer` prints a warm recall's answer in
the recall server, on consoles that reproduce the client's terminal (`forgemem.recall.command`).
"""

from __future__ import annotations

from rich.console import Console

from forgemem.recall.command import Printer, style_scope  # noqa: F401 - the commands use it from here

# emoji=False: memory text is printed as written (`rows[0:100:5]` is not `rows[0💯5]`, nor `:x:` a cross)
out = Console(highlight=False, soft_wrap=True, emoji=False)
err = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)
printer = Printer(out, err)
warn = printer.warn
emit_json = printer.json
