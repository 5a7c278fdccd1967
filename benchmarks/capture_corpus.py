"""The capture corpus (../shared/eval/capture/) and the one split every trainer and benchmark uses.

    from capture_corpus import utterances, pairs, split, TEST

A row is in the test split when the SHA-256 of its id, read as a number, is 0 mod 5
(20 %, fixed, independent of the rows' order and of anything learned). Trainers fit on
`split(rows)[TRAIN]` only; every figure reported on the corpus comes from `TEST` rows
(or from cross-validation over the five folds, `fold(id)`, said so where used: the pairs'
test split alone is 16 pairs). The six labelled
transcripts are a test set as a whole: nothing is trained on them.

Rows written by this project (tests/fixtures/capture_extra.jsonl: languages and long
rambling turns the corpus is thin on) are training data only, never test rows.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "eval" / "capture"
#: this project's own training rows: capture_extra.jsonl (languages, real-style follow-ups, confirmations),
#: capture_extra2.jsonl (320 rows written like real sessions: every row with the agent's turn before it,
#: hard decoys, the category boundaries, run-on turns)
#: capture_extra3.jsonl (360 rows by a third writer: hard negatives real sessions are full of — bug reports,
#: status remarks, venting, task-scoped instructions, questions without a "?", reasons said apart from their rule)
#: capture_extra4.jsonl (260 rows by a fourth writer who saw no test or development set: 110 in German, Spanish,
#: French, Portuguese, Italian and Dutch, 70 long English turns with at most one rule buried in them, 80 hard
#: short rows: rules without marker words, facts about the person, status reports, anecdotes)
EXTRAS = tuple(ROOT / "tests" / "fixtures" / f"capture_extra{n}.jsonl" for n in ("", "2", "3", "4"))
TRAIN, TEST = "train", "test"


def available() -> bool:
    return (CORPUS / "utterances.jsonl").is_file()


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def utterances(extra: bool = True) -> list[dict]:
    """The corpus's utterances, plus this project's own extra training rows (marked `extra: true`)."""
    rows = _jsonl(CORPUS / "utterances.jsonl")
    for path in EXTRAS if extra else ():
        if path.is_file():
            rows += [{**row, "extra": True} for row in _jsonl(path)]
    return rows


def pairs() -> list[dict]:
    return _jsonl(CORPUS / "pairs.jsonl")


def fold(row_id: str) -> int:
    """0–4: fold 0 is the test split; folds 1–4 are for cross-validation inside TRAIN."""
    return int(hashlib.sha256(row_id.encode()).hexdigest(), 16) % 5


def part(row_id: str) -> str:
    return TEST if fold(row_id) == 0 else TRAIN


def split(rows: list[dict]) -> dict[str, list[dict]]:
    """{TRAIN: [...], TEST: [...]}; extra rows are always TRAIN."""
    out: dict[str, list[dict]] = {TRAIN: [], TEST: []}
    for row in rows:
        out[TRAIN if row.get("extra") else part(row["id"])].append(row)
    return out


def transcripts() -> list[tuple[Path, dict]]:
    """(transcript file, its labels) for the six labelled Claude Code sessions."""
    import yaml

    labels = yaml.safe_load((CORPUS / "transcripts" / "labels.yaml").read_text(encoding="utf-8"))
    return [(CORPUS / "transcripts" / entry["file"], entry) for entry in labels["transcripts"]]
