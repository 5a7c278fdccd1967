"""The labelled sessions end to end in a fuller store: what capture does when the store holds unrelated memories too.

    .venv/bin/python benchmarks/bench_capture_store.py [--unrelated 8] [--sets validation|development|all]

Each labelled session (the validation sets by default, never a blind held-out set) is run through the Capturer as
`bench_capture.py` runs it, once with its own seed memories and once with N more: seeds of other sessions that share
no name and no tool of the same kind with this session's seeds, are not close to any of them (cosine < 0.5), and are
the nearest to what the person says in the session (`bench_relate_store.unrelated`). Printed side by side: precision / recall, changes of mind
written as supersessions, replaced memories still current, and how many of the added memories a change of mind took
out of recall (each of those is a live rule the person never changed).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("FORGEMEM_SERVER", "off")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import capture_corpus as corpus  # noqa: E402
import capture_labelled as labelled  # noqa: E402
from bench_relate_store import unrelated  # noqa: E402


def with_unrelated(cases: list[dict], count: int, vectors: dict[str, np.ndarray], embedder) -> list[dict]:
    """Each case with `count` unrelated memories of the other cases added to its seeds (keys "unrelated-N")."""
    pool = [(f"{n}:{s['key']}", s) for n, case in enumerate(cases) for s in case.get("existing") or []]
    out = []
    for n, case in enumerate(cases):
        seeds = list(case.get("existing") or [])
        said = " ".join(str(text) for items in case.get("passes") or [case["turns"]] for item in items
                        for role, text in item.items() if role == "user")
        said_vector = np.asarray(embedder.encode([said[:2000]])[0], dtype=np.float64)
        others = [(key, s) for key, s in pool if not key.startswith(f"{n}:")]
        added = [{**s, "key": f"unrelated-{i}"}
                 for i, (_, s) in enumerate(unrelated(seeds, others, vectors, said_vector, count))]
        out.append({**case, "existing": seeds + added})
    return out


def run(cases: list[dict], embedder) -> tuple[dict, int, int]:
    """(score, replaced memories still current, added memories taken out of recall)."""
    taken: list[str] = []
    compare = labelled._compare

    def spy(case, written, keys, stale):
        taken.extend(k for k in stale if str(k).startswith("unrelated-"))
        return compare(case, written, keys, stale)

    labelled._compare = spy
    try:
        results = [labelled.run_case(case, embedder) for case in cases]
    finally:
        labelled._compare = compare
    return labelled.score(results), sum(len(r.stale_current) for r in results), len(taken)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--unrelated", type=int, default=8, help="unrelated memories added to each store (default 8)")
    parser.add_argument("--sets", choices=("validation", "development", "all"), default="validation",
                        help="which labelled session sets (never the blind ones; default: the validation sets)")
    args = parser.parse_args()
    from forgemem.index.embedding import load_embedder

    paths = {"validation": corpus.VALIDATION_SETS, "development": corpus.SESSION_SETS,
             "all": corpus.SESSION_SETS + corpus.VALIDATION_SETS}[args.sets]
    cases = [case for path in paths if path.is_file() for case in labelled.load_cases(path)]
    if not cases:
        print("no labelled session sets here (tests/fixtures/capture_v2_dev*.yaml)", file=sys.stderr)
        return 2
    embedder = load_embedder()
    texts = sorted({str(s["text"]) for case in cases for s in case.get("existing") or []})
    vectors = {t: np.asarray(v, dtype=np.float64) for t, v in zip(texts, embedder.encode(texts))}
    alone = run(cases, embedder)
    fuller = run(with_unrelated(cases, args.unrelated, vectors, embedder), embedder)
    print(f"{len(cases)} sessions ({args.sets} sets), {alone[0]['expected']} expected memories\n")
    print(f"{'':44}{'seeds only':>14}{f'+ {args.unrelated} unrelated':>16}")
    for title, pick in (("precision", lambda r: f"{r[0]['precision']:.3f}"), ("recall", lambda r: f"{r[0]['recall']:.3f}"),
                        ("changes of mind written as supersessions",
                         lambda r: f"{r[0]['written_as_supersession']} of {r[0]['changes_of_mind']}"),
                        ("replaced memories still current", lambda r: str(r[1])),
                        ("added memories taken out of recall", lambda r: str(r[2]))):
        print(f"{title:44}{pick(alone):>14}{pick(fuller):>16}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
