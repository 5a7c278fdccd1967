"""Where the `forgemem` command writes: its two consoles, warnings, JSON.

`forgemem.cli.app` re-exports these for the commands. The same `Printer` prints a warm recall's answer in
the recall server, on consoles that reproduce the client's terminal (`forgemem.recall.command`).
"""

from __future__ import annotations

from forgemem.recall.command import Printer, new_console, style_scope  # noqa: F401 - style_scope: used from here

out = new_console()
err = new_console(stderr=True)
printer = Printer(out, err)
warn = printer.warn
emit_json = printer.json
