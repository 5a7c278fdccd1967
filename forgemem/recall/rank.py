"""Hybrid recall: lexical + dense candidates, fused, resolved to heads, expanded over edges.

    query ─┬─ FTS5 BM25 (porter stems, stopwords dropped) ── top N per store ─┐
           └─ all-MiniLM-L6-v2 vector ── FAISS inner product ── top N ───────┤
                                                                            ▼
      union of candidates; each leg min-max normalised over the union, a candidate
      missing from the dense list gets its exact cosine, one missing from the
      lexical list scores 0;  fused = ALPHA * lexical + (1 - ALPHA) * dense
                                                                            ▼
      superseded versions resolve to their head (the head keeps the best score);
      retracted heads are dropped; filters (scope, category, tag) apply to heads
                                                                            ▼
      small priors: recency (newest memory in the store = +RECENCY_WEIGHT, decaying
      with a half-life of RECENCY_HALF_LIFE_DAYS) and confidence (± CONFIDENCE_WEIGHT / 2)
                                                                            ▼
      neighbours over refines / relates-to / contradicts edges up to `hops`: a memory
      linked to a top hit scores at least HOP_DECAY per hop of that hit's score; unresolved
      contradictions are always shown next to the hit they contradict
                                                                            ▼
                                 top k, each with its score and why it matched

Why a weighted sum of normalised scores and not reciprocal-rank fusion: on
LoCoMo, RRF of BM25 and MiniLM scores below BM25 alone, because it throws away
how far ahead the best lexical match is; the normalised sum keeps it
(benchmarks/bench_quality.py measures both).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from forgemem.store.graph import MemoryGraph, Step
from forgemem.store.model import RELATIONSHIPS, Memory, format_timestamp

ALPHA = 0.5  # weight of the lexical leg in the fused score
CANDIDATES = 100  # candidates taken from each leg of each store
FILTERED_CANDIDATES = 1000  # when filters may discard most candidates
RECENCY_WEIGHT = 0.02
RECENCY_HALF_LIFE_DAYS = 180.0
CONFIDENCE_WEIGHT = 0.02
HOP_DECAY = 0.5
#: `forgemem feedback`: each "useful" adds this, each "wrong" takes twice it off, within ±FEEDBACK_MAX
FEEDBACK_WEIGHT = 0.03
FEEDBACK_MAX = 0.15


@dataclass
class Hit:
    memory: Memory
    score: float
    graph: MemoryGraph
    dense_rank: int | None = None
    dense_score: float | None = None
    lexical_rank: int | None = None
    lexical_score: float | None = None
    fused: float = 0.0
    priors: dict[str, float] = field(default_factory=dict)
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
                "fused": round(self.fused, 6),
                "priors": {k: round(v, 6) for k, v in self.priors.items()},
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
    fused: float = 0.0


@dataclass
class Query:
    text: str
    k: int = 10
    scope: str | None = None  # None: both
    category: str | None = None
    tags: tuple[str, ...] = ()
    hops: int = 1
    history: bool = False

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
    """Min-max normalise each leg over the candidates, then take the weighted sum."""
    items = list(candidates)
    if not items:
        return items

    def normaliser(values: list[float]):
        lo, hi = min(values), max(values)
        span = hi - lo
        return (lambda v: (v - lo) / span) if span > 1e-12 else (lambda v: 1.0 if hi > 0 else 0.0)

    lexical = [c.lexical_score or 0.0 for c in items]
    norm_lex = normaliser(lexical)
    if dense:
        norm_dense = normaliser([c.dense_score if c.dense_score is not None else 0.0 for c in items])
    for c in items:
        value = norm_lex(c.lexical_score or 0.0)
        if dense:
            value = ALPHA * value + (1 - ALPHA) * norm_dense(c.dense_score or 0.0)
        c.fused = value
    return sorted(items, key=lambda c: (-c.fused, c.memory.id))


def priors(memory: Memory, newest: float, feedback: tuple[int, int] | None = None) -> dict[str, float]:
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
    feedback: dict[str, tuple[int, int]] | None = None,
) -> list[Hit]:
    """Resolve candidates to heads, apply filters and priors, expand neighbours, cut to k."""
    newest = graph.newest_timestamp
    best: dict[str, Hit] = {}
    for c in candidates:
        targets = [c.memory.id] if query.history else graph.head_of(c.memory.id)
        for target_id in targets:
            target = graph.memories[target_id]
            if not query.history and target.retracted:
                continue
            if not query.accepts(target):
                continue
            hit = best.get(target_id)
            if hit is None:
                hit = best[target_id] = Hit(memory=target, score=0.0, graph=graph)
            if c.fused > hit.fused or (hit.dense_rank is None and hit.lexical_rank is None):
                hit.fused = max(hit.fused, c.fused)
                hit.dense_rank, hit.dense_score = c.dense_rank, c.dense_score
                hit.lexical_rank, hit.lexical_score = c.lexical_rank, c.lexical_score
            if c.memory.id != target_id and c.memory.id not in hit.matched:
                hit.matched.append(c.memory.id)
    for hit in best.values():
        hit.priors = priors(hit.memory, newest, (feedback or {}).get(hit.id)) if use_priors else {}
        hit.score = hit.fused + sum(hit.priors.values())
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
    return ranked
