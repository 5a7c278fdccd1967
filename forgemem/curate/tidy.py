"""`forgemem tidy`: a store kept clean, one decision at a time.

It gathers what needs a person, in this order:

1. **near-duplicates**: pairs of current memories (both stores) at cosine ≥
   `nearby.NEAR_AT`; answers: keep the newer text or the older one (one new
   version supersedes both: nothing is deleted), both stay, skip. Across stores
   (a version never crosses stores): keep the repo one or the user one (the
   other is retracted), both stay, skip;
2. **conflicts**: unresolved `contradicts` edges and forks (`forgemem conflicts`);
   an answer keeps one side's text in one version superseding every head
   (`curate.resolve`), or, across stores, retracts the other sides;
3. **likely contradictions**: pairs on the same subject where one is said in the
   negative, or near-duplicates that differ in a value (`nearby.judge`), answered
   like near-duplicates;
4. **stale**: repo memories citing a path or symbol that no longer exists
   (`curate.stale`); forget (a retraction), keep, skip;
5. **long unused**: current memories at least `unused_days` old that no recall
   or injection returned in that time (the usage data's access log; judged only
   once the log reaches back that far); forget, keep, skip.

Pairs a person already linked (any edge between them) are not asked about.
"Both stay" and "keep" are remembered (`Usage.decide`, in the user's usage data,
by memory id: a new version is asked about again; an unused memory kept is asked
about again after another `unused_days`); "skip" leaves the question for next time.

What `--yes` does (each question's `default`, also what Enter picks): a
same-store near-duplicate pair becomes one version with the newer text; a stale
memory that is also long unused is retracted (two signs agree); everything else
is left as it is — which side of a contradiction holds, and whether a rule
nobody recalled is still true, are for a person. Every change is a `Workspace`
write (a new version or a retraction, never a deleted file), made under the
stores' lock on a fresh read: a memory that changed since it was asked about is
skipped, and said.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from forgemem.curate import nearby
from forgemem.store.model import Memory, format_timestamp, one_line, short
from forgemem.workspace import Snapshot, Workspace

UNUSED_DAYS = 90
DAY = 86400.0
KINDS = ("duplicate", "conflict", "contradiction", "stale", "unused")


@dataclass
class Question:
    """One decision: what it is about, the answers (answer -> what it does) and the default."""

    kind: str  # one of KINDS
    memories: list[Memory]  # a pair: [older, newer]; a conflict: its heads; stale, unused: the memory
    detail: str
    choices: dict[str, str]
    default: str  # what Enter and --yes choose
    key: str = ""  # how a "keep as it is" answer is remembered
    score: float | None = None
    reason: str = ""  # the retraction's reason, for "forget"

    def to_dict(self) -> dict:
        return {"kind": self.kind, "ids": [m.id for m in self.memories],
                "memories": [{"id": m.id, "scope": m.scope, "category": m.category, "text": m.body,
                              "created_at": format_timestamp(m.created_at)} for m in self.memories],
                "detail": self.detail, "score": None if self.score is None else round(self.score, 4),
                "choices": self.choices, "default": self.default}


@dataclass
class Report:
    questions: list[Question]
    notes: list[str] = field(default_factory=list)
    actions: list[dict] = field(default_factory=list)  # one per question answered
    stopped: bool = False  # the person quit before the last question

    def to_dict(self) -> dict:
        return {"questions": [q.to_dict() for q in self.questions], "notes": self.notes,
                "actions": self.actions, "stopped": self.stopped}


# ------------------------------------------------------------------ finding


def find(workspace: Workspace, *, unused_days: int = UNUSED_DAYS, root: Path | None = None,
         now: float | None = None, progress=None, on_notice: Callable[[str], None] | None = None,
         embedder=None) -> Report:
    """Every question `tidy` would ask, in order; changes nothing (the index cache is brought up to date).
    `embedder`: one already loaded (else the workspace's model is loaded)."""
    from forgemem.recall.engine import RecallEngine

    now = time.time() if now is None else now
    engine = RecallEngine(workspace, on_notice=on_notice, embedder=embedder)
    engine.refresh(progress=progress)
    snap = engine.snapshot
    heads = nearby.current(snap.heads())
    decided = _decisions(workspace)
    report = Report([])
    pairs: list[Question] = []
    if engine.embedder is None:
        report.notes.append(f"near-duplicates and likely contradictions not looked for: {engine.lexical_only_reason}")
    else:
        pairs = _pairs(snap, heads, engine, decided)
    report.questions += [q for q in pairs if q.kind == "duplicate"]
    report.questions += _conflicts(snap)
    report.questions += [q for q in pairs if q.kind == "contradiction"]
    unused, note = _unused(workspace, heads, unused_days, now, decided)
    if note:
        report.notes.append(note)
    root = root or _repo_root(workspace)
    stale = _stale(heads, root, decided, unused, unused_days) if root is not None else []
    report.questions += stale
    flagged = {q.memories[0].id for q in stale}
    report.questions += [_unused_question(m, last, unused_days) for m, last in unused if m.id not in flagged]
    for line in report.notes:
        (on_notice or (lambda _: None))(line)
    return report


def _repo_root(workspace: Workspace) -> Path | None:
    from forgemem.store.folder import find_repo_root

    repo = workspace.stores.get("repo")
    return find_repo_root(repo.memory_dir) if repo is not None and repo.exists() else None


def _decisions(workspace: Workspace) -> dict[str, float]:
    usage = _decision_store(workspace)
    return usage.decisions() if usage is not None else {}


def _decision_store(workspace: Workspace):
    usages = workspace.usage()
    return usages.get("user") or usages.get("repo")


def _pair_key(a: Memory, b: Memory) -> str:
    return "pair:" + ":".join(sorted((a.id, b.id)))


def _pairs(snap: Snapshot, heads: list[Memory], engine, decided: dict[str, float]) -> list[Question]:
    from forgemem.curate.consolidate import vectors_of

    if len(heads) < 2:
        return []
    stored: dict[str, bytes] = {}
    for scope, index in engine.indexes().items():
        stored.update(index.vectors_for([m for m in heads if m.scope == scope]))
    linked = {frozenset((m.id, r.id)) for m in snap.memories for r in m.related}
    questions = []
    for older, newer, score, kind, why in nearby.near_pairs(heads, vectors_of(heads, engine.embedder, stored)):
        key = _pair_key(older, newer)
        if key in decided or frozenset((older.id, newer.id)) in linked:
            continue
        questions.append(_pair_question(older, newer, score, kind, why, key))
    return questions


def _pair_question(older: Memory, newer: Memory, score: float, kind: str, why: str, key: str) -> Question:
    label = f"cosine {score:.2f}" if kind == "duplicate" else f"{why}; cosine {score:.2f}"
    if older.scope == newer.scope:
        choices = {"newer": f"keep the newer text ({short(newer.id)}): one new version supersedes both",
                   "older": f"keep the older text ({short(older.id)}): one new version supersedes both"}
        default = "newer" if kind == "duplicate" else "skip"
    else:
        repo, user = (older, newer) if older.scope == "repo" else (newer, older)
        choices = {"repo": f"keep the repo memory ({short(repo.id)}); retract the user one",
                   "user": f"keep the user memory ({short(user.id)}); retract the repo one"}
        default = "skip"
    choices["both"] = "both stay as they are (not asked again)"
    choices["skip"] = "decide later"
    return Question(kind, [older, newer], label, choices, default, key, score)


def _conflicts(snap: Snapshot) -> list[Question]:
    from forgemem.curate.resolve import heads_to_resolve

    seen: set[frozenset] = set()
    questions = []
    graph = snap.graph
    starts = [e.source for e in graph.contradictions()] + list(graph.forks())  # a fork: from its base
    for start in starts:
        heads = heads_to_resolve(snap, start)
        ids = frozenset(m.id for m in heads)
        if ids in seen:
            continue
        seen.add(ids)
        fork = len(graph.head_of(start)) > 1
        same = len({m.scope for m in heads}) == 1
        choices = {str(n): (f"keep {short(m.id)}'s text: one new version supersedes all {len(heads)}" if same
                            else f"keep {short(m.id)}; retract the others (they are in different stores)")
                   for n, m in enumerate(heads, start=1)}
        choices["skip"] = "decide later (`forgemem resolve` writes a text of your own)"
        detail = "fork: newest versions of one memory" if fork else "unresolved contradiction"
        questions.append(Question("conflict", heads, detail, choices, "skip"))
    return questions


def _unused(workspace: Workspace, heads: list[Memory], days: int, now: float,
            decided: dict[str, float]) -> tuple[list[tuple[Memory, float | None]], str]:
    """(memory, when last recalled or None) for the long-unused heads; a note when the log is too young."""
    window = now - days * DAY
    found: list[tuple[Memory, float | None]] = []
    young = []
    for scope, usage in sorted(workspace.usage().items()):
        mine = [m for m in heads if m.scope == scope]
        if not mine:
            continue
        since = usage.recorded_since()
        if since is None or since > window:
            young.append(scope)
            continue
        access = usage.access_counts()
        for memory in mine:
            last = access.get(memory.id, {}).get("last")
            kept = decided.get(f"unused:{memory.id}")
            if memory.created_at.timestamp() <= window and (last is None or last < window) \
                    and (kept is None or kept < window):
                found.append((memory, last))
    note = ""
    if young:
        note = (f"long-unused memories not judged in the {' and '.join(young)} store(s): the access log does not "
                f"reach back {days} days yet")
    return found, note


def _unused_question(memory: Memory, last: float | None, days: int) -> Question:
    when = "never recalled" if last is None else f"last recalled {time.strftime('%Y-%m-%d', time.gmtime(last))}"
    reason = f"not recalled or injected in {days} days"
    return Question("unused", [memory], f"{reason} ({when})",
                    {"forget": "retract it", "keep": f"it still holds (asked again after another {days} days)",
                     "skip": "decide later"}, "skip", f"unused:{memory.id}", reason=reason)


def _stale(heads: list[Memory], root: Path, decided: dict[str, float],
           unused: list[tuple[Memory, float | None]], days: int) -> list[Question]:
    from forgemem.curate.stale import GONE, find_stale

    cited: dict[str, list[str]] = {}
    memories = {m.id: m for m in heads}
    for finding in find_stale(heads, root):
        if finding.kind in GONE and f"stale:{finding.memory.id}" not in decided:
            cited.setdefault(finding.memory.id, []).append(finding.cites())
    idle = {m.id for m, _ in unused}
    questions = []
    for memory_id, lines in cited.items():
        both = memory_id in idle
        reason = "; ".join(lines)
        questions.append(Question("stale", [memories[memory_id]],
                                  reason + (f"; not recalled or injected in {days} days" if both else ""),
                                  {"forget": "retract it", "keep": "it still holds (not asked again until it changes)",
                                   "skip": "decide later"},
                                  "forget" if both else "skip", f"stale:{memory_id}", reason=reason))
    return questions


# ------------------------------------------------------------------ deciding


def apply(workspace: Workspace, question: Question, answer: str) -> dict:
    """Carry out one answer, under the stores' lock on a fresh read; what was done."""
    if answer not in question.choices:
        from forgemem.errors import UsageError

        raise UsageError(f"{answer!r} is not an answer here (expected {', '.join(question.choices)})")
    done = {"kind": question.kind, "ids": [m.id for m in question.memories], "answer": answer}
    if answer == "skip":
        return {**done, "done": "skipped"}
    with workspace.writing():
        snap = workspace.load()
        moved = [m for m in question.memories if m.id not in snap.graph.memories
                 or not snap.graph.is_head(m.id) or snap.get(m.id).body != m.body]
        if moved:
            return {**done, "done": "skipped",
                    "why": f"{short(moved[0].id)} is no longer current (an earlier answer or another process changed it)"}
        if answer in ("both", "keep"):
            usage = _decision_store(workspace)
            if usage is not None:
                usage.decide(question.key)
            return {**done, "done": "kept"}
        if answer == "forget":
            retraction, _ = workspace.forget(question.memories[0].id, reason=question.reason)
            return {**done, "done": "retracted", "written": [retraction.id]}
        return {**done, **_keep_one(workspace, snap, question, answer)}


def _keep_one(workspace: Workspace, snap: Snapshot, question: Question, answer: str) -> dict:
    """Keep one memory of a pair or conflict: one version with its text over all (one store), or retract
    the others (several stores)."""
    memories = question.memories
    if answer in ("newer", "older"):
        kept = memories[1] if answer == "newer" else memories[0]
    elif answer in ("repo", "user"):
        kept = next(m for m in memories if m.scope == answer)
    else:
        kept = memories[int(answer) - 1]
    if len({m.scope for m in memories}) > 1:
        written = []
        for other in memories:
            if other.id != kept.id:
                retraction, _ = workspace.forget(other.id, reason=f"the same holds in {kept.id} "
                                                                    f"({kept.scope} store)")
                written.append(retraction.id)
        return {"done": "retracted", "written": written, "kept": kept.id}
    memory, _ = workspace.add(kept.body, scope=kept.scope, category=kept.category,
                              supersedes=[m.id for m in memories], source=kept.extra.get("source"),
                              snapshot=snap)
    return {"done": "superseded", "written": [memory.id], "kept": kept.id}


def tidy(workspace: Workspace, *, ask: Callable[[Question, int, int], str | None] | None = None,
         yes: bool = False, dry_run: bool = False, unused_days: int = UNUSED_DAYS, root: Path | None = None,
         progress=None, on_notice: Callable[[str], None] | None = None,
         said: Callable[[dict], None] | None = None, embedder=None) -> Report:
    """Find every question, then (unless `dry_run`) answer each: its default with `yes`, else `ask(question,
    n, total)` (None: stop here). `said(action)` hears each action as it is done."""
    from forgemem.errors import UsageError

    if unused_days < 1:
        raise UsageError(f"--unused-days must be at least 1, not {unused_days}")
    if not (dry_run or yes or ask):
        raise UsageError("tidy needs answers: run it in a terminal, or pass --yes or --dry-run")
    report = find(workspace, unused_days=unused_days, root=root, progress=progress, on_notice=on_notice,
                  embedder=embedder)
    if dry_run:
        return report
    total = len(report.questions)
    for n, question in enumerate(report.questions, start=1):
        answer = question.default if yes else ask(question, n, total)  # type: ignore[misc]
        if answer is None:
            report.stopped = True
            break
        action = apply(workspace, question, answer)
        report.actions.append(action)
        if said is not None:
            said(action)
    return report


def describe(memory: Memory) -> str:
    """A memory as a question shows it: short id, scope/category, date, its text on one line."""
    return (f"{short(memory.id)}  {memory.scope}/{memory.category}  {format_timestamp(memory.created_at)[:10]}  "
            f"{one_line(memory, 160)}")
