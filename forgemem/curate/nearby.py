"""Memories close to one another: near-duplicates and likely contradictions.

`add` asks this about the memory it just wrote (`near_new`: one recall over both
stores, through the recall server when it runs, so the model is not loaded again;
the vectors are the index's own); `forgemem tidy` about every pair of current
memories (`near_pairs`: the cached vectors, one matrix product). Two memories are

- **likely contradictions** when they are on the same subject and one is said in
  the negative while the other is not (cosine ≥ CONTRADICT_AT), or when they are
  near-duplicates that differ in a value ("retry 3 times" / "retry 5 times");
- **near-duplicates** when their cosine is ≥ NEAR_AT (all-MiniLM-L6-v2) and they
  are not contradictions.

The subject, the names and the negation come from the capture relation decision
(`capture.classify.relate`: the subject lexicon, shared names, content overlap;
`relate_language`: negative rules and turned-down names) and from `consolidate`
(`held_apart`: a negation or a value in one text only); nothing new is guessed
here. A negation aimed at a name the other text does not mention ("Use ruff, not
flake8" beside "Use ruff for linting") is no contradiction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from forgemem.curate.consolidate import DUPLICATE_AT, held_apart
from forgemem.store.model import Memory, one_line

NEAR_AT = DUPLICATE_AT  # the threshold `consolidate` merges at
CONTRADICT_AT = 0.70  # same subject, opposite polarity: measured on pairs in tests/test_tidy.py
SHOWN = 3  # near memories `add` names
_RECALL_K = 10
_BLOCK = 512  # rows of the similarity matrix computed at once


@dataclass(frozen=True)
class Near:
    """An existing memory close to another one."""

    memory: Memory
    score: float  # cosine
    kind: str  # duplicate | contradiction
    why: str = ""  # for a contradiction: what differs

    def to_dict(self) -> dict:
        data = {"id": self.memory.id, "score": round(self.score, 4), "text": self.memory.body,
                "scope": self.memory.scope, "category": self.memory.category}
        if self.kind == "contradiction":
            data["why"] = self.why
        return data


def judge(a: Memory, b: Memory, score: float) -> tuple[str, str] | None:
    """("duplicate", "") or ("contradiction", why) for two memories at cosine `score`; None: neither."""
    if score < min(NEAR_AT, CONTRADICT_AT):
        return None
    if score >= CONTRADICT_AT and _opposite(a, b):
        return "contradiction", "one says the opposite of the other"
    if score >= NEAR_AT:
        why = held_apart(a.body, b.body)
        if why is not None and why.startswith("different values"):
            return "contradiction", why
        return "duplicate", ""
    return None


def _opposite(a: Memory, b: Memory) -> bool:
    """Same subject, and one rule is said in the negative where the other is not."""
    from forgemem.capture.classify.relate import FEATURES, Candidate, features
    from forgemem.capture.classify.relate_language import _negated
    from forgemem.curate.consolidate import _NEGATION
    from forgemem.names import _names

    f = dict(zip(FEATURES, features(b.body, "", b.category, b.scope,
                                    Candidate(a.body, a.category, a.scope, 1.0)), strict=True))
    same_subject = f["subject_shared"] or f["shared_name"] or f["content_overlap"] >= 0.25
    flip = f["polarity_flip"] and len(_NEGATION.findall(a.body)) != len(_NEGATION.findall(b.body))
    if not (same_subject and flip):
        return False
    negative, positive = (a, b) if len(_NEGATION.findall(a.body)) > len(_NEGATION.findall(b.body)) else (b, a)
    elsewhere = _names(negative.body) - _names(positive.body)
    return not any(_negated(negative.body, name) for name in elsewhere)


def current(memories: list[Memory]) -> list[Memory]:
    """What a person relies on: not retracted, not waiting in review."""
    return [m for m in memories if m.status is None and not m.retracted]


# ------------------------------------------------------------------ one new memory (add)


def near_new(workspace, memory: Memory, prepare: Callable | None = None,
             on_notice: Callable[[str], None] | None = None) -> list[Near]:
    """The current memories of both stores close to `memory` (just written), nearest first: at most
    SHOWN near-duplicates and SHOWN likely contradictions. Memories it supersedes or names in its edges
    are left out. Empty when the embedding model is unavailable (nothing to compare by). `prepare(engine)`
    runs before an answer in this process (the CLI's progress bar for a first index build)."""
    from forgemem.recall import client

    request = {"op": "recall", "stores": client.store_dirs(workspace), "use_embeddings": True, "log": False,
               "queries": [{"text": _indexed(memory), "k": _RECALL_K, "hops": 0, "floor": 0.0}]}  # by cosine, below
    if not request["stores"]:
        return []
    answer = client.answer(request, prepare=prepare, on_notice=on_notice)
    if not answer.get("ok") or answer.get("lexical_only"):
        return []
    skip = {memory.id, *memory.supersedes, *(r.id for r in memory.related)}
    snap = workspace.load()  # the server's view may be a moment old: what is current is read here
    found: list[Near] = []
    for hit in answer["results"][0]:
        score = (hit.get("explain") or {}).get("dense_score")
        other = snap.graph.memories.get(hit["id"])
        if hit["id"] in skip or score is None or other is None or not snap.graph.is_head(other.id) \
                or not current([other]):
            continue
        verdict = judge(other, memory, float(score))
        if verdict is not None:
            found.append(Near(other, float(score), *verdict))
    found.sort(key=lambda n: -n.score)
    return ([n for n in found if n.kind == "duplicate"][:SHOWN]
            + [n for n in found if n.kind == "contradiction"][:SHOWN])


def _indexed(memory: Memory) -> str:
    from forgemem.index.database import embed_text

    return embed_text(memory)


def advice(near: Near, new: Memory) -> str:
    """The warning `add` prints for one near memory, with the command that settles it."""
    from forgemem.store.model import short

    old, mine = short(near.memory.id), short(new.id)
    what = "Similar to" if near.kind == "duplicate" else "May contradict"
    where = "" if near.memory.scope == new.scope else f" in the {near.memory.scope} store"
    why = f"; {near.why}" if near.kind == "contradiction" else ""
    text = one_line(near.memory, 100)
    line = f"{what} {old}{where} ({near.score:.2f}{why}): {text}{'' if text.endswith(('.', '!', '?', '…')) else '.'}"
    if near.memory.scope != new.scope:  # a version never crosses stores
        return f"{line} If one of them is enough: forgemem forget {old} (or {mine})"
    return (f"{line} If this replaces it: {supersede_command([old, mine])} "
            "(one version in place of both), or let `forgemem tidy` ask")


def supersede_command(ids: list[str]) -> str:
    """The `add` line that writes one version in place of `ids`, with a placeholder for the text that is
    safe to copy as printed (nothing else on the line could become the memory's text)."""
    return 'forgemem add "NEW TEXT" ' + " ".join(f"--supersedes {i}" for i in ids)


# ------------------------------------------------------------------ every pair (tidy)


def near_pairs(memories: list[Memory], vectors) -> list[tuple[Memory, Memory, float, str, str]]:
    """(older, newer, cosine, kind, why) for every pair of `memories` that is a near-duplicate or a
    likely contradiction; `vectors`: their unit vectors, row for row. Closest pairs first."""
    import numpy as np

    found = []
    low = min(NEAR_AT, CONTRADICT_AT)
    matrix = np.asarray(vectors, dtype=np.float32)
    for start in range(0, len(memories), _BLOCK):
        block = matrix[start:start + _BLOCK] @ matrix.T
        for i, j in zip(*np.nonzero(block >= low), strict=True):
            a, b = start + int(i), int(j)
            if b <= a:
                continue
            score = float(block[i, j])
            verdict = judge(memories[a], memories[b], score)
            if verdict is None:
                continue
            older, newer = sorted((memories[a], memories[b]), key=_written)
            found.append((older, newer, score, *verdict))
    found.sort(key=lambda p: (-p[2], p[0].id, p[1].id))
    return found



def _written(memory: Memory) -> tuple:
    """When a memory was written: `created_at` (to the second), then its file's time (within a second)."""
    try:
        within = memory.path.stat().st_mtime_ns if memory.path is not None else 0
    except OSError:
        within = 0
    return memory.created_at, within, memory.id
