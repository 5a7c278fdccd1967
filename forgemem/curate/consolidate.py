"""`forgemem consolidate`: merge clusters of near-duplicate or tightly related small memories.

Candidates are current memories (heads, not retracted, not proposed) of one
scope and category — nothing is merged across scopes or categories. Two of
them belong together when

- they are near-duplicates: cosine similarity ≥ DUPLICATE_AT (all-MiniLM-L6-v2), or
- one `refines` the other, both are small (≤ SMALL_CHARS characters of text)
  and their similarity is ≥ RELATED_AT;

clusters are the connected groups, at most MAX_CLUSTER memories. A cluster
with a `contradicts` edge inside is never merged: it is reported as a
conflict to resolve (`forgemem resolve`), not settled here. Near-duplicates
that say opposite things are never joined (`held_apart`): "Do not deploy on
Fridays." and "Do deploy on Fridays." are close in meaning-space but one
negates the other, and "retry 3 times" / "retry 5 times" differ in a value;
such pairs are listed for a person to settle.

The merged text starts with the longest memory of the cluster and adds each
sentence of the others that says something new: a sentence is left out only
when it is close to one kept (similarity ≥ SENTENCE_SAME_AT) *and* every
word of it that carries content is already in the merged text, so a merge
never drops a value, a name or a negation. The new memory supersedes every
source (a merge: version = highest + 1), keeps their tags and the edges they
had to memories outside the cluster. `plan` proposes; `apply_plan` writes.
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


#: words that turn a statement into its opposite
_NEGATION = re.compile(r"\b(?:not|never|no|nor|none|nothing|without|avoid|stop|cannot)\b|n't\b", re.I)
_TOKEN = re.compile(r"[\w.+/@#-]*\w")
#: words that carry no value of their own (a swap of these is a paraphrase, not a different value)
_FUNCTION_WORDS = frozenset("""
a an the this that these those it its we our you your i my me they them he she is are be been being was were
do does did to of in on at by for with from into as and or but so if then than when while which who whom
please always also just only all any each every some more most very really should must can could would will
shall may might use using used have has had get gets got make makes made before after prior instead rather
here there now new one ones way ways thing things about over under again still even
""".split())


def _content(text: str) -> list[str]:
    return [w for w in _TOKEN.findall(text.lower()) if w not in _FUNCTION_WORDS and not _NEGATION.fullmatch(w)]


def _same_word(a: str, b: str) -> bool:
    """One word in two forms ("commit" / "committing"), not two values."""
    return a == b or (len(a) >= 4 and len(b) >= 4 and a[:4] == b[:4] and not any(c.isdigit() for c in a + b))


def held_apart(a: str, b: str) -> str | None:
    """Why two near-duplicate texts must not be merged (they say different things), or None."""
    from difflib import SequenceMatcher

    if len(_NEGATION.findall(a)) != len(_NEGATION.findall(b)):
        return "one negates what the other says"
    wa, wb = _content(a), _content(b)
    for op, i1, i2, j1, j2 in SequenceMatcher(a=wa, b=wb, autojunk=False).get_opcodes():
        left, right = wa[i1:i2], wb[j1:j2]
        if op == "replace" and not any(_same_word(x, y) for x in left for y in right):
            return f"different values: {' '.join(left)} / {' '.join(right)}"
        if op in ("delete", "insert") and any(any(c.isdigit() for c in w) for w in left + right):
            return f"different values: {' '.join(left + right)} in one only"
    return None


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


@dataclass
class Plan:
    """What `forgemem consolidate` proposes: clusters to merge, and near-duplicates kept apart (and why)."""

    clusters: list[Cluster]
    held_apart: list[tuple[Memory, Memory, str]] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"clusters": [c.to_dict() for c in self.clusters],
                "held_apart": [{"ids": [a.id, b.id], "contents": [a.body, b.body], "reason": why}
                               for a, b, why in self.held_apart]}


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
    return plan(snap, embedder, stored).clusters


def plan(snap: Snapshot, embedder, stored: dict[str, bytes] | None = None) -> Plan:
    """The clusters to merge in `snap` (vectors from `stored` where the cache has them)."""
    groups: dict[tuple[str, str], list[Memory]] = {}
    for memory in candidates(snap):
        groups.setdefault((memory.scope, memory.category), []).append(memory)
    contradicting = {frozenset((e.source, e.target)) for e in snap.graph.contradictions()}
    clusters: list[Cluster] = []
    apart: list[tuple[Memory, Memory, str]] = []
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
                    why = held_apart(members[i].body, members[j].body)
                    if why is not None:
                        apart.append((members[i], members[j], why))
                        continue
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
    return Plan(clusters, apart)


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
            said = set(_content(" ".join([memories[0].body, *added])))
            close = max(float(np.dot(vector, v)) for v in kept_vectors) >= SENTENCE_SAME_AT
            if not (close and set(_content(sentence)) <= said):
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


def apply_plan(workspace: Workspace, proposed: Plan, snap: Snapshot) -> list[Memory]:
    """Write every cluster of `proposed` that has no contradiction inside; the new memories."""
    written = []
    for cluster in proposed.clusters:
        if not cluster.blocked_by:
            written.append(apply(workspace, cluster, snap))
            snap = workspace.load()
    return written
