"""Which memory a change of mind replaces, in a store that holds more than the memories it is about.

    .venv/bin/python benchmarks/bench_relate_store.py [--distractors 8]

The labelled session sets give each session one to three seed memories, nearly all on the subject the person then
changes, so a relation model that picks the wrong one of many is never caught there. Here each expected memory of
the development and validation sets (never a blind held-out set) is related, as the offline classifier does
(`offline.relate_to`), to its session's seeds alone and then to its session's seeds plus N memories of other
sessions: the nearest seeds of other sessions that share no name, and no tool of the same kind, with this session's
seeds and are not close to any of them (cosine < 0.5), so that they stand for the unrelated rules of a real store,
not for the same rule said twice ("pkg manager: yarn" in one session and "Use npm" in another would be one memory
in a real store).

Printed side by side: how many expected supersessions replace the right memory, replace an unrelated one (a live
rule wrongly taken out of recall), or replace none; and how many statements that must replace nothing replace an
unrelated memory. Beside the model, a cosine baseline (the nearest memory of the same store replaced from 0.6).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import yaml

os.environ.setdefault("FORGEMEM_SERVER", "off")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import capture_corpus as corpus  # noqa: E402

from forgemem.capture.classify import Neighbour  # noqa: E402
from forgemem.capture.classify.offline import relate_to  # noqa: E402
from forgemem.capture.classify.relate import _side  # noqa: E402
from forgemem.capture.classify.units import units  # noqa: E402
from forgemem.names import _families  # noqa: E402

SAME_RULE_AT = 0.5  # a memory of another session this close to a seed stands for that seed, not for another rule
COSINE_AT = 0.6  # the baseline: the nearest memory of the store is replaced from this cosine


def first(value):
    return value[0] if isinstance(value, list) else value


def statements(paths) -> list[dict]:
    """Each expected memory of a session with seeds: the sentence that holds its words, its store, what it replaces."""
    out = []
    for path in paths:
        if not path.is_file():
            continue
        for case in yaml.safe_load(path.read_text(encoding="utf-8")):
            seeds = {f"{path.stem}:{case['name']}:{s['key']}": s for s in case.get("existing") or []}
            if not seeds:
                continue
            said = [piece for items in case.get("passes") or [case["turns"]] for item in items
                    for role, text in item.items() if role == "user" for piece in (units(str(text)) or [str(text)])]
            for want in case.get("expect") or []:
                words = [str(w).lower() for w in want.get("words") or []]
                holder = next((s for s in said if words and all(w in s.lower() for w in words)), None)
                relation = str(want.get("relation") or "")
                target = f"{path.stem}:{case['name']}:{relation.split(':', 1)[1]}" if relation.startswith(
                    "supersedes:") else None
                if holder is None or (target is not None and target not in seeds):
                    continue  # a chain step that replaces a memory of the same session: not about the store
                out.append({"said": holder, "scope": first(want["scope"]), "category": first(want["category"]),
                            "seeds": seeds, "target": target})
    return out


def unrelated(seeds: list[dict], others: list[tuple[str, dict]], vectors: dict[str, np.ndarray], near: np.ndarray,
              count: int) -> list[tuple[str, dict]]:
    """The `count` (key, memory) pairs of `others` nearest to `near` that stand for unrelated rules beside `seeds`: no
    name and no tool of the same kind in common with them, and no closer than SAME_RULE_AT to any of them."""
    if not count:
        return []
    seed_vectors = np.stack([vectors[str(s["text"])] for s in seeds]) if seeds else None
    names = set().union(*(_side(str(s["text"])).names for s in seeds)) if seeds else set()
    kinds = _families(names)
    kept = [(key, s) for key, s in others
            if (seed_vectors is None or float((seed_vectors @ vectors[str(s["text"])]).max()) < SAME_RULE_AT)
            and not (_side(str(s["text"])).names & names) and not (_families(_side(str(s["text"])).names) & kinds)]
    kept.sort(key=lambda pair: -float(near @ vectors[str(pair[1]["text"])]))
    return kept[:count]


def run(items: list[dict], pool: list[tuple[str, dict]], vectors: dict[str, np.ndarray], distractors: int,
        show: bool = False) -> dict:
    counts = {"right": 0, "unrelated": 0, "other seed": 0, "none": 0, "wrong when none": 0, "expected": 0,
              "none expected": 0, "baseline right": 0, "baseline unrelated": 0, "baseline wrong when none": 0}
    for item in items:
        said = vectors[item["said"]]
        memories = list(item["seeds"].items())
        others = [(key, s) for key, s in pool if key not in item["seeds"]]
        memories += unrelated(list(item["seeds"].values()), others, vectors, said, distractors)
        neighbours = [Neighbour(SimpleNamespace(id=key, body=str(s["text"]), category=s["category"], scope=s["scope"]),
                                float(said @ vectors[str(s["text"])])) for key, s in memories]
        relation, target, _ = relate_to(item["said"], item["said"], item["category"], item["scope"], neighbours)
        replaced = target if relation == "supersedes" else None
        same_store = [n for n in neighbours if n.memory.scope == item["scope"]]
        nearest = max(same_store, key=lambda n: n.similarity, default=None)
        baseline = nearest.memory.id if nearest is not None and nearest.similarity >= COSINE_AT else None
        if show and replaced is not None and replaced not in item["seeds"]:
            old = next(n.memory.body for n in neighbours if n.memory.id == replaced)
            must = "" if item["target"] else " (it must replace nothing)"
            print(f"  replaces an unrelated memory{must}: {item['said'][:90]!r}\n      -> {old[:90]!r}")
        elif show and replaced is not None and not item["target"]:
            old = next(n.memory.body for n in neighbours if n.memory.id == replaced)
            print(f"  replaces a memory of its session (it must replace nothing): {item['said'][:90]!r}\n"
                  f"      -> {old[:90]!r}")
        if item["target"]:
            counts["expected"] += 1
            counts["right" if replaced == item["target"] else "none" if replaced is None
                   else "other seed" if replaced in item["seeds"] else "unrelated"] += 1
            counts["baseline right"] += baseline == item["target"]
            counts["baseline unrelated"] += baseline is not None and baseline not in item["seeds"]
        else:
            counts["none expected"] += 1
            counts["wrong when none"] += replaced is not None
            counts["baseline wrong when none"] += baseline is not None
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--distractors", type=int, default=8, help="unrelated memories added to each store (default 8)")
    parser.add_argument("--show", action="store_true", help="print each unrelated memory replaced, and each replaced when none must be, and by what")
    parser.add_argument("--validation", action="store_true",
                        help="relate only the validation sets' statements (sets 16-25, which nothing is tuned on)")
    args = parser.parse_args()
    from forgemem.index.embedding import load_embedder

    sets = corpus.VALIDATION_SETS if args.validation else corpus.SESSION_SETS + corpus.VALIDATION_SETS
    every = statements(corpus.SESSION_SETS + corpus.VALIDATION_SETS)
    pool = [(key, s) for item in every for key, s in item["seeds"].items()]  # every set's memories stand by
    items = statements(sets) if args.validation else every
    if not items:
        print("no labelled session sets here (tests/fixtures/capture_v2_dev*.yaml)", file=sys.stderr)
        return 2
    pool = list(dict(pool).items())
    texts = sorted({item["said"] for item in items} | {str(s["text"]) for _, s in pool})
    model = load_embedder()
    vectors = {t: np.asarray(v, dtype=np.float64) for t, v in zip(texts, model.encode(texts))}
    alone, fuller = run(items, pool, vectors, 0), run(items, pool, vectors, args.distractors, args.show)
    print(f"{alone['expected']} expected supersessions and {alone['none expected']} statements that replace nothing,"
          f" from {len(sets)} {'validation' if args.validation else 'development and validation'} session sets\n")
    print(f"{'':48}{'seeds only':>14}{f'+ {args.distractors} unrelated':>16}")
    rows = [("model: replaces the right memory", "right"), ("model: replaces an unrelated memory", "unrelated"),
            ("model: replaces another seed", "other seed"), ("model: replaces nothing", "none"),
            ("model: replaces a memory when it must not", "wrong when none"),
            (f"cosine >= {COSINE_AT}: replaces the right memory", "baseline right"),
            (f"cosine >= {COSINE_AT}: replaces an unrelated memory", "baseline unrelated"),
            (f"cosine >= {COSINE_AT}: replaces one when it must not", "baseline wrong when none")]
    for title, key in rows:
        print(f"{title:48}{alone[key]:>14}{fuller[key]:>16}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
