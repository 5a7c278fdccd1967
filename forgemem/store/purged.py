"""What was purged stays purged: a purged memory is never captured again.

`forgemem forget --purge` deletes a memory's file (a secret said by mistake, a wrong fact). A later capture pass
that reads the same words again (a copied or resumed transcript) must not write it back. The store's cache (private,
never in git) keeps one line per purged memory: the SHA-256 of its text and of its quote, each reduced to its words
in lower case, so what was purged is recognised and never kept in the clear.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path

from forgemem.permissions import atomic_write_text
from forgemem.store.folder import Store
from forgemem.store.model import Memory

PURGED_NAME = "purged.sha256"
_WORD = re.compile(r"\w+")


def fingerprint(text: str) -> str:
    """The key of a text: its words, lower case, hashed (the same words in any punctuation give the same key)."""
    return hashlib.sha256(" ".join(_WORD.findall(text.lower())).encode("utf-8")).hexdigest()


def remember(store: Store, memory: Memory) -> list[str]:
    """Keep the keys of a purged memory's text and quote in the store's cache; what went wrong (nothing: [])."""
    path = store.cache_dir / PURGED_NAME
    quote = memory.source.quote if memory.source and memory.source.quote else ""
    keys = [fingerprint(text) for text in (memory.body, quote) if text.strip()]
    try:
        atomic_write_text(path, "".join(f"{key}\n" for key in sorted(set(_read(path)) | set(keys))), private=True)
    except OSError as exc:
        return [f"{memory.id} is purged, but {path} cannot note it ({exc}): a transcript read again may capture the "
                f"same words"]
    return []


def keys(stores: Iterable[Store]) -> set[str]:
    """The keys of everything purged from these stores."""
    return {key for store in stores for key in _read(store.cache_dir / PURGED_NAME)}


def _read(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        return []
    return [line for line in text.split() if re.fullmatch(r"[0-9a-f]{64}", line)]
