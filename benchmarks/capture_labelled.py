"""Score a classifier on the labelled conversations in tests/fixtures/capture_cases.yaml.

Each case runs in its own temporary pair of stores, with its `existing`
memories written first; a written memory matches an expected one when the
category and scope agree, the text holds every expected word, and the
relation (new, or supersedes/refines/… the named existing memory) agrees.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from forgemem.capture.capturer import Capturer
from forgemem.capture.classify import Batch
from forgemem.capture.transcripts import Turn
from forgemem.recall.engine import RecallEngine
from forgemem.workspace import Workspace, init_forge_dir

CASES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "capture_cases.yaml"


@dataclass
class CaseResult:
    name: str
    expected: int
    written: list[dict]
    matched: int
    missed: list[dict] = field(default_factory=list)
    wrong: list[dict] = field(default_factory=list)
    change_of_mind: int = 0  # expected supersessions
    superseded: int = 0  # of which written as supersessions
    stale_current: list[str] = field(default_factory=list)  # replaced existing memories still current
    detected: int = 0  # expected memories found by their words alone (category, scope and relation not checked)
    why_missed: dict = field(default_factory=dict)  # missed expected memories by the first check that failed


def load_cases(path: Path = CASES) -> list[dict]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def run_case(case: dict, embedder, classifier_factory=None) -> CaseResult:
    """Run a case's turns (or its `passes`, one capture pass each) in fresh stores; compare with `expect`."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        init_forge_dir(root / "repo" / ".forge")
        init_forge_dir(root / "home" / ".forge")
        ws = Workspace.open(cwd=root, repo_dir=root / "repo/.forge/memory", user_dir=root / "home/.forge/memory")
        keys = {}
        for item in case.get("existing") or []:
            memory, _ = ws.add(item["text"], scope=item["scope"], category=item["category"])
            keys[memory.id] = item["key"]
        engine = RecallEngine(ws, embedder=embedder)
        classifier = classifier_factory(ws) if classifier_factory else None
        capturer = Capturer(ws, engine, classifier=classifier)
        written, memories = [], []
        index = 0
        for items in case.get("passes") or [case["turns"]]:
            turns = []
            for item in items:
                (role, text), = item.items()
                if not isinstance(text, str):  # YAML reads a bare yes / no / on as a boolean
                    raise ValueError(f"{case['name']}: a {role} turn is {text!r}, not text; quote it in the YAML")
                turns.append(Turn("case", index, role, text, None, "case.jsonl", index + 1, index + 1, 0, 0))
                index += 1
            memories.extend(capturer.run(Batch(turns, "cadence", "case", "case.jsonl")).written)
        snap = ws.load()
        for m in memories:
            written.append({"id": m.id, "category": m.category, "scope": m.scope, "text": m.body,
                            "supersedes": list(m.supersedes), "head": snap.graph.is_head(m.id)})
        stale = [keys[i] for i in keys if not snap.graph.is_head(i)]
    return _compare(case, written, keys, stale)


def _compare(case: dict, written: list[dict], keys: dict, stale: list[str]) -> CaseResult:
    expected = list(case.get("expect") or [])
    unmatched = list(written)
    matched, missed = 0, []
    changes = sum(1 for e in expected if str(e.get("relation", "")).startswith("supersedes"))
    superseded = 0
    found: dict[str, dict] = {}  # expected key -> the written memory it matched
    for want in expected:
        hit = next((w for w in unmatched if _matches(want, w, keys, found)), None)
        if hit is None:
            missed.append(want)
            continue
        unmatched.remove(hit)
        if want.get("key"):
            found[want["key"]] = hit
        matched += 1
        if str(want.get("relation", "")).startswith("supersedes"):
            superseded += 1
    result = CaseResult(case["name"], len(expected), written, matched, missed, unmatched, changes, superseded)
    loose = list(written)
    for want in expected:
        hit = next((w for w in loose if all(word.lower() in w["text"].lower() for word in want.get("words", []))),
                   None)
        if hit is not None:
            loose.remove(hit)
            result.detected += 1
    for want in missed:
        reason = _why_missed(want, written, keys, found)
        result.why_missed[reason] = result.why_missed.get(reason, 0) + 1
    result.stale_current = [name for name in keys.values() if name not in stale and any(
        str(e.get("relation", "")) == f"supersedes:{name}" for e in expected)]
    return result


def _why_missed(want: dict, written: list[dict], keys: dict, found: dict) -> str:
    """The first check a missed expected memory fails against the written memories holding its words:
    "not written" (none holds them), else "category", "scope" or "relation" (of the closest one)."""
    holding = [w for w in written if all(word.lower() in w["text"].lower() for word in want.get("words", []))]
    if not holding:
        return "not written"
    if not any(_one_of(want["category"], w["category"]) for w in holding):
        return "category"
    if not any(_one_of(want["category"], w["category"]) and _one_of(want["scope"], w["scope"]) for w in holding):
        return "scope"
    return "relation"


def _one_of(want, got) -> bool:
    return got in want if isinstance(want, list) else got == want


def _matches(want: dict, got: dict, keys: dict | None = None, found: dict | None = None) -> bool:
    if not _one_of(want["category"], got["category"]) or not _one_of(want["scope"], got["scope"]):
        return False
    if any(word.lower() not in got["text"].lower() for word in want.get("words", [])):
        return False
    relation = str(want.get("relation", "new"))
    if relation == "new":
        return not got["supersedes"]
    target = relation.split(":", 1)[1]
    ids = {i for i, k in (keys or {}).items() if k == target}
    if found and target in found:
        ids.add(found[target]["id"])
    return bool(set(got["supersedes"]) & ids)


def score(results: list[CaseResult]) -> dict:
    written = sum(len(r.written) for r in results)
    expected = sum(r.expected for r in results)
    matched = sum(r.matched for r in results)
    changes = sum(r.change_of_mind for r in results)
    return {
        "cases": len(results),
        "expected": expected,
        "written": written,
        "correct": matched,
        "precision": matched / written if written else 1.0,
        "detected_precision": sum(r.detected for r in results) / written if written else 1.0,
        "detected_recall": sum(r.detected for r in results) / expected if expected else 1.0,
        "recall": matched / expected if expected else 1.0,
        "changes_of_mind": changes,
        "written_as_supersession": sum(r.superseded for r in results),
    }
