"""`forgemem import`: rules from files become memories; importing again changes only what changed.

For each file, every rule is matched against the memories that came from that file before
(`source.file`, every version of each chain):

- the same text (compared normalised: case, blank space, emphasis, end punctuation) is
  **unchanged**, and nothing is written, even when the memory was edited or retracted since:
  the store's later word stands;
- the same text as another current memory (from another file, or added by hand) is a
  **duplicate**, and nothing is written;
- a rule that is not there but resembles one that was (same id in another tool, or similar
  words, same section, near the same place) is **changed**: a new version that supersedes it,
  keeping its category and scope;
- anything else is **new**, with category and scope from the classifier (`interop.classify`);
- a memory whose rule is gone from the file is **removed**: reported, never deleted or retracted.

Every file is read and checked before anything is written, so a bad file stops the whole import
with nothing written. Memories are written only through `Workspace.add`, with `trigger: import`
and `source: {file, lines, section, …}`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forgemem.errors import UsageError, require_choice
from forgemem.interop import markdown, reading
from forgemem.interop.markdown import Rule, normalise
from forgemem.store.model import SCOPES, Memory
from forgemem.workspace import Snapshot, Workspace

ACTIONS = ("new", "changed", "unchanged", "duplicate", "removed")
#: how alike a rule and an earlier one must be to count as the same rule changed
SIMILAR = 0.6
SIMILAR_IN_SECTION = 0.4

Progress = Callable[[int, int], None]


@dataclass
class Item:
    action: str  # one of ACTIONS
    file: str  # the provenance key
    rule: Rule | None = None  # None for removed
    memory: Memory | None = None  # the memory matched (unchanged, duplicate), superseded (changed) or gone (removed)
    category: str | None = None
    scope: str | None = None
    why: str = ""
    written: Memory | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"action": self.action, "file": self.file}
        if self.rule is not None:
            data.update(lines=self.rule.lines, text=self.rule.text)
        if self.memory is not None:
            data["memory"] = self.memory.id
            if self.rule is None:
                data.update(lines=(self.memory.source.lines if self.memory.source else None), text=self.memory.body)
        if self.category:
            data.update(category=self.category, scope=self.scope)
        if self.why:
            data["why"] = self.why
        if self.written is not None:
            data.update(id=self.written.id, path=str(self.written.path))
        return data


@dataclass
class ImportReport:
    files: list[str]
    items: list[Item]
    dry_run: bool
    classifier: str = ""  # "dense" (sentence vectors) or "patterns"
    redacted: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def count(self, action: str, file: str | None = None) -> int:
        return sum(1 for i in self.items if i.action == action and (file is None or i.file == file))

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "files": [{"file": f, **{a: self.count(a, f) for a in ACTIONS}} for f in self.files],
            "counts": {a: self.count(a) for a in ACTIONS},
            "items": [i.to_dict() for i in self.items],
            "classifier": self.classifier,
            "redacted": self.redacted,
            "notes": self.notes,
        }


def repo_root(workspace: Workspace, cwd: Path) -> Path | None:
    """The folder provenance is relative to: the repo store's project, else the git root of `cwd`."""
    from forgemem.store.folder import find_repo_root

    repo = workspace.stores.get("repo")
    if repo is not None:
        return repo.forge_dir.parent.resolve()
    return find_repo_root(cwd)


def read_rules(paths: Sequence[Path], root: Path | None, fmt: str | None = None) -> dict[str, list[Rule]]:
    """Every rule of every file, by provenance key; raises (one sentence) on the first bad file."""
    from forgemem.interop import foreign

    if fmt is not None:
        if fmt not in foreign.FORMATS:
            raise UsageError(f"unknown format {fmt!r} for --from (expected one of: {', '.join(foreign.FORMATS)})")
        if len(paths) != 1:
            raise UsageError(f"--from {fmt} reads one export: name one file (or, for basic-memory, one folder)")
        found = foreign.read(fmt, paths[0], root)
        return {reading.file_key(path, root): rules for path, rules in found.items()}
    personal = [Path.home() / name for name in reading.USER_FILES]
    result: dict[str, list[Rule]] = {}
    for path in reading.expand(list(paths), root):
        text = reading.read_text(path)
        key = reading.file_key(path, root)
        scope = "user" if any(reading.same_file(path, p) for p in personal) else None
        if path.suffix == ".mdc":
            result[key] = markdown.cursor_rule(text, key, reading.shown(path), scope=scope)
        else:
            result[key] = markdown.rules_of(text, key, reading.shown(path), scope=scope)
    return result


def personal_key(key: str, root: Path | None) -> str:
    """How a memory in the user store names a repository's file: from the home folder (`~/src/shop/CLAUDE.md`),
    or from the repository's folder (`shop/CLAUDE.md`), so that one repository's `CLAUDE.md` is never taken
    for another's."""
    if root is None or key.startswith("~/") or Path(key).is_absolute():
        return key
    shown = reading.file_key(root / key, None)
    # where the full path would show the user's name, provenance keeps the file name alone: the repository's
    # folder name goes with it
    return shown if "/" in shown else f"{root.name}/{key}"


def plan(snap: Snapshot, rules: dict[str, list[Rule]], root: Path | None = None) -> list[Item]:
    """What importing these rules would do, file by file (category and scope of new ones still open)."""
    from forgemem.store.model import normalize_body
    from forgemem.store.redact import redact

    heads = [m for m in snap.heads()]
    by_text: dict[str, Memory] = {}
    for memory in heads:
        by_text.setdefault(normalise(memory.body), memory)
    items: list[Item] = []
    pending: dict[str, Item] = {}  # new in this import, by text: the same rule in a second file is a duplicate
    for key, found in rules.items():
        mine_items: list[Item] = []
        keys = {"repo": key, "user": personal_key(key, root)}
        mine = [m for m in snap.memories if _source_file(m) == keys.get(m.scope)]
        known: dict[str, Memory] = {normalise(m.body): m for m in mine}
        chains: dict[str, Memory] = {}  # the current memory of each chain that came from this file
        for memory in mine:
            for head_id in snap.graph.head_of(memory.id):
                chains.setdefault(head_id, snap.graph.memories[head_id])
        accounted: set[str] = set()
        open_rules: list[Rule] = []
        seen: set[str] = set()
        for rule in found:
            # compared as it will be stored: a redacted secret must not make it look changed every time
            text = normalise(redact(normalize_body(rule.text))[0])
            if text in seen:
                continue  # the same rule twice in one file
            seen.add(text)
            if text in known:
                mine_items.append(Item("unchanged", key, rule, known[text]))
                accounted.update(snap.graph.head_of(known[text].id))
            elif text in by_text:
                mine_items.append(Item("duplicate", key, rule, by_text[text]))
                accounted.add(by_text[text].id)
            elif text in pending:
                first = pending[text]
                assert first.rule is not None
                mine_items.append(Item("duplicate", key, rule, why=f"the same as {first.file}:{first.rule.lines}"))
            else:
                open_rules.append(rule)
        gone = [m for m in chains.values() if m.id not in accounted and not m.retracted]
        for rule, old in _pair(open_rules, gone):
            if old is None:
                item = Item("new", key, rule)
                pending[normalise(redact(normalize_body(rule.text))[0])] = item
            else:
                item = Item("changed", key, rule, old, old.category, old.scope, f"a new version of {old.short_id()}")
                gone.remove(old)
            mine_items.append(item)
        mine_items.sort(key=lambda i: i.rule.start if i.rule is not None else -1)
        items += mine_items + [Item("removed", key, None, m) for m in gone]
    return items


def _source_file(memory: Memory) -> str | None:
    source = memory.extra.get("source")
    return str(source["file"]) if isinstance(source, dict) and source.get("file") else None


_WORDS = re.compile(r"\w+")


def _pair(rules: list[Rule], gone: list[Memory]) -> list[tuple[Rule, Memory | None]]:
    """Each open rule with the vanished memory it most resembles (same id elsewhere, then words), one to one."""
    if not gone:
        return [(rule, None) for rule in rules]
    scored: list[tuple[float, int, int]] = []
    words = [set(_WORDS.findall(normalise(m.body))) for m in gone]
    for r, rule in enumerate(rules):
        text = normalise(rule.text)
        mine = set(_WORDS.findall(text))
        for g, memory in enumerate(gone):
            found = memory.extra.get("source")
            source: dict[str, Any] = found if isinstance(found, dict) else {}
            if rule.extra.get("id") and source.get("id") == rule.extra["id"]:
                scored.append((2.0, r, g))
                continue
            overlap = len(mine & words[g]) / len(mine | words[g]) if mine | words[g] else 0.0
            if overlap < 0.2:
                continue
            matcher = difflib.SequenceMatcher(None, text, normalise(memory.body))
            if matcher.quick_ratio() < SIMILAR_IN_SECTION:  # an upper bound, cheap: most pairs stop here
                continue
            ratio = matcher.ratio()
            same_section = bool(rule.section) and source.get("section") == rule.section
            if ratio >= SIMILAR or (same_section and ratio >= SIMILAR_IN_SECTION):
                scored.append((ratio + (0.1 if same_section else 0.0), r, g))
    chosen: dict[int, Memory] = {}
    used: set[int] = set()
    for _, r, g in sorted(scored, key=lambda s: (-s[0], s[1], s[2])):
        if r not in chosen and g not in used:
            chosen[r] = gone[g]
            used.add(g)
    return [(rule, chosen.get(r)) for r, rule in enumerate(rules)]


def import_files(workspace: Workspace, paths: Sequence[Path], cwd: Path, fmt: str | None = None,
                 dry_run: bool = False, scope: str | None = None, progress: Progress | None = None,
                 embedder: Any = "load") -> ImportReport:
    """Import the rules of `paths` (or, with `fmt`, of another tool's export); see the module's docstring.
    `scope` puts every new memory in that store instead of the one the classifier picks. `embedder`:
    "load" (the configured model, or the patterns alone when it cannot load), or one given."""
    from forgemem.interop.classify import classify

    if scope is not None:
        require_choice("scope", scope, SCOPES)
        workspace.store(scope)  # a clear error now when there is no such store, not after the classifier ran
    root = repo_root(workspace, cwd)
    if not paths:
        paths = reading.discover(root) if root is not None else []
        if not paths:
            raise UsageError("no instruction files here (CLAUDE.md, AGENTS.md, GEMINI.md, .cursorrules, "
                             ".cursor/rules/*.mdc, .github/copilot-instructions.md): name the files to import")
    rules = read_rules(paths, root, fmt)
    snap = workspace.load()
    items = plan(snap, rules, root)
    report = ImportReport(list(rules), items, dry_run)
    new = [i for i in items if i.action == "new"]
    if new:
        if embedder == "load":
            embedder = _load_embedder(workspace, report.notes)
        report.classifier = "dense" if embedder is not None else "patterns"
        assert all(i.rule is not None for i in new)
        for item, verdict in zip(new, classify([i.rule for i in new], embedder, "repo" in workspace.stores),  # type: ignore[misc]
                                 strict=True):
            item.category, item.scope, item.why = verdict.category, verdict.scope, verdict.why
            if scope is not None and scope != item.scope:
                item.scope, item.why = scope, f"{verdict.category}; {scope}: --scope"
    if dry_run:
        return report
    to_write = [i for i in items if i.action in ("new", "changed")]
    for done, item in enumerate(to_write, start=1):
        assert item.rule is not None
        rule = item.rule
        source = rule.source()
        if (item.scope if item.action == "new" else item.memory.scope if item.memory else None) == "user":
            source["file"] = personal_key(rule.file, root)
        memory, found = workspace.add(
            rule.text,
            scope=item.scope if item.action == "new" else None,
            category=item.category if item.action == "new" else None,
            tags=rule.tags or (item.memory.tags if item.memory is not None else ()),
            supersedes=[item.memory.id] if item.action == "changed" and item.memory is not None else (),
            trigger="import",
            source=source,
            snapshot=snap,
        )
        item.written = memory
        report.redacted += found
        if progress is not None:
            progress(done, len(to_write))
    return report


def _load_embedder(workspace: Workspace, notes: list[str]):
    from forgemem.index.embedding import EmbeddingUnavailable, load_embedder

    try:
        return load_embedder(workspace.config.embedding_model, on_export=notes.append)
    except EmbeddingUnavailable as exc:
        notes.append(f"categories decided without the embedding model ({exc})")
        return None
