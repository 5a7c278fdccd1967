"""The health view of `forgemem stats`: what may need a person's attention.

- never recalled: current memories no recall has returned (access log in the cache);
- marked wrong: memories `forgemem feedback ID wrong` was said of;
- low confidence: `confidence` below LOW_CONFIDENCE;
- old: not updated in OLD_DAYS days;
- stale: naming paths or symbols that moved on (see `forgemem.stale`);
- conflicts and chains, and growth over time from the repository's git history
  (memory files added per month).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from forgemem.workspace import Snapshot, Workspace

LOW_CONFIDENCE = 0.5
OLD_DAYS = 365


def growth(root: Path, memory_path: str = ".forge/memory") -> list[tuple[str, int]]:
    """(month, memory files added that month) from git history, oldest first."""
    from forgemem.git.review import git_argv

    done = subprocess.run(
        git_argv("log", "--diff-filter=A", "--name-only", "--format=@%ad", "--date=format:%Y-%m", "--",
                 memory_path),
        cwd=root, capture_output=True, text=True,
    )
    months: dict[str, int] = {}
    month = None
    for line in done.stdout.splitlines():
        if line.startswith("@"):
            month = line[1:]
        elif line.endswith(".md") and month:
            months[month] = months.get(month, 0) + 1
    return sorted(months.items())


def health(workspace: Workspace, snap: Snapshot, repo_root: Path | None) -> dict:
    access: dict[str, dict] = {}
    for usage in workspace.usage().values():
        access.update(usage.access_counts())
    heads = snap.heads()
    now = time.time()
    never = [m.id for m in heads if not access.get(m.id, {}).get("recalled")]
    wrong = [m.id for m in heads if access.get(m.id, {}).get("wrong")]
    low = [m.id for m in heads if m.confidence is not None and m.confidence < LOW_CONFIDENCE]
    old = [m.id for m in heads if now - m.updated_at.timestamp() > OLD_DAYS * 86400]
    stale: list[str] = []
    history: list[tuple[str, int]] = []
    if repo_root is not None:
        from forgemem.curate.stale import find_stale

        stale = sorted({f.memory.id for f in find_stale(heads, repo_root)})
        history = growth(repo_root)
    recalled = sorted(
        ((m.id, int(access.get(m.id, {}).get("recalled", 0))) for m in heads), key=lambda p: -p[1]
    )
    return {
        "never_recalled": never,
        "marked_wrong": wrong,
        "low_confidence": low,
        "old": old,
        "stale": stale,
        "most_recalled": [p for p in recalled[:5] if p[1]],
        "conflicts": len(snap.graph.contradictions()) + len(snap.graph.forks()),
        "chains": len(snap.graph.chains()),
        "growth": [{"month": m, "added": n} for m, n in history],
    }


def check_caches(engine, repair: bool = True, progress=None) -> dict:
    """Every cache and model file of an engine's workspace, as `forgemem doctor` reports it (the CLI only
    prints this): per store, the cache's files (`index.repair.check_store_cache`) and whether the cache
    agrees with the memory files (`StoreIndex.check`; a cache that disagrees is rebuilt); the exported
    models (`index.modelcache.check`; a broken one is exported again, and the vectors it made rebuilt);
    what was repaired on the way, and what could not be."""
    from forgemem.index import repair as repairs

    with repairs.quietly():
        return _check_caches(engine, repair, progress)


def _check_caches(engine, repair: bool, progress) -> dict:
    from forgemem.index import repair as repairs
    from forgemem.index.cache import StoreIndex
    from forgemem.index.modelcache import check as check_models

    model = check_models(engine.workspace.config.embedding_model, repair)
    reexported = any("exported again" in line for line in model["repaired"])
    # each cache's files as they are, before opening the caches (which repairs some on the way)
    checked = {scope: repairs.check_store_cache(StoreIndex(store), repair)
               for scope, store in engine.workspace.stores.items() if store.exists()}
    said = len(repairs.said)
    stores: dict = {}
    for scope, index in engine.indexes().items():
        files = checked.get(scope) or repairs.check_store_cache(index, repair)
        try:
            index.refresh(engine.embedder)
            found = index.check()
        except Exception as exc:  # noqa: BLE001 - a broken cache of any kind is what doctor is for
            found = [f"the cache cannot be read ({type(exc).__name__}: {exc})"]
        rebuild = repair and (bool(found) or reexported)
        fixed = False
        if rebuild:
            index.destroy()
            try:
                index.refresh(engine.embedder, progress=progress)
                fixed = not index.check()
            except Exception as exc:  # noqa: BLE001
                files["not_repaired"].append(f"the cache could not be rebuilt ({type(exc).__name__}: {exc})")
        stores[scope] = {"disagreements": found, "rebuilt": rebuild, "ok_after": fixed or not found,
                         "cache_files": files}
    if stores:
        engine.refresh()  # the snapshot of the rebuilt caches
    reported = {line for s in stores.values() for line in s["cache_files"]["repaired"]}
    return {"stores": stores, "model": model, "said": [m for m in repairs.said[said:] if m not in reported],
            "ok": model["ok"] and all(s["ok_after"] and s["cache_files"]["ok"] for s in stores.values())}
