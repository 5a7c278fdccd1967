"""Proposed memories (captured with `capture_review: true`): listed, accepted, rejected.

The user store is not in git, so its proposed memories never show in a diff: `personal_proposals` lists
them for the plain `forgemem review`; `accept` and `reject` work the same in both stores.
"""

from __future__ import annotations

from forgemem.errors import UsageError
from forgemem.store.model import PROPOSED, Memory


def personal_proposals(workspace) -> list[Memory]:
    """Proposed memories in the user store, oldest first (the user store is not in git)."""
    store = workspace.stores.get("user")
    if store is None or not store.exists():
        return []
    folder = store.memory_dir
    found = [m for m in workspace.load().memories
             if m.status == PROPOSED and m.path is not None and folder in m.path.parents]
    return sorted(found, key=lambda m: (m.created_at, m.id))


def accept(workspace, refs: list[str]) -> list[Memory]:
    """Proposed memories become ordinary ones (the `status: proposed` line goes)."""
    from forgemem.store.model import utc_now

    snap = workspace.load()
    accepted = []
    for ref in refs:
        memory = snap.resolve(ref)
        if memory.status != PROPOSED:
            raise UsageError(f"{memory.id} is not a proposed memory")
        memory.extra = {k: v for k, v in memory.extra.items() if k != "status"}
        memory.updated_at = utc_now()
        workspace.replace(memory)
        accepted.append(memory)
    return accepted


def reject(workspace, refs: list[str]) -> list[Memory]:
    """Proposed memories are deleted (they were never accepted; git still has them if committed)."""
    snap = workspace.load()
    memories = [snap.resolve(ref) for ref in refs]
    for memory in memories:
        if memory.status != PROPOSED:
            raise UsageError(f"{memory.id} is not a proposed memory; use `forgemem forget` to retract it")
        pointing = [m.id for m in snap.pointing_at(memory.id)]
        if pointing:
            raise UsageError(f"{memory.id} is referenced by {', '.join(pointing)}; reject those first")
    for memory in memories:
        workspace.remove(memory)
    from forgemem.capture.announce import forget

    forget(workspace, [m.id for m in memories])  # a rejected memory is not announced any more
    return memories
