"""Reliability figures for the closing note: the kill loops of tests/reliability/test_kills.py, at larger counts.

    python benchmarks/reliability_report.py [SCALE] [SEED]      (default: 3 14)

Runs each loop (add and add --supersedes, link, observe --once, index --rebuild, serve) with SCALE times
the suite's kills, on a real store in a temporary git repository, SIGKILLing real `forgemem` processes
after random delays; then checks what the suite checks and prints one line per loop and a total:
operations, kills, memories or edges lost, forks, stuck commands, temporary files left. Exit 1 when any
figure but operations and kills is not 0.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.reliability.killing import Project, Tally  # noqa: E402
from tests.reliability.test_kills import KILLS  # noqa: E402


def main() -> int:
    scale = float(sys.argv[1]) if len(sys.argv) > 1 else 3
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 14
    total = Tally()
    with tempfile.TemporaryDirectory(prefix="forgemem-reliability-") as tmp:
        os.environ.setdefault("FORGEMEM_MODEL_CACHE", str(Path(tmp) / "models"))
        for name, kills in KILLS.items():
            project = Project(Path(tmp) / name / "project", Path(tmp) / name / "home", seed=seed)
            started = time.perf_counter()
            getattr(project, f"{name}_loop")(max(1, round(kills * scale)))
            tally = project.check()
            print(f"{name:8} {tally.line()}  ({time.perf_counter() - started:.0f} s)", flush=True)
            for failure in tally.failures[:5]:
                print(f"         {failure}")
            total.add(tally)
    print(f"total    {total.line()}  (seed {seed}, scale {scale:g}; baseline: the suite's counts, scale 1)")
    return 1 if (total.lost, total.forks, total.stuck, total.leftovers, total.failures) != (0, 0, 0, [], []) else 0


if __name__ == "__main__":
    sys.exit(main())
