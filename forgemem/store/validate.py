"""Checks that span files: dangling edges, cycles, forks and version numbers.

Problems inside one file (bad YAML, keys, types) are found by `memfile`;
duplicate ids by `workspace` while it gathers the stores.
"""

from __future__ import annotations

from forgemem.errors import Problem
from forgemem.store.graph import RELATES_TO, SUPERSEDES, MemoryGraph


def graph_problems(graph: MemoryGraph) -> list[Problem]:
    problems: list[Problem] = []
    memories = graph.memories

    def at(memory_id: str, reason: str) -> None:
        problems.append(Problem(memories[memory_id].path, reason, None, memory_id))

    for edge in graph.dangling:
        if edge.type == SUPERSEDES:
            at(edge.source, f"supersedes {edge.target}, which does not exist")
        elif edge.type != RELATES_TO:
            at(edge.source, f"is related ({edge.type}) to {edge.target}, which does not exist")
        # a relates-to link may point into the other store (capture links a personal rule to the repository's
        # on the same subject): from outside that repository, or in a teammate's clone, its target is not loaded

    in_cycle: set[str] = set()
    for loop in graph.cycles():
        in_cycle.update(loop)
        members = " -> ".join(loop + [loop[0]]) if len(loop) > 1 else f"{loop[0]} -> {loop[0]}"
        for memory_id in loop:
            at(memory_id, f"supersession cycle: {members}")

    for old, heads in sorted(graph.forks().items()):
        at(
            heads[0],
            f"fork: {' and '.join(heads)} are all newest versions of {old}; "
            "write one memory that supersedes them to merge them",
        )

    for memory in memories.values():
        predecessors = graph.predecessors(memory.id)
        if len(predecessors) != len(memory.supersedes) or memory.id in in_cycle:
            continue  # dangling or cyclic: already reported, no version can be right
        if predecessors:
            expected = max(memories[p].version for p in predecessors) + 1
            basis = "its predecessor's version + 1" if len(predecessors) == 1 else (
                "the highest predecessor version + 1"
            )
        else:
            expected, basis = 1, "a memory that supersedes nothing starts at 1"
        if memory.version != expected:
            at(memory.id, f"version is {memory.version}, expected {expected} ({basis})")
    return problems
