"""JSON views of memories and operations: one shape for `--json`, `/memory` tools and MCP."""

from __future__ import annotations

from typing import Any

from forgemem.store.model import Memory
from forgemem.workspace import Snapshot


def memory_json(snap: Snapshot, memory: Memory) -> dict[str, Any]:
    """A memory as `forgemem show --json` prints it."""
    data = memory.to_dict()
    data["head"] = snap.graph.is_head(memory.id)
    data["superseded_by"] = snap.graph.superseded_by.get(memory.id, [])
    held = snap.graph.held_back.get(memory.id)  # a newer version whose file cannot be read
    data["superseded_by_unreadable"] = str(held) if held else None
    return data


def added_json(memory: Memory, redacted: list[str], existing: bool = False) -> dict[str, Any]:
    """What `add` wrote; `existing`: the same memory had just been written, and nothing new was."""
    return {"id": memory.id, "path": str(memory.path), "version": memory.version, "redacted": redacted,
            "existing": existing}


def linked_json(memory: Memory, relationship: str, other: Memory) -> dict[str, Any]:
    return {"id": memory.id, "relationship": relationship, "target": other.id, "path": str(memory.path)}


def forgotten_json(result: Memory, pointing: list[Memory], purged: bool) -> dict[str, Any]:
    """What `Workspace.forget` returned: the purged memory, or the retraction (which supersedes the target)."""
    if purged:
        return {"id": result.id, "purged": True, "path": str(result.path),
                "still_referenced_by": [m.id for m in pointing]}
    return {"id": result.supersedes[0], "purged": False, "retraction": result.id, "path": str(result.path)}


def conflicts_json(snap: Snapshot) -> dict[str, Any]:
    """Unresolved contradictions (both sides) and forks, as `forgemem conflicts --json` prints them."""
    graph = snap.graph
    return {
        "conflicts": [
            {"a": memory_json(snap, graph.memories[e.source]), "b": memory_json(snap, graph.memories[e.target])}
            for e in graph.contradictions()
            if e.source in graph.memories and e.target in graph.memories
        ],
        "forks": [{"base": base, "heads": heads} for base, heads in graph.forks().items()],
    }
