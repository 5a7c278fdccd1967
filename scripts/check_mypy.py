"""mypy with a baseline that only shrinks: no file may gain type errors.

    .venv/bin/python scripts/check_mypy.py            # check (what .ci/run does)
    .venv/bin/python scripts/check_mypy.py --update   # write the current counts after fixing some

The baseline (`mypy-baseline.json`) holds the number of errors per file when it
was last written. A file with more errors than its baseline fails the check; a
file with fewer is reported, so the baseline can be lowered.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "mypy-baseline.json"


def counts() -> dict[str, int]:
    done = subprocess.run([sys.executable, "-m", "mypy", "forgemem", "--ignore-missing-imports",
                           "--no-error-summary", "--hide-error-context"], cwd=ROOT, capture_output=True, text=True)
    found: dict[str, int] = collections.Counter()
    for line in done.stdout.splitlines():
        match = re.match(r"^(forgemem/\S+\.py):\d+: error:", line)
        if match:
            found[match.group(1)] += 1
    return dict(sorted(found.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help="write the current counts as the baseline")
    args = parser.parse_args()
    now = counts()
    if args.update:
        BASELINE.write_text(json.dumps(now, indent=1) + "\n")
        print(f"mypy baseline: {sum(now.values())} errors in {len(now)} files")
        return 0
    baseline = json.loads(BASELINE.read_text())
    worse = {f: (baseline.get(f, 0), n) for f, n in now.items() if n > baseline.get(f, 0)}
    better = {f: (n, now.get(f, 0)) for f, n in baseline.items() if now.get(f, 0) < n}
    for f, (before, after) in worse.items():
        print(f"mypy: {f} has {after} type errors, the baseline allows {before}")
    if better:
        print(f"mypy: {len(better)} file(s) have fewer errors than the baseline; run with --update to lower it")
    print(f"mypy: {sum(now.values())} errors (baseline {sum(baseline.values())})")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
