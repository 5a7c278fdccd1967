"""Resolving a fork or a conflict: one new version that supersedes every head involved.

A fork (two branches each superseded the same memory, then merged) leaves two
heads of one chain; a conflict is a `contradicts` edge between two heads.
Either way `forgemem resolve ID` writes a memory whose `supersedes` lists all
those heads (a merge, version = highest + 1), so recall sees one head again.
It keeps the heads' tags and their edges to other memories (`Workspace.add` carries them).
"""

from __future__ import annotations

from forgemem.errors import UsageError
from forgemem.store.model import Memory
from forgemem.workspace import Snapshot, Workspace


def heads_to_resolve(snap: Snapshot, ref: str) -> list[Memory]:
    """The heads a resolution of `ref` must supersede (a fork's heads, or both sides of a conflict)."""
    memory = snap.resolve(ref)
    graph = snap.graph
    heads = graph.head_of(memory.id)
    if len(heads) > 1:
        return [graph.memories[h] for h in heads]
    head = heads[0] if heads else memory.id
    others = graph.conflicts.get(head, [])
    if others:
        return [graph.memories[head], *(graph.memories[o] for o in others)]
    raise UsageError(f"{memory.id} has no fork and no unresolved conflict to resolve")


def draft_text(heads: list[Memory]) -> str:
    """What the editor opens with: each head's text, and how to finish."""
    lines = ["# Write the resolved memory below; lines starting with # are dropped.", "#"]
    for memory in heads:
        lines.append(f"# {memory.id} (v{memory.version}, {memory.scope}/{memory.category}):")
        lines += [f"#   {line}" for line in memory.body.splitlines()]
        lines.append("#")
    lines.append("")
    lines.append(heads[0].body)
    return "\n".join(lines) + "\n"


def text_from_draft(draft: str) -> str:
    return "\n".join(line for line in draft.splitlines() if not line.startswith("#")).strip()


def resolve(workspace: Workspace, ref: str, text: str) -> tuple[Memory, list[Memory]]:
    """Write the resolving version; returns it and the heads it supersedes."""
    snap = workspace.load()
    heads = heads_to_resolve(snap, ref)
    scopes = {m.scope for m in heads}
    if len(scopes) > 1:
        raise UsageError("the heads are in different scopes; supersede each within its own scope")
    if not text.strip():
        raise UsageError("the resolved text is empty; nothing was written")
    memory, _ = workspace.add(text, supersedes=[m.id for m in heads], snapshot=snap)
    return memory, heads
