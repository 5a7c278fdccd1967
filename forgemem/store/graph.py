"""The graph of memories and their typed edges.

Nodes are memory ids; an edge `a -> b` of type `supersedes` means a is a newer
version of b; `refines`, `contradicts` and `relates-to` edges come from a
memory's `related` list. From the graph: heads (memories nothing supersedes),
the history of a chain, forks, dangling edges, supersession cycles, unresolved
contradictions and neighbours within N hops.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from forgemem.store.model import EDGE_TYPES, Memory, short

if TYPE_CHECKING:
    import networkx as nx

SUPERSEDES = "supersedes"
CONTRADICTS = "contradicts"
RELATES_TO = "relates-to"


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    type: str


@dataclass(frozen=True)
class Step:
    """One hop of a path through the graph, as seen from the walker."""

    source: str
    type: str
    target: str
    #: True when the edge points from `target` back to `source` in the files.
    reverse: bool = False

    def describe(self) -> str:
        """`9f7ab1bf <-relates-to- 39acb05f`: short ids, the arrow as the edge points in the files."""
        arrow = f"<-{self.type}-" if self.reverse else f"-{self.type}->"
        return f"{short(self.source)} {arrow} {short(self.target)}"


class MemoryGraph:
    def __init__(self, memories: Iterable[Memory], held_back: Mapping[str, Path] | None = None):
        self.memories: dict[str, Memory] = {}
        for memory in memories:
            self.memories.setdefault(memory.id, memory)
        #: old id -> the file that supersedes it but cannot be read (a git conflict in the newest version, say):
        #: that old version is no head, so it does not become current again while the newer one is broken
        self.held_back: Mapping[str, Path] = dict(held_back or {})
        self.dangling: list[Edge] = []
        #: every edge whose target exists
        self.edges: list[Edge] = []
        #: old id -> ids that supersede it
        self.superseded_by: dict[str, list[str]] = {}
        self._out: dict[str, list[Edge]] = {}
        self._in: dict[str, list[Edge]] = {}
        for memory in self.memories.values():
            for target in memory.supersedes:
                self._add(Edge(memory.id, target, SUPERSEDES))
            for relation in memory.related:
                self._add(Edge(memory.id, relation.id, relation.relationship))

    def _add(self, edge: Edge) -> None:
        if edge.target not in self.memories:
            self.dangling.append(edge)
            return
        self.edges.append(edge)
        self._out.setdefault(edge.source, []).append(edge)
        self._in.setdefault(edge.target, []).append(edge)
        if edge.type == SUPERSEDES:
            self.superseded_by.setdefault(edge.target, []).append(edge.source)

    @cached_property
    def graph(self) -> "nx.MultiDiGraph":
        """The same graph as a networkx MultiDiGraph (edge key = edge type)."""
        import networkx as nx

        graph = nx.MultiDiGraph()
        graph.add_nodes_from(self.memories)
        graph.add_edges_from((e.source, e.target, e.type) for e in self.edges)
        return graph

    def __contains__(self, memory_id: str) -> bool:
        return memory_id in self.memories

    def __len__(self) -> int:
        return len(self.memories)

    # ------------------------------------------------------------ versions

    def is_head(self, memory_id: str) -> bool:
        return memory_id not in self.superseded_by and memory_id not in self.held_back

    def heads(self) -> list[Memory]:
        return [m for m in self.memories.values() if self.is_head(m.id)]

    def head_of(self, memory_id: str) -> list[str]:
        """The head(s) a memory resolves to: one, or several after a fork; none when the newest version is a file
        that cannot be read (`held_back`)."""
        found: list[str] = []
        seen = {memory_id}
        queue = deque([memory_id])
        while queue:
            current = queue.popleft()
            newer = self.superseded_by.get(current)
            if not newer:
                if current not in self.held_back:
                    found.append(current)
                continue
            for candidate in newer:
                if candidate not in seen:
                    seen.add(candidate)
                    queue.append(candidate)
        return sorted(found)

    def newer_versions(self, memory_id: str) -> str:
        """What supersedes a memory, in words: the ids, and a file that cannot be read (`held_back`)."""
        newer = list(self.superseded_by.get(memory_id, []))
        if memory_id in self.held_back:
            newer.append(f"{self.held_back[memory_id]}, which cannot be read (mend or delete it first: "
                         "`forgemem validate` says what is wrong)")
        return ", ".join(newer)

    def predecessors(self, memory_id: str) -> list[str]:
        """Ids this memory supersedes (that exist)."""
        return [t for t in self.memories[memory_id].supersedes if t in self.memories]

    def history(self, memory_id: str) -> list[Memory]:
        """Every version in the memory's chain, oldest first (merges included)."""
        chain: set[str] = set()
        queue = deque(self.head_of(memory_id))
        chain.update(queue)
        while queue:
            current = queue.popleft()
            for older in self.predecessors(current):
                if older not in chain:
                    chain.add(older)
                    queue.append(older)
        chain.add(memory_id)
        return sorted(
            (self.memories[i] for i in chain),
            key=lambda m: (m.version, m.created_at, m.id),
        )

    def chains(self) -> list[list[Memory]]:
        """Every history with more than one version, one per head (forks: per head)."""
        result = []
        for head in self.heads():
            if self.memories[head.id].supersedes:
                result.append(self.history(head.id))
        return result

    # ------------------------------------------------------------ problems

    def forks(self) -> dict[str, list[str]]:
        """Old id -> the heads it now splits into, where that is more than one."""
        result = {}
        for old, newer in self.superseded_by.items():
            if len(newer) > 1:
                heads = self.head_of(old)
                if len(heads) > 1:
                    result[old] = heads
        return result

    def cycles(self) -> list[list[str]]:
        """Groups of memories that supersede each other in a loop."""
        # Peel off every memory with no newer or no older version: none of them can
        # be on a loop, and in a healthy store that leaves nothing for networkx to do.
        newer = {old: set(new) for old, new in self.superseded_by.items()}
        older: dict[str, set[str]] = {}
        for old, new in newer.items():
            for n in new:
                older.setdefault(n, set()).add(old)
        queue = deque(set(newer) ^ set(older))
        while queue:
            node = queue.popleft()
            for n in newer.pop(node, ()):
                if node in older.get(n, ()):
                    older[n].discard(node)
                    if not older[n]:
                        del older[n]
                        queue.append(n)
            for o in older.pop(node, ()):
                if node in newer.get(o, ()):
                    newer[o].discard(node)
                    if not newer[o]:
                        del newer[o]
                        queue.append(o)
        if not newer:
            return []
        import networkx as nx

        sub = nx.DiGraph()
        for old, new in newer.items():
            for n in new:
                if n in older:
                    sub.add_edge(n, old)
        loops = [sorted(c) for c in nx.strongly_connected_components(sub) if len(c) > 1]
        loops += [[n] for n in sub.nodes if sub.has_edge(n, n)]
        return sorted(loops)

    @cached_property
    def newest_timestamp(self) -> float:
        """When the newest memory was written (POSIX seconds); 0 for an empty graph."""
        return max((m.created_at.timestamp() for m in self.memories.values()), default=0.0)

    @cached_property
    def conflicts(self) -> dict[str, list[str]]:
        """Memory id -> the heads it conflicts with: an unresolved contradiction, or the other
        head(s) of a fork (two versions superseding the same memory, e.g. from two branches)."""
        pairs: dict[str, set[str]] = {}
        for edge in self.contradictions():
            pairs.setdefault(edge.source, set()).add(edge.target)
            pairs.setdefault(edge.target, set()).add(edge.source)
        for heads in self.forks().values():
            for head in heads:
                pairs.setdefault(head, set()).update(h for h in heads if h != head)
        return {k: sorted(v) for k, v in pairs.items()}

    def contradictions(self, unresolved_only: bool = True) -> list[Edge]:
        """`contradicts` edges; unresolved ones join two heads (no newer version settled it)."""
        return [
            e
            for e in self.edges
            if e.type == CONTRADICTS
            and (not unresolved_only or (self.is_head(e.source) and self.is_head(e.target)))
        ]

    # ------------------------------------------------------------ neighbours

    def neighbours(
        self, memory_id: str, hops: int = 1, types: Iterable[str] = EDGE_TYPES
    ) -> dict[str, list[Step]]:
        """Memories within `hops` edges of the given types, each with its path."""
        allowed = set(types)
        paths: dict[str, list[Step]] = {memory_id: []}
        frontier = [memory_id]
        for _ in range(hops):
            next_frontier = []
            for current in frontier:
                for step in self._steps(current, allowed):
                    if step.target not in paths:
                        paths[step.target] = paths[current] + [step]
                        next_frontier.append(step.target)
            frontier = next_frontier
        del paths[memory_id]
        return paths

    def _steps(self, node: str, allowed: set[str]) -> list[Step]:
        steps = [Step(node, e.type, e.target) for e in self._out.get(node, ()) if e.type in allowed]
        steps += [
            Step(node, e.type, e.source, reverse=True) for e in self._in.get(node, ()) if e.type in allowed
        ]
        return steps

    def to_json(self, ids: Iterable[str] | None = None) -> dict:
        nodes = list(ids) if ids is not None else list(self.memories)
        keep = set(nodes)
        return {
            "nodes": [
                {
                    "id": i,
                    "scope": self.memories[i].scope,
                    "category": self.memories[i].category,
                    "version": self.memories[i].version,
                    "head": self.is_head(i),
                    "status": self.memories[i].status,
                    "current": self.is_head(i) and self.memories[i].status is None,
                    "title": self.memories[i].title,
                }
                for i in nodes
            ],
            "edges": [
                {"source": e.source, "target": e.target, "type": e.type}
                for e in self.edges
                if e.source in keep and e.target in keep
            ],
        }
