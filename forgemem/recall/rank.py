"""Hybrid recall: lexical + dense candidates, scored as a probability of relevance, resolved to heads.

    query ─┬─ FTS5 BM25 (porter stems, stopwords dropped) ── top N per store ─┐
           └─ all-MiniLM-L6-v2 vector ── FAISS inner product ── top N ───────┤
                                                                            ▼
      union of candidates over both stores, each with two numbers that mean the same
      in any store and for any query: the cosine (a candidate missing from the dense
      list gets its exact one) and the lexical share, BM25 / the store's ceiling for
      the query (`StoreIndex.lexical_ceiling`: the idf-weighted share of the query's
      words the memory holds, 0 when it holds none)
                                                                            ▼
      combined = cosine + LAMBDA · share (share alone without vectors)
                                                                            ▼
      surroundings (forgemem/recall/surroundings.py): + a date term when the memory was
      written in a period the query names; + loans from the top candidates to the memories
      written just before and after them in the same capture session (fetched when neither
      leg found them); + a share of the best score of the memory's session
                                                                            ▼
      superseded versions resolve to their head (the head keeps its best version's
      combined); retracted heads are dropped; priors are added to combined: recency
      (newest memory in the store = +RECENCY_WEIGHT, half-life RECENCY_HALF_LIFE_DAYS),
      confidence (± CONFIDENCE_WEIGHT / 2), feedback
                                                                            ▼
      position = 1 + the memories that combine higher (before filters, so a filter never
      changes a score); relevance = σ(a + b · combined + c · ln position): a logistic model
      fitted on the LoCoMo development split (calibration.json,
      benchmarks/fit_recall_calibration.py), a probability in [0, 1] that keeps the order
      of `combined` (b > 0, c < 0); filters (scope, category, tag) apply to heads
                                                                            ▼
      neighbours over refines / relates-to / contradicts edges up to `hops`: a memory
      linked to a top hit scores at least HOP_DECAY per hop of that hit's score; unresolved
      contradictions are always shown next to the hit they contradict
                                                                            ▼
      top k; those scoring under `query.floor` are left out (a contradiction of a kept
      hit stays), and how many were is counted

Why not min-max normalisation per query (what forgemem did before): it makes the best
match of any query score 1, "thanks" included, scores of two stores cannot be compared,
and a store of one memory scores 0 lexically. Why not reciprocal-rank fusion: on LoCoMo
it scores below BM25 alone. benchmarks/bench_quality.py measures all three.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from forgemem.store.graph import MemoryGraph, Step
from forgemem.store.model import RELATIONSHIPS, Memory, format_timestamp

CANDIDATES = 100  # candidates taken from each leg of each store
FILTERED_CANDIDATES = 1000  # when filters may discard most candidates
CALIBRATION = Path(__file__).with_name("calibration.json")
# Priors are added to `combined` before places are counted (+0.05 there moves a relevance of 0.30 to
# about 0.32; a memory that passes another also takes its place).
RECENCY_WEIGHT = 0.04
RECENCY_HALF_LIFE_DAYS = 180.0
CONFIDENCE_WEIGHT = 0.04
HOP_DECAY = 0.5
#: `forgemem feedback`: each "useful" adds this, each "wrong" takes twice it off, within ±FEEDBACK_MAX
FEEDBACK_WEIGHT = 0.06
FEEDBACK_MAX = 0.3


@lru_cache(maxsize=1)
def calibration() -> dict:
    """The fitted relevance model (calibration.json): per mode ("dense", "lexical_only"), the weight
    of the lexical share in `combined` and the logistic coefficients [a, b, c]."""
    return json.loads(CALIBRATION.read_text(encoding="utf-8"))


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


@dataclass
class Hit:
    memory: Memory
    score: float
    graph: MemoryGraph
    dense_rank: int | None = None
    dense_score: float | None = None
    lexical_rank: int | None = None
    lexical_score: float | None = None
    lexical_share: float = 0.0
    combined: float = 0.0  # with the priors
    position: int = 0  # 1 + the memories that combine higher
    fused: float = 0.0  # the relevance from the two legs (the score, unless reached over an edge)
    priors: dict[str, float] = field(default_factory=dict)
    surroundings: dict[str, float] = field(default_factory=dict)  # date / neighbour / session terms
    matched: list[str] = field(default_factory=list)  # versions that matched, when not the head
    via: list[Step] = field(default_factory=list)  # graph path, when reached over edges
    conflicts: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.memory.id

    def why(self) -> str:
        """One line saying why this memory was returned."""
        parts = []
        if self.via:
            parts.append("reached via " + ", ".join(s.describe() for s in self.via))
        if self.lexical_rank is not None:
            parts.append(f"lexical #{self.lexical_rank}")
        if self.dense_rank is not None:
            parts.append(f"semantic #{self.dense_rank}")
        if self.surroundings.get("neighbour"):
            parts.append("next to a match in its session")
        if self.surroundings.get("date"):
            parts.append("written in the period asked about")
        if self.matched:
            parts.append("matched older version " + ", ".join(m[:12] for m in self.matched))
        if self.conflicts:
            parts.append("CONFLICT with " + ", ".join(c[:12] for c in self.conflicts))
        return "; ".join(parts) or "prior only"

    def to_dict(self) -> dict:
        m = self.memory
        heads = self.graph.head_of(m.id)
        return {
            "id": m.id,
            "score": round(self.score, 6),
            "scope": m.scope,
            "category": m.category,
            "path": str(m.path) if m.path else None,
            "version": m.version,
            "content": m.body,
            "status": m.status,
            "tags": m.tags,
            "created_at": format_timestamp(m.created_at),
            "head": heads[0] if len(heads) == 1 else heads,
            "superseded_by": self.graph.superseded_by.get(m.id, []),
            "matched_versions": self.matched,
            "via": [
                {"from": s.source, "relationship": s.type, "to": s.target, "reverse": s.reverse}
                for s in self.via
            ],
            "conflicts": self.conflicts,
            "explain": {
                "dense_rank": self.dense_rank,
                "dense_score": _round(self.dense_score),
                "lexical_rank": self.lexical_rank,
                "lexical_score": _round(self.lexical_score),
                "lexical_share": round(self.lexical_share, 6),
                "combined": round(self.combined, 6),
                "position": self.position,
                "fused": round(self.fused, 6),
                "priors": {k: round(v, 6) for k, v in self.priors.items()},
                "surroundings": {k: round(v, 6) for k, v in self.surroundings.items()},
                "why": self.why(),
            },
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


@dataclass
class Candidate:
    """One matching memory file before head resolution."""

    memory: Memory
    dense_rank: int | None = None
    dense_score: float | None = None
    lexical_rank: int | None = None
    lexical_score: float | None = None
    lexical_share: float = 0.0  # lexical_score / the store's ceiling for the query (`StoreIndex.lexical_ceiling`)
    combined: float = 0.0  # cosine + LAMBDA · lexical_share (lexical_share alone without vectors), + surroundings
    key: tuple[str, int] | None = None  # (scope, rowid) in the cache
    surroundings: dict[str, float] = field(default_factory=dict)  # what each term of `surroundings` added


@dataclass
class Query:
    text: str
    k: int = 10
    scope: str | None = None  # None: both
    category: str | None = None
    tags: tuple[str, ...] = ()
    hops: int = 1
    history: bool = False
    floor: float = 0.0  # hits scoring under it are left out (the config's recall_floor, for callers that show hits)

    @property
    def filtered(self) -> bool:
        return bool(self.category or self.tags)

    def accepts(self, memory: Memory) -> bool:
        if self.scope and memory.scope != self.scope:
            return False
        if self.category and memory.category != self.category:
            return False
        return all(t in memory.tags for t in self.tags)


def fuse(candidates: Iterable[Candidate], dense: bool) -> list[Candidate]:
    """Each candidate's `combined` score (cosine + LAMBDA · lexical share; the share alone without
    vectors), best first. Arithmetic over the candidates, whatever the store's size."""
    items = list(candidates)
    lam = calibration()["dense" if dense else "lexical_only"]["lambda"]
    for c in items:
        c.combined = lam * c.lexical_share + ((c.dense_score or 0.0) if dense else 0.0)
    return sorted(items, key=lambda c: (-c.combined, c.memory.id))


def priors(memory: Memory, newest: float, feedback: tuple[int, int] | None = None) -> dict[str, float]:
    """What is added to a memory's `combined` score besides the query (0 for a memory without any)."""
    result = {}
    age_days = max(0.0, (newest - memory.created_at.timestamp()) / 86400)
    result["recency"] = RECENCY_WEIGHT * math.pow(0.5, age_days / RECENCY_HALF_LIFE_DAYS)
    if memory.confidence is not None:
        result["confidence"] = CONFIDENCE_WEIGHT * (memory.confidence - 0.5)
    if feedback:
        useful, wrong = feedback
        result["feedback"] = max(-FEEDBACK_MAX, min(FEEDBACK_MAX, FEEDBACK_WEIGHT * (useful - 2 * wrong)))
    return result


def rank(
    candidates: list[Candidate], graph: MemoryGraph, query: Query, use_priors: bool = True,
    feedback: dict[str, tuple[int, int]] | None = None, dense: bool = True,
) -> tuple[list[Hit], int]:
    """Resolve candidates to heads, add priors, score relevance, filter, expand neighbours, cut to k, then
    to the floor.

    A memory's place (`position`) is counted over every memory the candidates stand for, before the
    query's filters, so a filter never changes a score. Returns the hits and how many of the top k
    scored under `query.floor`.
    """
    newest = graph.newest_timestamp
    feedback = feedback or {}
    found: dict[str, Candidate] = {}  # each memory the candidates stand for, and its best candidate
    matched: dict[str, list[str]] = {}
    for c in candidates:
        for target_id in [c.memory.id] if query.history else graph.head_of(c.memory.id):
            if not query.history and graph.memories[target_id].retracted:
                continue
            known = found.get(target_id)
            if known is None or c.combined > known.combined:
                found[target_id] = c
            if c.memory.id != target_id and c.memory.id not in matched.setdefault(target_id, []):
                matched[target_id].append(c.memory.id)
    scored = []
    for target_id, c in found.items():
        nudges = priors(graph.memories[target_id], newest, feedback.get(target_id)) if use_priors else {}
        scored.append((c.combined + sum(nudges.values()), target_id, c, nudges))
    scored.sort(key=lambda item: (-item[0], item[1]))
    a, b, slope = calibration()["dense" if dense else "lexical_only"]["weights"]
    best: dict[str, Hit] = {}
    for position, (combined, target_id, c, nudges) in enumerate(scored, start=1):
        target = graph.memories[target_id]
        if not query.accepts(target):
            continue
        relevance = sigmoid(a + b * combined + slope * math.log(position))
        best[target_id] = Hit(
            memory=target, score=relevance, graph=graph, dense_rank=c.dense_rank, dense_score=c.dense_score,
            lexical_rank=c.lexical_rank, lexical_score=c.lexical_score, lexical_share=c.lexical_share,
            combined=combined, position=position, fused=relevance, priors=nudges, surroundings=c.surroundings,
            matched=matched.get(target_id, []),
        )
    ranked = sorted(best.values(), key=lambda h: (-h.score, h.id))[: query.k]

    # Neighbours over typed edges: a memory linked to a strong hit is pulled up to
    # HOP_DECAY per hop of that hit's score, when that beats its own score.
    if query.hops > 0:
        for hit in list(ranked):
            for other_id, path in graph.neighbours(hit.id, query.hops, RELATIONSHIPS).items():
                other = graph.memories[other_id]
                if not graph.is_head(other_id) or other.retracted or not query.accepts(other):
                    continue
                score = hit.score * HOP_DECAY ** len(path)
                current = best.get(other_id)
                if current is None:
                    current = best[other_id] = Hit(memory=other, score=0.0, graph=graph)
                if score > current.score:
                    current.score, current.via = score, path
        ranked = sorted(best.values(), key=lambda h: (-h.score, h.id))[: query.k]

    top = ranked
    ranked = [h for h in top if h.score >= query.floor]

    # Unresolved contradictions are never dropped: the other side sits right after the hit.
    pairs = graph.conflicts
    if pairs:
        shown = {h.id for h in ranked}
        result: list[Hit] = []
        for hit in ranked:
            result.append(hit)
            hit.conflicts = list(pairs.get(hit.id, []))
            for other_id in hit.conflicts:
                if other_id not in shown and query.accepts(graph.memories[other_id]):
                    shown.add(other_id)
                    # Keep what is known of the other side as a match of its own.
                    other = best.get(other_id) or Hit(memory=graph.memories[other_id], score=0.0, graph=graph)
                    other.via = graph.neighbours(hit.id, 1, ["contradicts"]).get(other_id, [])
                    other.conflicts = list(pairs.get(other_id, []))
                    result.append(other)
        ranked = result
    shown_ids = {h.id for h in ranked}
    return ranked, sum(1 for h in top if h.id not in shown_ids)
