"""What a memory's surroundings add to its recall score: the query's dates and its capture session.

Applied to the fused candidates (`combined` = cosine + λ · lexical share), before heads and priors:

1. date: a memory written in a period the query names ("in June", "on October 13, 2023", "last
   week": `forgemem.recall.dates`) gets +DATE_WEIGHT;
2. session neighbours: the TOP candidates lend to the memories written just before and after them in
   the same capture session (the same `session_id`, in the order they were written; same-second ties
   by file name, digits as numbers): NEIGHBOUR_WEIGHTS[d] · the lender's score at distance d, the best
   loan counts. A neighbour that neither leg found is fetched, with its own cosine. A turn that answers
   a question ("yes, the 3 pm train") rarely shares the question's words; the turn before it does;
3. session: every candidate gets SESSION_WEIGHT · the best score of its session among the TOP (its
   own, when higher or when its session has none there).

Measured on the LoCoMo development split (benchmarks/bench_quality.py ablations; each turn a memory,
each session a capture session): R@5/R@10 0.599/0.698 without any, 0.654/0.761 with all three; the
weights were chosen on three conversations and checked on the other two (0.593/0.692 -> 0.651/0.739).
Memories without a `session_id` (written by hand, imported) only take the date and session terms.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

from forgemem.recall.dates import periods, within
from forgemem.recall.rank import Candidate

DATE_WEIGHT = 0.1
NEIGHBOUR_WEIGHTS = {1: 0.3, 2: 0.15}
SESSION_WEIGHT = 0.1
TOP = 10

Key = tuple[str, int]  # (scope, rowid)
#: (scope, session_id) -> the rowids of that session's memories, in the order they were written
SessionOrder = Callable[[str, str], list[int]]
#: a memory neither leg found, as a candidate (None when it cannot be read)
Fetch = Callable[[Key], Candidate | None]
SameMemory = Callable[[str, str], bool]


def adjust(candidates: list[Candidate], text: str, session_order: SessionOrder, fetch: Fetch,
           now: datetime | None = None, same_memory: SameMemory = lambda a, b: False) -> list[Candidate]:
    """The candidates (fetched neighbours added) with the three terms in `combined`, best first.

    `same_memory(a, b)`: whether two ids are versions of one memory; a version lends nothing to another
    (recall already gives a memory the best score of its versions)."""
    by_key = {c.key: c for c in candidates if c.key is not None}
    spans = periods(text, {c.memory.created_at.year for c in candidates}, now)
    if spans:
        for c in candidates:
            if within(c.memory.created_at, spans):
                c.combined += DATE_WEIGHT
                c.surroundings["date"] = DATE_WEIGHT
    top = sorted(by_key.values(), key=lambda c: (-c.combined, c.memory.id))[:TOP]
    offers: dict[Key, list[tuple[float, str]]] = {}  # what each neighbour is lent, and by whom
    session_best: dict[tuple[str, str], float] = {}
    for lender in top:
        assert lender.key is not None
        scope, rowid = lender.key
        session = lender.memory.session_id
        if not session or not (NEIGHBOUR_WEIGHTS or SESSION_WEIGHT):
            continue
        session_best[(scope, session)] = max(session_best.get((scope, session), lender.combined), lender.combined)
        if lender.combined <= 0:
            continue  # a match worse than none lends nothing
        order = session_order(scope, session)
        try:
            place = order.index(rowid)
        except ValueError:
            continue
        for distance, weight in NEIGHBOUR_WEIGHTS.items():
            for other in (place - distance, place + distance):
                if 0 <= other < len(order):
                    offers.setdefault((scope, order[other]), []).append((weight * lender.combined, lender.memory.id))
    for key in offers:
        if key not in by_key:
            fetched = fetch(key)
            if fetched is not None and fetched.memory.session_id:
                by_key[key] = fetched
    loans = {key: max((value for value, lender in lent if not same_memory(lender, by_key[key].memory.id)), default=0.0)
             for key, lent in offers.items() if key in by_key}
    for key, c in by_key.items():
        best = session_best.get((key[0], c.memory.session_id or ""), c.combined)
        if loans.get(key):
            c.surroundings["neighbour"] = loans[key]
        c.surroundings["session"] = SESSION_WEIGHT * max(best, c.combined)
        c.combined += loans.get(key, 0.0) + c.surroundings["session"]
    return sorted(by_key.values(), key=lambda c: (-c.combined, c.memory.id))


def written_order(rows: list[tuple[int, str, str]]) -> list[int]:
    """Rowids of (rowid, path, created_at) rows in the order they were written: by time, then by file
    name with its digits read as numbers (`turn-2` before `turn-10`)."""
    if len({created for _rowid, _path, created in rows}) == len(rows):  # no two written in the same second
        return [rowid for rowid, _path, _created in sorted(rows, key=lambda r: r[2] or "")]
    return [rowid for rowid, _path, _created in sorted(rows, key=lambda r: (r[2] or "", _natural(r[1])))]


def _natural(path: str) -> list[tuple[int, int | str]]:
    return [(0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", path.rsplit("/", 1)[-1])]
