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
#: the development session sets (tests/fixtures/capture_v2_dev*.yaml), read sentence by sentence as training rows
#: (`session_rows`). Never the blind held-out sets (capture_v2_heldout2.yaml and later): they only measure.
SESSION_SETS = tuple(ROOT / "tests" / "fixtures" / f"capture_v2_{name}.yaml"
                     for name in ("heldout", "dev2", "dev3", "dev4", "dev5", "dev6", "dev7", "dev8", "dev9", "dev10",
                                 "dev11", "dev12", "dev13", "dev14", "dev15"))
#: development sets read for what goes wrong but never trained on, so that the next change to the training data can be
#: checked on sessions no model was fitted to (capture_v2_dev16.yaml … dev25.yaml). Sets 20-25 were written to be
#: trained on, but training on them did not help: on validation sets 16-19 the heads went from 73 to 74 correct memories
#: of 110 while writing 118 -> 131 (precision 0.619 -> 0.565), and choosing the threshold on session rows only gave 72
#: of 115 (measured 2026-11-27 with the relation changes of 0ee620e)
VALIDATION_SETS = tuple(ROOT / "tests" / "fixtures" / f"capture_v2_dev{n}.yaml" for n in range(16, 26))
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


def session_rows(paths=SESSION_SETS, units=None, similar=None) -> list[dict]:
    """Training rows from labelled sessions: each sentence of a person's turn, with the agent's turn before it.

    A sentence holding every word of an expected memory is durable, with that memory's (first) category and
    scope; a sentence of a turn holding no expected memory is not durable; the other sentences of a turn that
    holds one (its reasons, its lead-in) are left out. A sentence `similar(sentence, texts)` finds close to a
    seed memory or to a durable sentence of the session is left out too: a rule said again, or changed later in
    the same pass, is not "nothing lasting" even though nothing is written for it.
    """
    import yaml

    def first(value):
        return value[0] if isinstance(value, list) else value

    rows: list[dict] = []
    for path in paths:
        if not path.is_file():
            continue
        for case in yaml.safe_load(path.read_text(encoding="utf-8")):
            expect = [want for want in case.get("expect") or [] if want.get("words")]
            said = []  # (row id, the agent's turn before, the turn's sentences, {sentence: the memory it holds})
            for n, items in enumerate(case.get("passes") or [case["turns"]]):
                before = ""
                for t, item in enumerate(items):
                    (role, text), = item.items()
                    if role != "user":
                        before = str(text)
                        continue
                    pieces = units(str(text)) or [str(text)]
                    holds = {i: want for i, piece in enumerate(pieces) for want in expect
                             if all(str(w).lower() in piece.lower() for w in want["words"])}
                    said.append((f"{path.stem}:{case['name']}:{n}:{t}", before, pieces, holds))
                    before = ""
            durable = [pieces[i] for _, _, pieces, holds in said for i in holds]
            known = [str(item["text"]) for item in case.get("existing") or []] + durable
            for row_id, before, pieces, holds in said:
                for i, piece in enumerate(pieces):
                    want = holds.get(i)
                    if want is None and (holds or (similar and known and similar(piece, known))):
                        continue
                    rows.append({
                        "id": f"{row_id}:{i}", "extra": True,
                        "context": [{"role": "assistant", "text": before}] if before else [],
                        "text": piece, "durable": want is not None, "kind": "rule" if want else "other",
                        "category": first(want["category"]) if want else None,
                        "scope": first(want["scope"]) if want else None, "memory": None,
                        # a writer who allowed several kinds or stores: the row trains neither head of those
                        "category_open": bool(want) and isinstance(want["category"], list) and len(want["category"]) > 1,
                        "scope_open": bool(want) and isinstance(want["scope"], list) and len(want["scope"]) > 1,
                    })
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
