"""What a capture pass covers: the newest turns within a budget, from the goal arc kept in the state.

A turn is stored cut to MAX_TURN_CHARS (its start and its end) and redacted (`turn_to_json`). The arc is
read newest first and only as far as a pass needs (`record_pass`), so recording
a pass costs the same however long the arc is.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice

from forgemem.capture.transcripts import Turn

CONTEXT_TURNS = 2  # earlier turns handed along with a pass, as context only
MAX_TURN_CHARS = 4000  # one very long turn (a pasted log) is cut to this: its start and its end


@dataclass(frozen=True)
class Budget:
    """What one pass may hand to a classifier: the newest turns that fit."""

    turns: int
    chars: int


CADENCE_BUDGET = Budget(turns=40, chars=16_000)
COMPACTION_BUDGET = Budget(turns=120, chars=48_000)


def turn_to_json(turn: Turn) -> dict:
    """A turn as the state keeps it: cut to MAX_TURN_CHARS and with secrets redacted (nothing
    raw from a transcript is ever stored, not even in the cache)."""
    from forgemem.store.redact import redact

    data = turn.to_dict()
    text = data["text"]
    if len(text) > MAX_TURN_CHARS:
        # its start and its end: a rule is said before a pasted log or after it ("… 150 lines … anyway, in this repo
        # always name branches feat/<ticket-id>"), the agent's question ends its turn; each part is redacted a
        # little past its cut, so a secret across it is seen whole; each keeps whole sentences only, and the gap
        # is a line of its own, so no sentence is read across it
        half = MAX_TURN_CHARS // 2
        head = _whole_sentences(redact(text[: half + 512])[0][:half], at_end=True)
        tail = _whole_sentences(redact(text[-(half + 512):])[0][-half:], at_end=False)
        text = f"{head}\n…\n{tail}"
    else:
        text = redact(text)[0]
    data["text"] = text
    return data


_SENTENCE_END = re.compile(r"[.!?;](?=\s)|\n")


def _whole_sentences(part: str, at_end: bool) -> str:
    """A cut part of a long turn without the sentence the cut went through: the head ends at its last sentence
    end, the tail starts after its first (a line break counts), so no half sentence ("always use pnpm inst")
    is read as a rule; where the part has no sentence end in its half next to the cut, at a word."""
    window = len(part) // 2
    if at_end:
        ends = [m.end() for m in _SENTENCE_END.finditer(part, len(part) - window)]
        if ends:
            return part[: ends[-1]].rstrip()
        return part[: part.rfind(" ")].rstrip() if " " in part[-window:] else part
    first = _SENTENCE_END.search(part, 0, window)
    if first:
        return part[first.end():].lstrip()
    return part[part.find(" ") + 1:].lstrip() if " " in part[:window] else part


def fit(newest: Iterable[dict], budget: Budget) -> list[dict]:
    """The newest turns within the budget (whole turns; at least the newest one), oldest first;
    `newest` is consumed only as far as needed."""
    kept: list[dict] = []
    chars = 0
    for turn in newest:
        if len(kept) >= budget.turns or (kept and chars + len(turn["text"]) > budget.chars):
            break
        kept.append(turn)
        chars += len(turn["text"])
    return list(reversed(kept))


def cadence_window(newest: Iterator[dict], new_humans: int) -> tuple[list[dict], list[dict]]:
    """From the arc, newest first: the turns since the first of the last `new_humans` human turns
    (newest first) and the CONTEXT_TURNS before them (oldest first). When the arc holds fewer human
    turns, the window starts at its first one; with none, there is no window."""
    if new_humans <= 0:
        return [], []
    window: list[dict] = []
    users, start = 0, 0
    for turn in newest:
        window.append(turn)
        if turn["role"] == "user":
            users, start = users + 1, len(window)
            if users == new_humans:
                break
    if not users:
        return [], []
    context = window[start : start + CONTEXT_TURNS]  # older turns read past the start, if the arc ran out
    context += list(islice(newest, CONTEXT_TURNS - len(context)))
    return window[:start], context[::-1]


def record_pass(conn: sqlite3.Connection, key: str, trigger: str, session: str | None, new_humans: int = 0) -> None:
    """A pending pass with its own copy of the turns.

    A cadence pass covers the turns from the first of its `new_humans`
    human turns on (with CONTEXT_TURNS before it as context); a compaction
    pass covers the whole arc since the previous compaction. Both are cut
    to their budget, newest turns first. The arc is read newest first and
    only as far as the pass needs, so recording a pass costs the same
    however long the arc is.
    """
    cursor = conn.execute("SELECT data FROM arc WHERE path = ? ORDER BY turn DESC", (key,))
    try:
        newest = (json.loads(data) for (data,) in cursor)
        context: list[dict] = []
        if trigger == "cadence":
            window, context = cadence_window(newest, new_humans)
            turns = fit(window, CADENCE_BUDGET)
        else:
            turns = fit(newest, COMPACTION_BUDGET)
    finally:
        cursor.close()
    if not any(t["role"] == "user" for t in turns):
        return
    conn.execute(
        "INSERT INTO passes (path, trigger, session, turns, context, created) VALUES (?, ?, ?, ?, ?, ?)",
        (key, trigger, session, json.dumps(turns), json.dumps(context), time.time()),
    )
