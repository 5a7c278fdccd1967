"""What a memory's text cites of its repository: paths and code symbols named in backticks.

`forgemem.curate.stale` flags memories whose citations moved on (doctor, status, review, tidy); the context
block for agents marks a memory that cites a path no longer there (`missing_paths`), so an agent is not handed
a rule about a file that is gone as if it held.
"""

from __future__ import annotations

import re
from pathlib import Path

_BACKTICKED = re.compile(r"`([^`\n]{2,200})`")
_PATHLIKE = re.compile(r"^[\w.\-]+(?:/[\w.\-]*)+$|^[\w\-]+\.(?:py|md|toml|ya?ml|json|js|ts|tsx|go|rs|rb|sh|cfg|ini|txt|sql|html|css)$")
_SYMBOL = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?$")


def mentions(body: str) -> tuple[list[str], list[str]]:
    """(paths, symbols) named in backticks."""
    paths, symbols = [], []
    for raw in _BACKTICKED.findall(body):
        token = raw.strip()
        if " " in token or any(c in token for c in "<>*$~{}[]|") or "://" in token:
            continue
        token = re.sub(r":\d+$", "", token)
        if _PATHLIKE.match(token):
            paths.append(token)
        elif _SYMBOL.match(token):
            name = token.removesuffix("()")
            last = name.split(".")[-1]
            code_like = "_" in last or re.search(r"[a-z][A-Z]|^[A-Z][a-z]+[A-Z]", last)
            if code_like and len(last) >= 4:
                symbols.append(last)
    return list(dict.fromkeys(paths)), list(dict.fromkeys(symbols))


def cited_path(root: Path, name: str) -> Path:
    """Where a cited path (`db/migrations/`, `harbor/app.py`) is in the repository folder `root`."""
    return root / name.rstrip("/")


def missing_paths(body: str, root: Path) -> list[str]:
    """The paths `body` cites that do not exist under the repository folder `root`."""
    return [name for name in mentions(body)[0] if not cited_path(root, name).exists()]
