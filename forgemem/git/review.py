"""`forgemem review`: a memory diff between two git states, explained as memory changes.

The repo store is read on both sides — a revision (`git ls-tree` + `git
cat-file --batch`), the index (`--staged`) or the working tree — parsed with
the normal file reader, and compared by memory id, not by text:

- added memories (category, scope, how they were captured, the quote);
- new versions (a memory that supersedes one of the old side: a word diff);
- hand edits (same id, changed text or fields) and proposed memories accepted;
- edges added or removed; conflicts (unresolved contradictions, forks) created
  or resolved;
- deleted files (a warning: memories should be superseded or forgotten);
- problems on the new side that the old side did not have.

`render_markdown` is written for a pull-request comment; `to_dict` for bots.

The user store is not in git, so its proposed memories (captured with
`capture_review: true`) never show in a diff: `git.proposals.personal_proposals`
lists them for the plain `forgemem review` (the working tree; never for a
revision range or `--staged`, which is what goes into a pull request), in a
section of their own.

Memories that cite a path or symbol gone on the new side (`stale`) are found by
`curate.stale.review`, which the command calls (this layer does not judge
memories against the code); they are rendered here.
"""

from __future__ import annotations

import difflib
import re
import subprocess
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from forgemem.config import FORGE_DIR, MEMORY_DIR
from forgemem.errors import Problem, UsageError
from forgemem.git.run import GIT, git, git_argv  # noqa: F401 - the way forgemem runs git (curate uses it too)
from forgemem.store.model import PROPOSED, Memory, one_line, short, short_ids, visible_controls

WORKTREE, INDEX = "worktree", "index"


# ------------------------------------------------------------------ reading a side


@dataclass
class Side:
    label: str
    memories: dict[str, Memory]
    problems: list[Problem]
    paths: dict[str, str]  # memory id -> path relative to the repository

    @cached_property
    def graph(self):
        from forgemem.store.graph import MemoryGraph

        return MemoryGraph(self.memories.values())


def _blob_id(data: bytes) -> str:
    """git's object id of a blob, so identical files on both sides are parsed once."""
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # noqa: S324 - git's own id


def _parse_all(blobs: dict[str, bytes], label: str, parsed: dict | None = None) -> Side:
    """Parse a side's files; `parsed` (blob id -> Memory or problems) is shared between sides."""
    from forgemem.store import memfile

    parsed = {} if parsed is None else parsed
    memories: dict[str, Memory] = {}
    problems: list[Problem] = []
    paths: dict[str, str] = {}
    for rel, data in sorted(blobs.items()):
        key = (_blob_id(data), rel)
        if key not in parsed:
            try:
                parsed[key] = memfile.parse_bytes(data, path=Path(rel))
            except memfile.MemoryFileError as exc:
                parsed[key] = exc.problems
        memory = parsed[key]
        if isinstance(memory, list):
            problems.extend(memory)
            continue
        if memory.id in memories:
            problems.append(Problem(Path(rel), f"duplicate id {memory.id} (also in {paths[memory.id]})"))
            continue
        memories[memory.id] = memory
        paths[memory.id] = rel
    return Side(label, memories, problems, paths)


def _cat_files(root: Path, objects: dict[str, str]) -> dict[str, bytes]:
    """path -> bytes, reading many git objects through one `git cat-file --batch`."""
    if not objects:
        return {}
    order = list(objects.items())
    raw = git(root, "cat-file", "--batch", data="".join(f"{obj}\n" for _, obj in order).encode())
    result, position = {}, 0
    for path, _ in order:
        newline = raw.index(b"\n", position)
        header = raw[position:newline].split()
        size = int(header[2])
        result[path] = raw[newline + 1:newline + 1 + size]
        position = newline + 1 + size + 1
    return result


def read_side(root: Path, where: str, parsed: dict | None = None) -> Side:
    """The repo store at a revision, in the index (INDEX) or in the working tree (WORKTREE)."""
    prefix = f"{FORGE_DIR}/{MEMORY_DIR}"
    if where == WORKTREE:
        folder = root / prefix
        blobs = {}
        if folder.is_dir():
            for path in sorted(folder.rglob("*.md")):
                if not any(part.startswith(".") for part in path.relative_to(folder).parts):
                    blobs[str(path.relative_to(root))] = path.read_bytes()
        return _parse_all(blobs, "working tree", parsed)
    if where == INDEX:
        listing = git(root, "ls-files", "-s", "-z", "--", prefix).split(b"\0")
        objects = {}
        for entry in filter(None, listing):
            meta, path = entry.decode().split("\t", 1)
            if path.endswith(".md"):
                objects[path] = meta.split()[1]
        return _parse_all(_cat_files(root, objects), "index", parsed)
    if not _has_commit(root, where):
        if where == "HEAD":
            return _parse_all({}, where)  # a repository without commits yet
        raise UsageError(f"unknown revision {where!r}")
    listing = git(root, "ls-tree", "-r", "-z", where, "--", prefix).split(b"\0")
    objects = {}
    for entry in filter(None, listing):
        meta, path = entry.decode().split("\t", 1)
        if path.endswith(".md") and meta.split()[1] == "blob":
            objects[path] = meta.split()[2]
    return _parse_all(_cat_files(root, objects), where, parsed)


def _has_commit(root: Path, rev: str) -> bool:
    done = subprocess.run(git_argv("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"), cwd=root,
                          capture_output=True)
    return done.returncode == 0


def sides_for(root: Path, rev_range: str | None, staged: bool) -> tuple[str, str]:
    """(old, new) for the ways `forgemem review` can be asked."""
    if staged:
        if rev_range:
            raise UsageError("give either a revision range or --staged")
        return "HEAD", INDEX
    if not rev_range:
        return "HEAD", WORKTREE
    if "..." in rev_range:
        a, b = rev_range.split("...", 1)
        base = git(root, "merge-base", a or "HEAD", b or "HEAD").decode().strip()
        return base, b or "HEAD"
    if ".." in rev_range:
        a, b = rev_range.split("..", 1)
        return a or "HEAD", b or "HEAD"
    return rev_range, WORKTREE


# ------------------------------------------------------------------ comparing


@dataclass
class Item:
    kind: str  # added | version | edit | accepted | deleted
    memory: Memory
    old: Memory | None = None
    fields: list[str] = field(default_factory=list)  # changed front-matter keys (edits)


@dataclass
class Review:
    old: Side
    new: Side
    items: list[Item] = field(default_factory=list)
    edges_added: list[tuple[str, str, str]] = field(default_factory=list)  # (source, relationship, target)
    edges_removed: list[tuple[str, str, str]] = field(default_factory=list)
    conflicts_created: list[tuple[str, str]] = field(default_factory=list)
    conflicts_resolved: list[tuple[str, str]] = field(default_factory=list)
    forks_created: list[tuple[str, list[str]]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    personal: list[Memory] = field(default_factory=list)  # proposed in the user store (not in git)
    #: memories citing what the new side no longer has: {id, kind, name, cites, changed (the memory is in the diff)}
    stale: list[dict] = field(default_factory=list)

    def of(self, kind: str) -> list[Item]:
        return [i for i in self.items if i.kind == kind]

    @property
    def empty(self) -> bool:
        return not (self.items or self.edges_added or self.edges_removed or self.conflicts_created
                    or self.conflicts_resolved or self.forks_created or self.problems)

    def to_dict(self) -> dict:
        def memory(m: Memory, side: Side) -> dict:
            data = m.to_dict()
            data["path"] = side.paths.get(m.id) or self.new.paths.get(m.id)  # or written within the range
            return data

        return {
            "old": self.old.label,
            "new": self.new.label,
            "added": [memory(i.memory, self.new) for i in self.of("added")],
            "versions": [{"memory": memory(i.memory, self.new), "supersedes": memory(i.old, self.old),
                          "word_diff": word_diff(i.old.body, i.memory.body)} for i in self.of("version")],
            "edits": [{"memory": memory(i.memory, self.new), "fields": i.fields,
                       "word_diff": word_diff(i.old.body, i.memory.body)} for i in self.of("edit")],
            "accepted": [i.memory.id for i in self.of("accepted")],
            "deleted": [memory(i.memory, self.old) for i in self.of("deleted")],
            "edges_added": [{"source": s, "relationship": r, "target": t} for s, r, t in self.edges_added],
            "edges_removed": [{"source": s, "relationship": r, "target": t} for s, r, t in self.edges_removed],
            "conflicts_created": [list(p) for p in self.conflicts_created],
            "conflicts_resolved": [list(p) for p in self.conflicts_resolved],
            "forks_created": [{"base": b, "heads": h} for b, h in self.forks_created],
            "problems": [{"path": str(p.path) if p.path else None, "line": p.line, "reason": p.reason}
                         for p in self.problems],
            "personal_proposed": [m.to_dict() for m in self.personal],
            "stale": self.stale,
        }


def _edges(memory: Memory) -> set[tuple[str, str, str]]:
    return {(memory.id, r.relationship, r.id) for r in memory.related}


def _conflict_pairs(side: Side) -> set[tuple[str, str]]:
    return {tuple(sorted((e.source, e.target))) for e in side.graph.contradictions()}


_COMPARED = ("body", "category", "scope", "version", "supersedes", "related", "session_id", "trigger")


def compare(old: Side, new: Side) -> Review:
    from forgemem.store.validate import graph_problems

    review = Review(old, new)
    for memory_id, memory in new.memories.items():
        before = old.memories.get(memory_id)
        if before is None:
            # what it replaces: from before the range, else a memory written and replaced within it
            predecessors = ([old.memories[s] for s in memory.supersedes if s in old.memories]
                            or [new.memories[s] for s in memory.supersedes if s in new.memories])
            if predecessors:
                review.items.append(Item("version", memory, predecessors[0]))
            else:
                review.items.append(Item("added", memory))
            continue
        changed = [key for key in _COMPARED if getattr(before, key) != getattr(memory, key)]
        changed += [key for key in sorted(set(before.extra) | set(memory.extra))
                    if before.extra.get(key) != memory.extra.get(key)]
        if changed == ["status"] and before.status == PROPOSED and memory.status is None:
            review.items.append(Item("accepted", memory, before))
        elif [c for c in changed if c != "related"]:
            review.items.append(Item("edit", memory, before, changed))
        review.edges_added += sorted(_edges(memory) - _edges(before))
        review.edges_removed += sorted(_edges(before) - _edges(memory))
    for item in review.items:
        if item.kind in ("added", "version"):
            review.edges_added += sorted(_edges(item.memory))
    for memory_id, memory in old.memories.items():
        if memory_id not in new.memories:
            review.items.append(Item("deleted", memory))
    before_pairs, after_pairs = _conflict_pairs(old), _conflict_pairs(new)
    review.conflicts_created = sorted(after_pairs - before_pairs)
    review.conflicts_resolved = sorted(before_pairs - after_pairs)
    old_forks = old.graph.forks()
    review.forks_created = sorted((b, h) for b, h in new.graph.forks().items() if old_forks.get(b) != h)
    old_problems = {(str(p.path), p.reason) for p in old.problems + graph_problems(old.graph)}
    review.problems = [p for p in new.problems + graph_problems(new.graph)
                       if (str(p.path), p.reason) not in old_problems]
    return review


def review(root: Path, rev_range: str | None = None, staged: bool = False) -> Review:
    old, new = sides_for(root, rev_range, staged)
    parsed: dict = {}  # a file that is the same on both sides is parsed once
    return compare(read_side(root, old, parsed), read_side(root, new, parsed))


# ------------------------------------------------------------------ rendering

_WORDS = re.compile(r"\s+|[^\s]+")


def word_diff(old: str, new: str) -> list[list[str]]:
    """[op, text] runs: op is "=", "-" or "+", words and the spaces between them."""
    a, b = _WORDS.findall(old), _WORDS.findall(new)
    runs: list[list[str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            runs.append(["=", "".join(a[i1:i2])])
            continue
        if i2 > i1:
            runs.append(["-", "".join(a[i1:i2])])
        if j2 > j1:
            runs.append(["+", "".join(b[j1:j2])])
    return runs


def word_diff_markdown(old: str, new: str) -> str:
    """The word diff for markdown: ~~removed~~ **added**."""
    runs = word_diff(old, new)
    parts = []
    for n, (op, text) in enumerate(runs):
        stripped = text.strip()
        if op == "=" or not stripped:
            parts.append(text)
            continue
        lead = text[: len(text) - len(text.lstrip())]
        trail = text[len(text.rstrip()):]
        mark = "~~" if op == "-" else "**"
        replaced = op == "-" and n + 1 < len(runs) and runs[n + 1][0] == "+"
        parts.append(f"{lead}{mark}{stripped}{mark}{trail}{' ' if replaced else ''}")
    return " ".join("".join(parts).split())


def _one_line(text: str, limit: int = 200) -> str:
    return one_line(text, limit)


def _provenance_lines(memory: Memory) -> list[str]:
    """The line under a listed memory saying where it came from (none for a plain manual memory)."""
    provenance = _provenance(memory)
    return [f"  <sub>{provenance}</sub>"] if provenance else []


def _provenance(memory: Memory, status: bool = True) -> str:
    bits = []
    if memory.trigger in ("cadence", "compaction"):
        bits.append(f"captured on {memory.trigger}")
    elif memory.trigger == "import":
        bits.append("imported")
    source = memory.source
    origin = source and (source.transcript or source.other.get("file"))
    if source is not None and origin:
        # in a pull request the file's name is enough (a transcript's folder is someone's home)
        where = Path(str(origin)).name + (f":{source.lines}" if source.lines else "")
        quote = f" “{_one_line(source.quote, 120)}”" if source.quote else ""
        bits.append(f"from {where}{quote}")
    if status and memory.status == PROPOSED:
        bits.append("**proposed**: `forgemem review --accept` or `--reject`")
    return "; ".join(bits)


def render_markdown(result: Review) -> str:
    ids = short_ids(list(result.new.memories) + list(result.old.memories))
    s = lambda memory_id: f"`{ids.get(memory_id, short(memory_id))}`"  # noqa: E731
    added, versions, edits = result.of("added"), result.of("version"), result.of("edit")
    accepted, deleted = result.of("accepted"), result.of("deleted")
    counts = [f"{len(added)} added", f"{len(versions)} new version(s)", f"{len(edits)} hand edit(s)"]
    if accepted:
        counts.append(f"{len(accepted)} accepted")
    if deleted:
        counts.append(f"{len(deleted)} deleted")
    lines = [f"### forgemem review: {result.old.label} → {result.new.label}", ""]
    if result.empty:
        lines.append("No memory changes.")
        if result.stale:
            lines += ["", *_stale_markdown(result, s)[:-1]]
        if result.personal:
            lines += ["", *personal_markdown(result.personal)]
        return visible_controls("\n".join(lines).rstrip() + "\n")
    summary = ", ".join(counts)
    if result.conflicts_created:
        summary += f", **{len(result.conflicts_created)} conflict(s) created**"
    if result.conflicts_resolved:
        summary += f", {len(result.conflicts_resolved)} conflict(s) resolved"
    lines += [summary, ""]
    if added:
        lines.append("**Added**")
        replaced_by = {old_id: v.memory.id for v in versions for old_id in v.memory.supersedes}
        for item in added:
            m = item.memory
            replaced = f" (replaced in this range by {s(replaced_by[m.id])})" if m.id in replaced_by else ""
            lines.append(f"- {s(m.id)} {m.scope}/{m.category}: {_one_line(m.body)}{replaced}")
            lines += _provenance_lines(m)
        lines.append("")
    if versions:
        lines.append("**New versions**")
        for item in versions:
            m, old = item.memory, item.old
            merge = f" (merges {len(m.supersedes)})" if len(m.supersedes) > 1 else ""
            lines.append(f"- {s(m.id)} v{m.version} supersedes {s(old.id)} v{old.version}{merge} "
                         f"({m.category}): {word_diff_markdown(old.body, m.body)}")
            lines += _provenance_lines(m)
        lines.append("")
    if edits:
        lines.append("**Hand edits** (the same memory changed in place)")
        for item in edits:
            m, old = item.memory, item.old
            text = word_diff_markdown(old.body, m.body) if "body" in item.fields else _one_line(m.body)
            lines.append(f"- {s(m.id)} {m.category} — changed {', '.join(item.fields)}: {text}")
        lines.append("")
    if accepted:
        lines.append("**Accepted** (no longer proposed): " + ", ".join(s(i.memory.id) for i in accepted))
        lines.append("")
    if result.edges_added or result.edges_removed:
        lines.append("**Edges**")
        lines += [f"- + {s(a)} {r} {s(b)}" for a, r, b in result.edges_added]
        lines += [f"- − {s(a)} {r} {s(b)}" for a, r, b in result.edges_removed]
        lines.append("")
    if result.conflicts_created or result.conflicts_resolved or result.forks_created:
        lines.append("**Conflicts**")
        for a, b in result.conflicts_created:
            lines.append(f"- ⚠ created: {s(a)} contradicts {s(b)} — resolve with `forgemem resolve`")
        for a, b in result.conflicts_resolved:
            lines.append(f"- resolved: {s(a)} / {s(b)}")
        for base, heads in result.forks_created:
            lines.append(f"- ⚠ fork: {s(base)} is superseded by {' and '.join(s(h) for h in heads)} — "
                         "`forgemem resolve` writes a version superseding both")
        lines.append("")
    if deleted:
        lines.append("**Deleted files** ⚠ memories should be superseded or forgotten (`forgemem forget`), not deleted")
        for item in deleted:
            lines.append(f"- {s(item.memory.id)} `{result.old.paths.get(item.memory.id)}`: "
                         f"{_one_line(item.memory.body, 120)}")
        lines.append("")
    if result.problems:
        lines.append("**Problems** (`forgemem validate`)")
        lines += [f"- {p}" for p in result.problems]
        lines.append("")
    lines += _stale_markdown(result, s)
    if result.personal:
        lines += personal_markdown(result.personal)
    return visible_controls("\n".join(lines).rstrip() + "\n")


def _stale_markdown(result: Review, s) -> list[str]:
    if not result.stale:
        return []
    lines = ["**Cites what no longer exists** (`forgemem tidy` asks whether each still holds)"]
    for item in result.stale:
        memory = result.new.memories[item["id"]]
        cause = "written in this change" if item["changed"] else "gone since this change"
        lines.append(f"- {s(item['id'])} {item['cites']} ({cause}): {_one_line(memory.body, 120)}")
    return [*lines, ""]


def personal_markdown(memories: list[Memory]) -> list[str]:
    """The section for proposed memories of the user store (not in git, so never in a diff)."""
    ids = short_ids([m.id for m in memories])
    lines = [f"**Proposed in your personal store** ({len(memories)}; not in git: "
             "`forgemem review --accept ID` keeps one, `--reject ID` deletes it)"]
    for m in memories:
        lines.append(f"- `{ids[m.id]}` {m.scope}/{m.category}: {_one_line(m.body)}")
        provenance = _provenance(m, status=False)
        if provenance:
            lines.append(f"  <sub>{provenance}</sub>")
    lines.append("")
    return lines


def render_personal(memories: list[Memory]) -> str:
    """`forgemem review` outside a git repository: the personal proposals alone."""
    text = "\n".join(["### forgemem review: your personal store", "", *personal_markdown(memories)]).rstrip() + "\n"
    return visible_controls(text)
