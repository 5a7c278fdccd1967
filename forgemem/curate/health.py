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
