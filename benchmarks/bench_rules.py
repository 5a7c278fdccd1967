"""Memories read as rules: `forgemem.capture.classify.rules.rule_text` against the capture corpus.

    python benchmarks/bench_rules.py [--dev] [--no-cosine]

For every durable row of ../shared/eval/capture/utterances.jsonl the corpus gives the
`memory` a good observer writes. Three texts are compared with it:

- raw:      the user's turn as it was typed;
- baseline: what the offline classifier wrote before rules.py,
            `offline._finish(offline.explicit_subject(text))` (a frozen copy, below);
- new:      `rule_text(text, category=, scope=, context=<last assistant turn>)`.

Two figures per system: token F1 (SQuAD-style: lower case, punctuation and articles
removed, bag of word tokens) and the cosine similarity of the all-MiniLM-L6-v2
vectors. Rows are split by `capture_corpus.split` (fixed 80/20 by id hash):
TRAIN is what the rules package was developed on, TEST is the figure to report. Fifteen
TEST rows are printed as examples (text → new → gold).

`--dev` prints every TRAIN row with its F1 (never TEST rows) for development.
"""

from __future__ import annotations

import argparse
import collections
import re
import string
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from capture_corpus import TEST, TRAIN, available, split, utterances  # noqa: E402

from forgemem.capture.classify.rules import rule_text  # noqa: E402

SYSTEMS = ("raw", "baseline", "new")


# ------------------------------------------------------------------ metrics


def normalize(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces."""
    text = text.lower()
    text = "".join(ch if ch not in set(string.punctuation) else " " for ch in text)
    text = re.sub(r"\b(?:a|an|the)\b", " ", text)
    return " ".join(text.split())


def token_f1(prediction: str, gold: str) -> float:
    pred, ref = normalize(prediction).split(), normalize(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    common = collections.Counter(pred) & collections.Counter(ref)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


# ------------------------------------------------------------------ systems


def last_assistant_turn(row: dict) -> str:
    for turn in reversed(row.get("context") or []):
        if turn["role"] == "assistant":
            return turn["text"]
    return ""


# The baseline is the offline classifier's wording as of commit 3545970 (before rules.py),
# `offline._finish(offline.explicit_subject(text))`, copied here so that wiring rule_text
# into the classifier does not move the baseline it is compared with.
_B_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i am|my|me|mine|i've|i'd)\b", re.I)
_B_LEADING_FILLER = re.compile(r"^(?:(?:and|but|so|also|oh|ok|okay|hey|please|btw|well|yeah|yes)\b[,\s]*)+", re.I)
_B_THIRD_PERSON = [
    (re.compile(r"\bI'm\b|\bI am\b"), "the user is"),
    (re.compile(r"\bI've\b|\bI have\b"), "the user has"),
    (re.compile(r"\bI'd\b"), "the user would"),
    (re.compile(r"\bmy\b", re.I), "the user's"),
    (re.compile(r"\bmine\b", re.I), "the user's"),
    (re.compile(r"\bme\b", re.I), "the user"),
]
_B_I_VERB = re.compile(r"\bI (?:(really|strongly|much|mostly|usually|always|never|also) )?([a-z']+)\b")


def _b_third_person_verb(verb: str) -> str:
    irregular = {"am": "is", "have": "has", "do": "does", "don't": "doesn't", "can't": "can't", "can": "can",
                 "will": "will", "would": "would", "should": "should", "must": "must", "was": "was"}
    if verb in irregular:
        return irregular[verb]
    if verb.endswith(("ed", "'t")):
        return verb
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if verb.endswith("y") and len(verb) > 2 and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _b_explicit_subject(sentence: str) -> str:
    bare = _B_LEADING_FILLER.sub("", sentence).strip()
    if not _B_FIRST_PERSON.search(bare):
        return bare
    text = _B_I_VERB.sub(
        lambda m: "the user " + (f"{m.group(1)} " if m.group(1) else "") + _b_third_person_verb(m.group(2)), bare
    )
    for pattern, replacement in _B_THIRD_PERSON:
        text = pattern.sub(replacement, text)
    return text


def _b_finish(text: str) -> str:
    text = text.strip().rstrip(",;:")
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "`", ")")) else text + "."


def baseline(text: str) -> str:
    """What the offline classifier wrote before rules.py: `_finish(explicit_subject(text))`."""
    return _b_finish(_b_explicit_subject(text))


def new(row: dict) -> str:
    return rule_text(row["text"], category=row["category"], scope=row["scope"], context=last_assistant_turn(row))


def outputs(row: dict) -> dict[str, str]:
    return {"raw": row["text"], "baseline": baseline(row["text"]), "new": new(row)}


def durable_rows() -> dict[str, list[dict]]:
    """{TRAIN: [...], TEST: [...]}: the durable rows of the corpus (extra rows are TRAIN only)."""
    parts = split([row for row in utterances() if row["durable"] and row.get("memory")])
    return {part: sorted(rows, key=lambda r: r["id"]) for part, rows in parts.items()}


def evaluate(rows: list[dict], embedder=None) -> dict[str, dict[str, float]]:
    """{system: {"f1": mean token F1, "cosine": mean cosine or None}} over `rows`."""
    texts = {name: [] for name in SYSTEMS}
    for row in rows:
        for name, text in outputs(row).items():
            texts[name].append(text)
    golds = [row["memory"] for row in rows]
    result: dict[str, dict[str, float]] = {}
    gold_vectors = embedder.encode(golds) if embedder is not None else None
    for name in SYSTEMS:
        f1 = sum(token_f1(p, g) for p, g in zip(texts[name], golds)) / len(rows)
        cosine = None
        if embedder is not None:
            vectors = embedder.encode(texts[name])
            cosine = float((vectors * gold_vectors).sum(axis=1).mean())
        result[name] = {"f1": f1, "cosine": cosine}
    return result


# ------------------------------------------------------------------ report


def table(figures: dict[str, dict[str, dict[str, float]]], sizes: dict[str, int]) -> None:
    print(f"{'split':6} {'rows':>4}  {'system':9} {'token F1':>8} {'cosine':>7}")
    for part in (TRAIN, TEST):
        for name in SYSTEMS:
            f = figures[part][name]
            cosine = f"{f['cosine']:.3f}" if f["cosine"] is not None else "-"
            print(f"{part:6} {sizes[part]:>4}  {name:9} {f['f1']:8.3f} {cosine:>7}")
        print()


def examples(rows: list[dict], count: int = 15) -> None:
    step = max(1, len(rows) // count)
    picked = rows[::step][:count]
    for row in picked:
        out = new(row)
        print(f"[{row['id']} {row['kind']} {row['category']}/{row['scope']} {row['lang']}] "
              f"F1 {token_f1(out, row['memory']):.2f} (baseline {token_f1(baseline(row['text']), row['memory']):.2f})")
        context = last_assistant_turn(row)
        if context:
            print(f"  context: {context}")
        print(f"  text:    {row['text']}")
        print(f"  new:     {out}")
        print(f"  gold:    {row['memory']}")
        print()


def dev(rows: list[dict]) -> None:
    """Every TRAIN row, worst first: for developing the rules package (never run on TEST)."""
    scored = []
    for row in rows:
        out = new(row)
        scored.append((token_f1(out, row["memory"]) - token_f1(baseline(row["text"]), row["memory"]), row, out))
    for delta, row, out in sorted(scored, key=lambda s: s[0]):
        print(f"[{row['id']} {row['kind']} {row['category']}/{row['scope']}] "
              f"F1 {token_f1(out, row['memory']):.2f} (Δ {delta:+.2f})")
        context = last_assistant_turn(row)
        if context:
            print(f"  C: {context}")
        print(f"  T: {row['text']}")
        print(f"  N: {out}")
        print(f"  G: {row['memory']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dev", action="store_true", help="print every TRAIN row with its F1 (development)")
    parser.add_argument("--no-cosine", action="store_true", help="token F1 only (no embedding model)")
    args = parser.parse_args()
    if not available():
        sys.exit("the capture corpus (../shared/eval/capture/utterances.jsonl) is not here")
    parts = durable_rows()
    if args.dev:
        dev(parts[TRAIN])
        return
    embedder = None
    if not args.no_cosine:
        from forgemem.index.embedding import load_embedder

        embedder = load_embedder("")
    figures = {part: evaluate(rows, embedder) for part, rows in parts.items()}
    print("== memories read as rules: durable corpus rows, mean over rows (report TEST)\n")
    table(figures, {part: len(rows) for part, rows in parts.items()})
    for part in (TRAIN, TEST):
        deltas = [token_f1(new(r), r["memory"]) - token_f1(baseline(r["text"]), r["memory"]) for r in parts[part]]
        print(f"{part}: token F1 per row, new vs baseline: {sum(d > 0.005 for d in deltas)} better, "
              f"{sum(abs(d) <= 0.005 for d in deltas)} same, {sum(d < -0.005 for d in deltas)} worse")
    print()
    print(f"== {min(15, len(parts[TEST]))} TEST examples (text → new → gold)\n")
    examples(parts[TEST])


if __name__ == "__main__":
    main()
