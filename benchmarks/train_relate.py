"""Fit the relation model of forgemem/capture/classify/relate.py and write relate_weights.json.

    .venv/bin/python benchmarks/train_relate.py          # writes forgemem/capture/classify/relate_weights.json
    .venv/bin/python benchmarks/train_relate.py --check  # fits again and compares with the shipped file

Training data (TRAIN split only, `capture_corpus.split`):
- the corpus's pairs.jsonl: supersedes, refines, unrelated, and
  contradicts-but-different-scope (class "other-scope": both stay, linked by relates-to);
- the corpus's change-of-mind utterances: `supersedes_hint` is the old memory, `memory`
  the new one, `text` what was said — extra supersedes pairs;
- tests/fixtures/relate_extra.jsonl and relate_extra2.jsonl, this project's own pairs (always
  training rows).

Each pair is used twice: with the new memory as written by a careful labeller, and with
the raw sentence as the new memory (what a simpler classifier keeps), each with its own
cosine. Deterministic: the embedding model runs on one thread, the fit is full-batch
Newton steps on float64 from zeros, and the weights are rounded to 6 decimals, so running
this twice writes the same bytes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import capture_corpus as corpus  # noqa: E402

from forgemem.capture.classify import relate as rel  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: this project's own pairs: the first file by the project, the second (2026-11-26) by a writer who saw neither
#: the code nor any labelled set, in the register of real transcripts
EXTRAS = (ROOT / "tests" / "fixtures" / "relate_extra.jsonl", ROOT / "tests" / "fixtures" / "relate_extra2.jsonl",
          ROOT / "tests" / "fixtures" / "relate_extra3.jsonl")
HELDOUT = ROOT / "tests" / "fixtures" / "relate_heldout.jsonl"
L2 = 0.3
NEWTON_STEPS = 50
CLASS_OF = {
    "supersedes": "supersedes",
    "refines": "refines",
    "contradicts-but-different-scope": "other-scope",
    "unrelated": "unrelated",
    "duplicate": "duplicate",  # not a class: decided by a rule (relate.DUPLICATE_AT), checked on these rows
}


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _record(row: dict, source: str) -> dict:
    new = row.get("new_memory")
    return {
        "id": row["id"],
        "source": source,
        "fold": -1 if source in ("extra", "heldout") else corpus.fold(row["id"]),
        "old": row["old_memory"],
        "old_category": row["old_category"],
        "old_scope": row["old_scope"],
        "said": row["utterance"],
        # a statement no one would keep still reaches relate() when a classifier takes it for a
        # rule: then it is the raw sentence, in the old memory's category and scope (the hardest case)
        "new": new or row["utterance"],
        "category": row.get("new_category") or row["old_category"],
        "scope": row.get("new_scope") or row["old_scope"],
        "label": CLASS_OF[row["label"]],
        "phrasing": row.get("phrasing"),
    }


def pair_records() -> list[dict]:
    return [_record(row, "pairs") for row in corpus.pairs()]


def change_of_mind_records() -> list[dict]:
    out = []
    for row in corpus.utterances(extra=False):
        if row["kind"] != "change-of-mind" or not row.get("supersedes_hint"):
            continue
        out.append({
            "id": row["id"], "source": "utterances", "fold": corpus.fold(row["id"]),
            "old": row["supersedes_hint"], "old_category": row["category"], "old_scope": row["scope"],
            "said": row["text"], "new": row["memory"], "category": row["category"], "scope": row["scope"],
            "label": "supersedes", "phrasing": row["lang"] if row["lang"] != "en" else None,
        })
    return out


def extra_records() -> list[dict]:
    return [_record(row, "extra") for path in EXTRAS for row in _jsonl(path)]


def heldout_records() -> list[dict]:
    return [_record(row, "heldout") for row in _jsonl(HELDOUT)]


def embedder():
    """all-MiniLM-L6-v2 on one thread (the same vectors on every run)."""
    from forgemem.index.embedding import OnnxEmbedder, fingerprint, load_embedder, model_cache_dir

    loaded = load_embedder("")
    if isinstance(loaded, OnnxEmbedder):
        onnx = model_cache_dir() / fingerprint(loaded.model_dir) / "model.onnx"
        return OnnxEmbedder(loaded.model_dir, onnx, loaded.id, threads=1)
    return loaded


_VECTORS: dict[str, np.ndarray] = {}


def cosine(model, a: str, b: str) -> float:
    missing = [t for t in dict.fromkeys((a, b)) if t not in _VECTORS]
    if missing:
        for text, vector in zip(missing, model.encode(missing)):
            _VECTORS[text] = np.asarray(vector, dtype=np.float64)
    return float(np.dot(_VECTORS[a], _VECTORS[b]))


def embed_all(model, records: list[dict]) -> None:
    texts = sorted({t for r in records for t in (r["old"], r["new"], r["said"])} - set(_VECTORS))
    for text, vector in zip(texts, model.encode(texts)):
        _VECTORS[text] = np.asarray(vector, dtype=np.float64)
    for r in records:
        r["similarity"] = round(cosine(model, r["old"], r["new"]), 6)
        r["similarity_said"] = round(cosine(model, r["old"], r["said"]), 6)


def candidate(record: dict, raw: bool = False) -> rel.Candidate:
    return rel.Candidate(
        record["old"], record["old_category"], record["old_scope"],
        record["similarity_said"] if raw else record["similarity"], record["id"],
    )


def examples(records: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """Feature rows and class indices: each pair with its written memory and with its raw sentence."""
    xs, ys = [], []
    for r in records:
        if r["label"] not in rel.CLASSES:
            continue  # the extra file's duplicates check the duplicate rule; they are not a class
        views = [(r["new"], False)]
        if r["said"].strip() != r["new"].strip():
            views.append((r["said"], True))
        for new_text, raw in views:
            xs.append(rel.features(new_text, r["said"], r["category"], r["scope"], candidate(r, raw)))
            ys.append(rel.CLASSES.index(r["label"]))
    return np.array(xs, dtype=np.float64), np.array(ys, dtype=np.int64)


def fit(x: np.ndarray, y: np.ndarray, l2: float = L2) -> list[list[float]]:
    """Multinomial logistic regression, classes weighted to balance, L2 on all but the bias."""
    n, d = x.shape
    k = len(rel.CLASSES)
    counts = np.bincount(y, minlength=k).astype(np.float64)
    sample_weight = (n / (k * np.maximum(counts, 1.0)))[y]
    targets = np.eye(k)[y]
    penalty = np.full(d, l2)
    penalty[0] = 1e-6
    w = np.zeros((k, d))
    for _ in range(NEWTON_STEPS):
        scores = x @ w.T
        scores -= scores.max(axis=1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=1, keepdims=True)
        grad = ((p - targets) * sample_weight[:, None]).T @ x + penalty * w  # k x d
        hessian = np.zeros((k * d, k * d))
        for a in range(k):
            for b in range(k):
                coef = sample_weight * p[:, a] * ((a == b) - p[:, b])
                hessian[a * d : (a + 1) * d, b * d : (b + 1) * d] = (x * coef[:, None]).T @ x
        hessian += np.diag(np.tile(penalty, k))
        step = np.linalg.lstsq(hessian, grad.reshape(-1), rcond=None)[0].reshape(k, d)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    w -= w.mean(axis=0, keepdims=True)  # softmax is unchanged; the numbers are easier to read
    return [[round(float(v), 6) for v in row] for row in w]


def training_records(records: list[dict], held_fold: int = 0) -> list[dict]:
    return [r for r in records if r["fold"] != held_fold]


def all_records(model) -> list[dict]:
    records = pair_records() + change_of_mind_records() + extra_records()
    embed_all(model, records)
    return records


def weights_json(weights: list[list[float]], records: list[dict]) -> str:
    used = training_records(records)
    meta = {
        "trained_on": {
            "pairs": sum(r["source"] == "pairs" for r in used),
            "change_of_mind_utterances": sum(r["source"] == "utterances" for r in used),
            "extra_pairs": sum(r["source"] == "extra" and r["label"] in rel.CLASSES for r in used),
        },
        "split": "capture_corpus TRAIN (fold != 0) plus tests/fixtures/relate_extra*.jsonl",
        "l2": L2,
        "script": "benchmarks/train_relate.py",
    }
    data = {"classes": list(rel.CLASSES), "features": list(rel.FEATURES), "weights": "@W@", "meta": meta}
    rows = ",\n  ".join(json.dumps(row) for row in weights)  # one class per line
    return json.dumps(data, indent=1).replace('"@W@"', f"[\n  {rows}\n ]") + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped weights, write nothing")
    parser.add_argument("--out", type=Path, default=rel.WEIGHTS)
    args = parser.parse_args()
    if not corpus.available():
        print(f"the capture corpus is not at {corpus.CORPUS}", file=sys.stderr)
        return 2
    records = all_records(embedder())
    x, y = examples(training_records(records))
    text = weights_json(fit(x, y), records)
    if args.check:
        same = args.out.is_file() and args.out.read_text(encoding="utf-8") == text
        print("same bytes as the shipped weights" if same else "DIFFERENT from the shipped weights")
        return 0 if same else 1
    args.out.write_text(text, encoding="utf-8")
    print(f"{len(y)} examples ({np.bincount(y, minlength=len(rel.CLASSES)).tolist()} by {list(rel.CLASSES)})"
          f" -> {args.out} ({args.out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
