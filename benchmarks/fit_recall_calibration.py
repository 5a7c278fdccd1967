"""Fit recall's relevance model (forgemem/recall/calibration.json) on the LoCoMo development split.

    .venv/bin/python benchmarks/fit_recall_calibration.py          # writes forgemem/recall/calibration.json
    .venv/bin/python benchmarks/fit_recall_calibration.py --check  # fits again and compares with the shipped file

Data: ../shared/eval/locomo/locomo_dev.json, loaded as benchmarks/bench_quality.py does (each
turn one memory, "[<session date_time>] <speaker>: <text>", one store per conversation; a
candidate is relevant when it is one of the question's evidence turns). FIT conversations
(conv-26, conv-30, conv-41) fit the model; HELD_OUT ones (conv-42, conv-43) only check it.

For every question, the candidates are what recall itself scores (`RecallEngine.scored`: the
top 100 of each leg, and the session neighbours the surroundings fetch), each with its cosine,
its lexical share (BM25 / the store's ceiling for the query, `StoreIndex.lexical_ceiling`) and
what its surroundings added (forgemem/recall/surroundings.py). Two logistic regressions, per mode:

1. relevance ~ cosine + share, over the candidates the two legs found: its two weights give
   LAMBDA, the weight of the share in combined = cosine + LAMBDA · share + surroundings (the
   order recall ranks by). The surroundings are computed with the shipped LAMBDA, which this
   step gives again (it does not depend on them): a fit that moves it asks for a second run;
2. relevance ~ combined + ln(position), position = 1 + the candidates that combine higher:
   the shipped probability. b > 0 and c < 0, so it keeps the order of `combined`.

Lexical-only (no embedding model): combined = share, over the lexical candidates only (the
surroundings are left out of this fit).

The floor (`recall_floor`'s default): of 0.20 to 0.50 in steps of 0.05, the lowest within 0.01 of the
best F0.5 of the hits shown (top 10 at or above the floor; precision counts twice as much as evidence
recall: a wrong memory in an agent's context costs more than a missing one) on the FIT
conversations.

Deterministic: the embedding model runs on one thread, each fit is full-batch Newton steps on
float64 from zeros, and the numbers are rounded to 6 decimals, so a rerun writes the same bytes.
The report (reliability table, Brier score, R@5/R@10 against the min-max fusion it replaces,
the floor's trade-off) is printed on the HELD_OUT conversations.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench_quality as bq  # noqa: E402

from forgemem.recall import rank as rank_module  # noqa: E402

FIT = ("conv-26", "conv-30", "conv-41")
HELD_OUT = ("conv-42", "conv-43")
L2 = 1e-3
NEWTON_STEPS = 100
FLOORS = tuple(round(0.20 + 0.05 * i, 2) for i in range(7))
FLOOR_TOLERANCE = 0.01
SHOWN = 10  # hits a recall shows at most (retrieval_top_k's default)


@dataclass
class Rows:
    """One row per (question, candidate)."""

    conversation: np.ndarray  # index into the conversation list
    question: np.ndarray  # a question number unique over all conversations
    memory: list[str]  # the candidate's memory id (ties in `combined` are broken by it, as recall does)
    cosine: np.ndarray
    share: np.ndarray
    bm25: np.ndarray  # raw BM25, 0 for dense-only candidates (for the min-max comparison only)
    lexical: np.ndarray  # whether the lexical leg found it
    found: np.ndarray  # whether either leg found it (not only fetched as a session neighbour)
    surroundings: np.ndarray  # what its surroundings added to `combined`
    relevant: np.ndarray
    evidence: np.ndarray  # per question number: how many evidence turns it has
    names: list[str]

    def subset(self, mask: np.ndarray) -> Rows:
        return Rows(self.conversation[mask], self.question[mask], [m for m, k in zip(self.memory, mask) if k],
                    self.cosine[mask], self.share[mask], self.bm25[mask], self.lexical[mask],
                    self.found[mask], self.surroundings[mask], self.relevant[mask], self.evidence, self.names)


def embedder():
    """all-MiniLM-L6-v2 on one thread (the same vectors on every run)."""
    from forgemem.index.embedding import OnnxEmbedder, fingerprint, load_embedder, model_cache_dir

    loaded = load_embedder("")
    if isinstance(loaded, OnnxEmbedder):
        onnx = model_cache_dir() / fingerprint(loaded.model_dir) / "model.onnx"
        return OnnxEmbedder(loaded.model_dir, onnx, loaded.id, threads=1)
    return loaded


def collect(path: Path) -> Rows:
    from forgemem.recall.engine import RecallEngine
    from forgemem.recall.rank import Query
    from forgemem.workspace import Workspace

    model = embedder()
    conversations = bq.load_conversations(path)
    columns: dict[str, list] = {k: [] for k in ("conversation", "question", "memory", "cosine", "share", "bm25",
                                                "lexical", "found", "surroundings", "relevant")}
    evidence: list[int] = []
    with tempfile.TemporaryDirectory(prefix="forgemem-calibration-") as tmp:
        for number, (sample_id, turns, questions) in enumerate(conversations):
            folder = Path(tmp) / sample_id
            memory_dir, user_dir = folder / ".forge" / "memory", folder / "user" / "memory"
            ids = bq.write_store(memory_dir, sample_id, turns)
            engine = RecallEngine(Workspace.open(repo_dir=memory_dir, user_dir=user_dir), embedder=model)
            engine.refresh()
            for text, wanted, _category in questions:
                question = len(evidence)
                evidence.append(len(wanted))
                candidates, dense = engine.scored(Query(text, k=SHOWN, hops=0))
                assert dense, "the embedding model did not load"
                for c in sorted(candidates, key=lambda c: c.memory.id):
                    columns["conversation"].append(number)
                    columns["question"].append(question)
                    columns["memory"].append(c.memory.id)
                    columns["cosine"].append(c.dense_score or 0.0)
                    columns["share"].append(c.lexical_share)
                    columns["bm25"].append(c.lexical_score or 0.0)
                    columns["lexical"].append(c.lexical_score is not None)
                    columns["found"].append(c.lexical_score is not None or c.dense_rank is not None)
                    columns["surroundings"].append(sum(c.surroundings.values()))
                    columns["relevant"].append(ids[c.memory.id] in wanted)
    return Rows(
        np.array(columns["conversation"]), np.array(columns["question"]), columns["memory"],
        np.array(columns["cosine"], dtype=np.float64), np.array(columns["share"], dtype=np.float64),
        np.array(columns["bm25"], dtype=np.float64), np.array(columns["lexical"], dtype=bool),
        np.array(columns["found"], dtype=bool), np.array(columns["surroundings"], dtype=np.float64),
        np.array(columns["relevant"], dtype=np.float64), np.array(evidence, dtype=np.float64),
        [c[0] for c in conversations],
    )


def fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Logistic regression (bias first, unpenalised), L2 on the other weights, full-batch Newton."""
    x = np.c_[np.ones(len(x)), x]
    penalty = np.full(x.shape[1], L2)
    penalty[0] = 0.0
    w = np.zeros(x.shape[1])
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        grad = x.T @ (p - y) + penalty * w
        hessian = (x * (p * (1 - p))[:, None]).T @ x + np.diag(penalty)
        step = np.linalg.solve(hessian, grad)
        w -= step
        if np.abs(step).max() < 1e-12:
            break
    return w


def positions(rows: Rows, combined: np.ndarray) -> np.ndarray:
    """1-based place of each candidate in its question's order by (-combined, memory id)."""
    order = sorted(range(len(combined)), key=lambda i: (rows.question[i], -combined[i], rows.memory[i]))
    place = np.empty(len(combined))
    current, n = None, 0
    for i in order:
        if rows.question[i] != current:
            current, n = rows.question[i], 0
        n += 1
        place[i] = n
    return place


def fit_mode(rows: Rows, dense: bool) -> dict:
    if dense:
        found = rows.subset(rows.found)
        first = fit(np.c_[found.cosine, found.share], found.relevant)
        lam = float(first[2] / first[1])
    else:
        lam = 1.0
    lam = round(lam, 6)
    combined = combine(rows, lam, dense)
    w = fit(np.c_[combined, np.log(positions(rows, combined))], rows.relevant)
    if not (w[1] > 0 and w[2] < 0):
        raise SystemExit(f"the fitted model would not keep the order of `combined`: {w}")
    return {"lambda": lam, "weights": [round(float(v), 6) for v in w]}


def combine(rows: Rows, lam: float, dense: bool) -> np.ndarray:
    return (rows.cosine + rows.surroundings if dense else 0.0) + lam * rows.share


def predict(rows: Rows, model: dict, dense: bool) -> tuple[np.ndarray, np.ndarray]:
    """(relevance, position) of every row, as forgemem.recall.rank.fuse computes them."""
    combined = combine(rows, model["lambda"], dense)
    place = positions(rows, combined)
    a, b, c = model["weights"]
    return 1.0 / (1.0 + np.exp(-(a + b * combined + c * np.log(place)))), place


def recall_at(rows: Rows, score: np.ndarray, k: int) -> float:
    """Mean over questions of the share of their evidence turns among the k best-scored candidates."""
    place = positions(rows, score)
    found = np.zeros(len(rows.evidence))
    np.add.at(found, rows.question, rows.relevant * (place <= k))
    asked = np.unique(rows.question)
    return float(np.mean(found[asked] / rows.evidence[asked]))


def minmax(rows: Rows) -> np.ndarray:
    """The fusion this model replaces: each leg min-max normalised per question, 0.5 / 0.5."""
    out = np.zeros(len(rows.question))
    for leg in (rows.bm25, rows.cosine):
        lo = np.full(len(rows.evidence), np.inf)
        hi = np.full(len(rows.evidence), -np.inf)
        np.minimum.at(lo, rows.question, leg)
        np.maximum.at(hi, rows.question, leg)
        span = (hi - lo)[rows.question]
        flat = np.where(hi[rows.question] > 0, 1.0, 0.0)
        out += 0.5 * np.where(span > 1e-12, (leg - lo[rows.question]) / np.where(span > 1e-12, span, 1.0), flat)
    return out


def shown_stats(rows: Rows, p: np.ndarray, place: np.ndarray, floor: float) -> tuple[float, float, float, float]:
    """(questions with a hit shown, hits shown per question, precision of those, evidence recall)."""
    shown = (place <= SHOWN) & (p >= floor)
    asked = np.unique(rows.question)
    count = np.zeros(len(rows.evidence))
    found = np.zeros(len(rows.evidence))
    np.add.at(count, rows.question[shown], 1)
    np.add.at(found, rows.question[shown], rows.relevant[shown])
    precision = float(rows.relevant[shown].mean()) if shown.any() else float("nan")
    return (float(np.mean(count[asked] > 0)), float(np.mean(count[asked])), precision,
            float(np.mean(found[asked] / rows.evidence[asked])))


def f_half(stats: tuple[float, float, float, float]) -> float:
    """F0.5 of the hits shown: precision counts twice as much as evidence recall (a wrong memory in an
    agent's context costs more than a missing one)."""
    precision, recall = stats[2], stats[3]
    return 0.0 if not precision + recall or precision != precision else 1.25 * precision * recall / (
        0.25 * precision + recall)


def choose_floor(rows: Rows, p: np.ndarray, place: np.ndarray) -> float:
    """The lowest floor whose F0.5 is within FLOOR_TOLERANCE of the best: closer than that is noise on a few
    hundred questions, and a floor that hides a memory the agent needed costs the most where scores run a
    little low (stores without capture sessions, where no neighbour lends)."""
    scores = {f: round(f_half(shown_stats(rows, p, place, f)), 6) for f in FLOORS}
    best = max(scores.values())
    return float(min(f for f, score in scores.items() if score >= best - FLOOR_TOLERANCE))


def report(rows: Rows, model: dict, dense: bool, label: str) -> None:
    p, place = predict(rows, model, dense)
    y = rows.relevant
    top = place <= SHOWN
    base = float(y[top].mean())
    print(f"\n{label}: {len(np.unique(rows.question))} questions, {len(y)} candidates, "
          f"{int(top.sum())} in the top {SHOWN}")
    print(f"  Brier score, top {SHOWN}: {np.mean((p[top] - y[top]) ** 2):.4f} "
          f"(predicting the base rate {base:.3f} for all: {np.mean((base - y[top]) ** 2):.4f}); "
          f"all candidates: {np.mean((p - y) ** 2):.5f}")
    clipped = np.clip(p[top], 1e-9, 1 - 1e-9)
    print(f"  log loss, top {SHOWN}: {-np.mean(y[top] * np.log(clipped) + (1 - y[top]) * np.log(1 - clipped)):.4f}")
    print(f"  reliability, top {SHOWN} (predicted relevance bin: hits, mean predicted, share relevant):")
    bins = np.minimum((p * 10).astype(int), 9)
    gap = 0.0
    for b in range(10):
        m = top & (bins == b)
        if m.any():
            gap += m.sum() * abs(p[m].mean() - y[m].mean())
            print(f"    {b / 10:.1f}-{(b + 1) / 10:.1f}  {int(m.sum()):5d}  {p[m].mean():.3f}  {y[m].mean():.3f}")
    print(f"  expected calibration error, top {SHOWN}: {gap / top.sum():.4f}")
    if dense:
        print(f"  R@5 / R@10: calibrated {recall_at(rows, p, 5):.3f} / {recall_at(rows, p, 10):.3f}, "
              f"min-max fusion (before) {recall_at(rows, minmax(rows), 5):.3f} / {recall_at(rows, minmax(rows), 10):.3f}")
    print(f"  floor: questions with a hit shown, hits shown per question, precision, evidence recall, F0.5 "
          f"(top {SHOWN})")
    for floor in FLOORS:
        stats = shown_stats(rows, p, place, floor)
        print(f"    {floor:.2f}  {stats[0]:.3f}  {stats[1]:.2f}  {stats[2]:.3f}  {stats[3]:.3f}  {f_half(stats):.3f}")


def calibration_json(rows: Rows) -> tuple[str, dict]:
    fitting = rows.subset(np.isin(np.array(rows.names)[rows.conversation], FIT))
    lexical = fitting.subset(fitting.lexical)
    dense_model = fit_mode(fitting, dense=True)
    lexical_model = fit_mode(lexical, dense=False)
    p, place = predict(fitting, dense_model, True)
    shipped = rank_module.calibration()["dense"]["lambda"]
    if dense_model["lambda"] != shipped:
        print(f"note: lambda moved ({shipped} -> {dense_model['lambda']}); the surroundings were computed with the "
              "old one: run this script again")
    data = {
        "dense": dense_model,
        "lexical_only": lexical_model,
        "floor": choose_floor(fitting, p, place),
        "meta": {
            "relevance": "probability that a memory is one the question needs (a LoCoMo evidence turn)",
            "fit_on": list(FIT),
            "held_out": list(HELD_OUT),
            "questions": int(len(np.unique(fitting.question))),
            "candidates": int(len(fitting.question)),
            "l2": L2,
            "script": "benchmarks/fit_recall_calibration.py",
        },
    }
    return json.dumps(data, indent=1) + "\n", data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", type=Path, default=bq.DEFAULT_LOCOMO)
    parser.add_argument("--check", action="store_true", help="compare with the shipped file, write nothing")
    parser.add_argument("--out", type=Path, default=rank_module.CALIBRATION)
    args = parser.parse_args()
    if not args.locomo.is_file():
        print(f"skipped: {args.locomo} is not there (the LoCoMo development split lives in shared/eval/)")
        return 0
    rows = collect(args.locomo)
    text, data = calibration_json(rows)
    held = rows.subset(np.isin(np.array(rows.names)[rows.conversation], HELD_OUT))
    print(f"fitted on {', '.join(FIT)}; lambda {data['dense']['lambda']}, weights {data['dense']['weights']}; "
          f"lexical-only weights {data['lexical_only']['weights']}; floor {data['floor']}")
    fitting = rows.subset(np.isin(np.array(rows.names)[rows.conversation], FIT))
    report(fitting, data["dense"], True, f"fitted on ({', '.join(FIT)}), with the embedding model")
    report(held, data["dense"], True, f"held out ({', '.join(HELD_OUT)}), with the embedding model")
    report(held.subset(held.lexical), data["lexical_only"], False, "held out, lexical only")
    if args.check:
        same = args.out.is_file() and args.out.read_text(encoding="utf-8") == text
        print(f"\n{args.out}: {'the same bytes' if same else 'DIFFERS from a fresh fit'}")
        return 0 if same else 1
    args.out.write_text(text, encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
