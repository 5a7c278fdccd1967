"""How a new memory relates to an existing one: the trained decision beside the thresholds.

    .venv/bin/python benchmarks/bench_relate.py          # everything below
    .venv/bin/python benchmarks/bench_relate.py --dev -v # TEST and CV only, with the CV errors

Compares, in one run, `forgemem.capture.classify.offline.relate` as it was before this model
(cosine thresholds plus a change-of-mind regex: the baseline, copied here as
`threshold_relate` so it stays put while offline.py changes) with `forgemem.capture.classify.relate.relate` (the trained
decision by subject) on:

1. the capture corpus's TEST split (pairs.jsonl fold 0, 16 pairs; and the change-of-mind
   utterances of fold 0, 9 more supersessions), scored by the model fitted on TRAIN —
   the shipped weights, refitted here and checked to be the same;
2. 5-fold cross-validation over all 137 pairs by `fold(id)`: each fold scored by a model
   fitted on the other four (plus the change-of-mind utterances of those folds and the
   extra pairs);
3. tests/fixtures/relate_heldout.jsonl: 38 pairs written before any model was fitted;
4. the six "poetry -> uv" phrasings one by one.

What counts as right: supersedes and refines must be said as such; a contradiction in the
other scope must be relates-to (both stay); an unrelated pair may be new or relates-to;
a held-out `duplicate` must be duplicate. "Supersession accuracy" is the yes/no question
"is the old memory superseded?" over every pair. Each pair is asked with its written new
memory; "(raw)" lines ask with the user's raw sentence as the new memory instead.

The held-out set was first measured right after the first fit (trained: relation 0.895,
supersession 0.974, five of the six poetry phrasings; "use uv" came out as refines). The
changes after that (tool families split into true substitutes, two ambiguous tool names
vouching for each other, terse implicit replacements added to the extra pairs, the
duplicate rule's blockers) were driven by the cross-validation errors and by the six
phrasings the tests require, never by the other held-out rows; "--dev" leaves the held-out
set out while working.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import train_relate as tr  # noqa: E402

from forgemem.capture.classify import Neighbour  # noqa: E402
from forgemem.capture.classify import relate as rel  # noqa: E402
from forgemem.store.model import Memory  # noqa: E402

ACCEPT = {
    "supersedes": {"supersedes"},
    "refines": {"refines"},
    "other-scope": {"relates-to"},
    "unrelated": {"new", "relates-to"},
    "duplicate": {"duplicate"},
}
NOW = datetime(2026, 1, 1, tzinfo=UTC)


#: offline.relate's change-of-mind words and thresholds as of commit ca417b9 (before the trained
#: decision), kept here so the baseline stays put while offline.py moves on
_BASELINE_CHANGE = re.compile("|".join(f"(?:{p})" for p in (
    r"\bactually\b", r"\binstead\b", r"\bno longer\b", r"\bnot anymore\b", r"\banymore\b",
    r"\bswitch(?:ed|ing)?\b", r"\bno more\b", r"\bmov(?:e|ed|ing) (?:to|from|away)\b",
    r"\bchanged? (?:my|our) mind\b", r"\bfrom now on\b", r"\bnow (?:we|i)\b", r"\bnot \S+ any ?more\b",
    r"\breplac(?:e|ed|ing)\b",
)), re.I)


def threshold_relate(said: str, category: str, scope: str, neighbours: list[Neighbour]) -> str:
    """offline.relate at ca417b9: ≥ 0.86 duplicate; change words and ≥ 0.45 in the same category and
    scope supersedes; ≥ 0.62 (same scope) refines; ≥ 0.55 relates-to; else new."""
    if not neighbours:
        return "new"
    best = neighbours[0]
    changed = bool(_BASELINE_CHANGE.search(said))
    if best.similarity >= 0.86 and not changed:
        return "duplicate"
    for n in neighbours:
        if changed and n.memory.scope == scope and n.memory.category == category and n.similarity >= 0.45:
            return "supersedes"
    if best.similarity >= 0.62 and best.memory.scope == scope:
        return "refines"
    return "relates-to" if best.similarity >= 0.55 else "new"


def baseline(record: dict, raw: bool = False) -> str:
    memory = Memory(
        id=record["id"], body=record["old"], scope=record["old_scope"], category=record["old_category"],
        created_at=NOW, updated_at=NOW,
    )
    sim = record["similarity_said"] if raw else record["similarity"]
    return threshold_relate(record["said"], record["category"], record["scope"], [Neighbour(memory, sim)])


def trained(record: dict, weights=None, raw: bool = False) -> str:
    new_text = record["said"] if raw else record["new"]
    return rel.relate(new_text, record["said"], record["category"], record["scope"],
                      [tr.candidate(record, raw)], weights=weights)[0]


def score(records: list[dict], predictions: list[str]) -> dict:
    right = sum(p in ACCEPT[r["label"]] for r, p in zip(records, predictions))
    sup = sum((p == "supersedes") == (r["label"] == "supersedes") for r, p in zip(records, predictions))
    per = {}
    for label, said in (("supersedes", "supersedes"), ("refines", "refines"), ("duplicate", "duplicate")):
        gold = [p for r, p in zip(records, predictions) if r["label"] == label]
        called = [r for r, p in zip(records, predictions) if p == said]
        if not gold and not called:
            continue
        per[label] = (
            sum(r["label"] == label for r in called) / len(called) if called else float("nan"),
            sum(p == said for p in gold) / len(gold) if gold else float("nan"),
            len(gold),
        )
    keep = [r for r, p in zip(records, predictions) if p in ("new", "relates-to")]
    gold_keep = [p for r, p in zip(records, predictions) if r["label"] in ("unrelated", "other-scope")]
    if gold_keep:
        per["both stay (new/relates-to)"] = (
            sum(r["label"] in ("unrelated", "other-scope") for r in keep) / len(keep) if keep else float("nan"),
            sum(p in ("new", "relates-to") for p in gold_keep) / len(gold_keep),
            len(gold_keep),
        )
    other = [p for r, p in zip(records, predictions) if r["label"] == "other-scope"]
    if other:
        per["other scope -> relates-to"] = (float("nan"), sum(p == "relates-to" for p in other) / len(other), len(other))
    return {"n": len(records), "accuracy": right / len(records), "supersession": sup / len(records), "per": per}


def report(title: str, records: list[dict], runs: dict[str, list[str]]) -> None:
    print(f"\n## {title} ({len(records)} pairs: {dict(Counter(r['label'] for r in records))})\n")
    print(f"{'':34} {'relation acc':>12} {'supersession acc':>17}")
    scored = {name: score(records, preds) for name, preds in runs.items()}
    for name, s in scored.items():
        print(f"{name:34} {s['accuracy']:12.3f} {s['supersession']:17.3f}")
    labels = list(dict.fromkeys(label for s in scored.values() for label in s["per"]))
    print(f"\n{'precision / recall (n)':34} " + "  ".join(f"{name:>22}" for name in runs))
    for label in labels:
        cells = []
        for s in scored.values():
            p, r, n = s["per"].get(label, (float("nan"), float("nan"), 0))
            cells.append(f"{p:6.2f} / {r:4.2f} ({n:2d})".replace("nan", " - "))
        print(f"  {label:32} " + "  ".join(f"{c:>22}" for c in cells))


def runs_for(records: list[dict], weights_by_record) -> dict[str, list[str]]:
    return {
        "baseline (offline thresholds)": [baseline(r) for r in records],
        "trained": [trained(r, weights_by_record(r)) for r in records],
        "baseline (raw)": [baseline(r, raw=True) for r in records],
        "trained (raw)": [trained(r, weights_by_record(r), raw=True) for r in records],
    }


def errors(records: list[dict], predictions: list[str], limit: int = 40) -> None:
    wrong = [(r, p) for r, p in zip(records, predictions) if p not in ACCEPT[r["label"]]]
    for r, p in wrong[:limit]:
        print(f"  {r['id']} {r['label']:>11} -> {p:<10} sim {r['similarity']:.2f} | {r['old']} | {r['said']} | {r['new']}")


def main() -> int:
    if not tr.corpus.available():
        print(f"the capture corpus is not at {tr.corpus.CORPUS}", file=sys.stderr)
        return 2
    model = tr.embedder()
    records = tr.all_records(model)
    heldout = tr.heldout_records()
    tr.embed_all(model, heldout)
    pairs = [r for r in records if r["source"] == "pairs"]
    utterances = [r for r in records if r["source"] == "utterances"]

    fold_weights = {}
    for k in range(5):
        x, y = tr.examples(tr.training_records(records, held_fold=k))
        fold_weights[k] = tr.fit(x, y)
    shipped = rel._model()[0]
    same = fold_weights[0] == shipped
    print("# bench_relate: baseline offline.relate vs the trained relate.relate\n")
    print(f"shipped weights = the TRAIN fit refitted now: {same}")
    print(f"training rows (TRAIN): {sum(r['fold'] != 0 for r in records)} "
          f"(pairs {sum(r['fold'] != 0 for r in pairs)}, change-of-mind utterances "
          f"{sum(r['fold'] != 0 for r in utterances)}, extra {sum(r['source'] == 'extra' for r in records)})")

    test = [r for r in pairs if r["fold"] == 0] + [r for r in utterances if r["fold"] == 0]
    report("TEST split: pairs fold 0 + change-of-mind utterances fold 0", test,
           runs_for(test, lambda r: fold_weights[0]))
    report("5-fold cross-validation over all pairs", pairs, runs_for(pairs, lambda r: fold_weights[r["fold"]]))
    cv_utt = runs_for(utterances, lambda r: fold_weights[r["fold"]])
    report("5-fold cross-validation over the change-of-mind utterances", utterances, cv_utt)
    dups = [r for r in records if r["source"] == "extra" and r["label"] == "duplicate"]
    report("the same rule said again (tests/fixtures/relate_extra.jsonl duplicates; they set DUPLICATE_AT)",
           dups, runs_for(dups, lambda r: fold_weights[0]))
    if "--dev" in sys.argv:  # while developing: never look at the held-out pairs
        if "-v" in sys.argv:
            verbose(pairs, utterances, fold_weights, cv_utt)
        return 0
    held = runs_for(heldout, lambda r: shipped)
    report("held-out (tests/fixtures/relate_heldout.jsonl, shipped weights)", heldout, held)

    print("\n## the six poetry -> uv phrasings (held-out h0001-h0006)\n")
    print(f"{'said':78} {'baseline':>11} {'trained':>11} {'trained(raw)':>13}")
    for i, r in enumerate(heldout[:6]):
        print(f"{r['said']!r:78} {held['baseline (offline thresholds)'][i]:>11} {held['trained'][i]:>11} "
              f"{held['trained (raw)'][i]:>13}")

    if "-v" in sys.argv:
        verbose(pairs, utterances, fold_weights, cv_utt)
    return 0


def verbose(pairs, utterances, fold_weights, cv_utt) -> None:
    """The cross-validation errors (never the held-out ones: that set is not for tuning)."""
    for raw in (False, True):
        cv = [trained(r, fold_weights[r["fold"]], raw=raw) for r in pairs]
        print(f"\n## cross-validation errors (trained{', raw' if raw else ''})")
        errors(pairs, cv)
    print("\n## change-of-mind utterance errors (trained, CV)")
    errors(utterances, cv_utt["trained"])


if __name__ == "__main__":
    sys.exit(main())
