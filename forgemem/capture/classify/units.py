"""The units the offline classifier decides on: the sentences of a human turn.

A long turn often mixes a task with one lasting rule ("fix the flaky test — and
from now on we use pytest-xdist"), so each sentence is decided on its own. A
short turn ("yes, SHAs") is one unit whatever its length. Code blocks, pasted
logs and shell or slash commands are not units: they are not what the person said.
"""

from __future__ import annotations

import re

MAX_UNIT_CHARS = 400
_CODE_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_LOGGY = re.compile(r"^\s*(?:[A-Z]\s{2,}|\w+(?:Error|Exception)\b|Traceback|File \"|at [\w.$]+\(|\$ |>>> |\d+\s*[│|]"
                    r"|\[\d{2}:\d{2}|\d{4}-\d{2}-\d{2}[T ]\d{2}:|npm (?:ERR|WARN)|error(?:\[E\d+\])?:|warning:)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Za-z\"'`(¿¡ÄÖÜ])|\n+|\s+[—–]\s+|;\s+(?=(?:and |also |plus )?"
                           r"(?:we|i|use|never|always|don't|do not|keep|our)\b)", re.I)


def units(text: str) -> list[str]:
    """The sentences of a human turn worth deciding on."""
    text = _CODE_FENCE.sub("\n", text).strip()
    if not text or text.startswith(("/", "!")):
        return []  # slash commands and shell input
    found = []
    for line in text.splitlines():
        if _LOGGY.match(line) or line.startswith(">") or line.count("  ") > 3:
            continue
        for piece in _SENTENCE_END.split(line):
            piece = piece.strip(" -*•\t")
            if piece and len(piece) <= MAX_UNIT_CHARS and re.search(r"[^\W\d_]", piece):
                found.append(piece)
    if len(found) > 1:
        # a fragment of one or two words ("ok.", "thanks!") is not a unit of its own
        found = [f for f in found if len(f.split()) >= 3] or found[:1]
    return found
