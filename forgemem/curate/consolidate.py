"""`forgemem consolidate`: merge clusters of near-duplicate or tightly related small memories.

Candidates are current memories (heads, not retracted, not proposed) of one
scope and category — nothing is merged across scopes or categories. Two of
them belong together when

- they are near-duplicates: cosine similarity ≥ DUPLICATE_AT (all-MiniLM-L6-v2), or
- one `refines` the other, both are small (≤ SMALL_CHARS characters of text)
  and their similarity is ≥ RELATED_AT;

clusters are the connected groups, at most MAX_CLUSTER memories. A cluster
with a `contradicts` edge inside is never merged: it is reported as a
conflict to resolve (`forgemem resolve`), not settled here.

The merged text starts with the longest memory of the cluster and adds each
sentence of the others that says something new (a sentence whose similarity
to every sentence kept so far is below SENTENCE_SAME_AT). The new memory
supersedes every source (a merge: version = highest + 1), keeps their tags
and the edges they had to memories outside the cluster.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from forgemem.store.model import Memory, Relation, short
from forgemem.workspace import Snapshot, Workspace

DUPLICATE_AT = 0.85
RELATED_AT = 0.60
SMALL_CHARS = 400
MAX_CLUSTER = 5
SENTENCE_SAME_AT = 0.90
_SENTENCES = re.compile(r"(?<=[.!?;])\s+(?=[A-Z`(\"'])")


@dataclass
class Cluster:
    memories: list[Memory]
    reasons: list[str]  # why each pair joined
    text: str = ""
    blocked_by: list[tuple[str, str]] = field(default_factory=list)  # contradictions inside

    @property
    def scope(self) -> str:
        return self.memories[0].scope

    @property
    def category(self) -> str:
        return self.memories[0].category

    def to_dict(self) -> dict:
        return {
            "scope": self.scope,
            "category": self.category,
            "sources": [{"id": m.id, "content": m.body} for m in self.memories],
            "reasons": self.reasons,
            "merged": self.text if not self.blocked_by else None,
            "contradictions": [list(p) for p in self.blocked_by],
        }


def candidates(snap: Snapshot) -> list[Memory]:
    return [m for m in snap.heads() if m.status is None]


def vectors_of(memories: list[Memory], embedder, stored: dict[str, bytes] | None = None):
    """Unit vectors of the memories' indexed texts (`index.database.embed_text`): from the cache where it has
    them, the rest encoded now."""
    import numpy as np

    from forgemem.index.database import embed_text

    stored = stored or {}
    missing = [m for m in memories if m.id not in stored]
    fresh = dict(zip((m.id for m in missing), embedder.encode([embed_text(m) for m in missing]), strict=True)) \
        if missing else {}
    rows = [np.frombuffer(stored[m.id], dtype=np.float32) if m.id in stored else fresh[m.id] for m in memories]
    return np.asarray(rows, dtype=np.float32)


def find_clusters(snap: Snapshot, embedder, stored: dict[str, bytes] | None = None) -> list[Cluster]:

    groups: dict[tuple[str, str], list[Memory]] = {}
    for memory in candidates(snap):
        groups.setdefault((memory.scope, memory.category), []).append(memory)
    contradicting = {frozenset((e.source, e.target)) for e in snap.graph.contradictions()}
    clusters: list[Cluster] = []
    for members in groups.values():
        if len(members) < 2:
            continue
        vectors = vectors_of(members, embedder, stored)
        similarity = vectors @ vectors.T
        index = {m.id: i for i, m in enumerate(members)}
        links: dict[int, set[int]] = {i: set() for i in range(len(members))}
        reasons: dict[frozenset, str] = {}
        for i in range(len(members)):
            for j in range(i + 1, len(members)):
                score = float(similarity[i, j])
                if score >= DUPLICATE_AT:
                    reasons[frozenset((i, j))] = f"near-duplicates ({score:.2f})"
        for memory in members:
            for relation in memory.related:
                j = index.get(relation.id)
                i = index[memory.id]
                if j is None or relation.relationship != "refines":
                    continue
                score = float(similarity[i, j])
                small = len(memory.body) <= SMALL_CHARS and len(members[j].body) <= SMALL_CHARS
                if small and score >= RELATED_AT:
                    reasons.setdefault(frozenset((i, j)), f"one refines the other ({score:.2f})")
        for pair in reasons:
            i, j = tuple(pair)
            links[i].add(j)
            links[j].add(i)
        seen: set[int] = set()
        for start in range(len(members)):
            if start in seen or not links[start]:
                continue
            component, stack = [], [start]
            while stack:
                node = stack.pop()
                if node in seen:
                    continue
                seen.add(node)
                component.append(node)
                stack.extend(links[node] - seen)
            component.sort(key=lambda n: (-len(members[n].body), members[n].id))
            component = component[:MAX_CLUSTER]
            cluster = Cluster(
                [members[n] for n in component],
                [f"{short(members[a].id)} + {short(members[b].id)}: {why}"
                 for pair, why in sorted(reasons.items(), key=lambda kv: sorted(kv[0]))
                 for a, b in [sorted(pair)] if a in component and b in component],
            )
            cluster.blocked_by = sorted(
                tuple(sorted((a.id, b.id))) for a in cluster.memories for b in cluster.memories
                if a.id < b.id and frozenset((a.id, b.id)) in contradicting
            )
            if not cluster.blocked_by:
                cluster.text = merged_text(cluster.memories, embedder)
            clusters.append(cluster)
    return clusters


def merged_text(memories: list[Memory], embedder) -> str:
    """The longest memory, then every sentence of the others that adds something."""
    import numpy as np

    kept = [s for s in _SENTENCES.split(memories[0].body.strip()) if s]
    kept_vectors = list(embedder.encode(kept))
    added: list[str] = []
    for other in memories[1:]:
        sentences = [s for s in _SENTENCES.split(other.body.strip()) if s]
        if not sentences:
            continue
        vectors = embedder.encode(sentences)
        for sentence, vector in zip(sentences, vectors, strict=True):
            if max(float(np.dot(vector, v)) for v in kept_vectors) < SENTENCE_SAME_AT:
                added.append(sentence)
                kept_vectors.append(vector)
    return " ".join([memories[0].body.strip(), *added])


def apply(workspace: Workspace, cluster: Cluster, snap: Snapshot) -> Memory:
    """Write the merged memory: it supersedes every source and keeps their outside edges and tags."""
    ids = {m.id for m in cluster.memories}
    tags: list[str] = []
    related: dict[tuple[str, str], Relation] = {}
    for memory in cluster.memories:
        tags += [t for t in memory.tags if t not in tags]
        for relation in memory.related:
            if relation.id not in ids:
                related[(relation.id, relation.relationship)] = relation
    memory, _ = workspace.add(
        cluster.text,
        scope=cluster.scope,
        category=cluster.category,
        tags=tags,
        supersedes=[m.id for m in cluster.memories],
        related=[(r.id, r.relationship) for r in related.values()],
        snapshot=snap,
    )
    return memory
