"""`forgemem export`: the current memories written where every agent reads them, or as JSON for scripts.

`agents-md`, `claude-md` and `cursor-rules` write a generated section (`interop.sections`) into
`AGENTS.md`, `CLAUDE.md` or `.cursor/rules/forgemem.mdc` at the repository's root: the current
heads (neither retracted nor proposed), by default of the repo store only (the file is shared
through git; personal memories stay personal unless asked for), grouped by category, within a
token budget. The section holds nothing that changes by itself (no timestamp, no usage figure),
so the same memories always give the same bytes and `--check` can run in CI. A memory imported
from the very file being written is never written back into it. `json` and `jsonl` are for
scripts and other tools.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forgemem.errors import UsageError
from forgemem.interop import reading, sections
from forgemem.interop.reading import InputError
from forgemem.store.model import CATEGORIES, PROPOSED, SCOPES, Memory, visible_controls
from forgemem.workspace import Snapshot, Workspace

FILE_FORMATS = {"agents-md": "AGENTS.md", "claude-md": "CLAUDE.md", "cursor-rules": ".cursor/rules/forgemem.mdc"}
FORMATS = (*FILE_FORMATS, "json", "jsonl")
#: the section's order, which is also what goes first when the budget is short
ORDER = ("project-conventions", "architectural-decisions", "coding-preferences", "corrections", "user-facts")
TITLES = {"project-conventions": "Project conventions", "architectural-decisions": "Architectural decisions",
          "coding-preferences": "Coding preferences", "corrections": "Corrections", "user-facts": "About the user"}
DEFAULT_MAX_TOKENS = 2000
CURSOR_HEAD = ("---", "description: What forgemem remembers about this project (conventions, decisions, preferences)",
               "alwaysApply: true", "---", "")
assert set(ORDER) == set(CATEGORIES)


@dataclass
class Selection:
    memories: list[Memory]  # in the section's order
    left_out: int = 0  # over the token budget
    echoed: int = 0  # imported from the target file itself
    tokens: int = 0


@dataclass
class ExportResult:
    format: str
    path: Path
    changed: bool  # the file differs (differed, with check) from what the memories give
    written: bool
    created: bool
    selection: Selection

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.format, "path": str(self.path), "changed": self.changed, "written": self.written,
                "created": self.created, "memories": [m.id for m in self.selection.memories],
                "left_out": self.selection.left_out, "echoed": self.selection.echoed,
                "tokens": self.selection.tokens}


def _tokens(text: str, model: str) -> int:
    try:
        from forgemem.recall.context import count_tokens

        return count_tokens(text, model)
    except Exception:  # no tokenizer: a close enough guess for a budget
        return max(1, len(text) // 4)


def select(snap: Snapshot, *, scope: str | None = None, category: str | None = None, tag: str | None = None,
           max_tokens: int | None = None, target: Path | None = None, root: Path | None = None,
           model: str = "") -> Selection:
    """The heads to export, in the section's order, within `max_tokens` (None or 0: all)."""
    if scope is not None and scope not in SCOPES:
        raise UsageError(f"unknown scope {scope!r} (expected repo, user or all)")
    if category is not None and category not in CATEGORIES:
        raise UsageError(f"unknown category {category!r} (expected one of: {', '.join(CATEGORIES)})")
    from forgemem.interop.importer import personal_key

    chosen = []
    echoed = 0
    names: set[str] = set()  # how provenance names the target (in the repo store, in the user store)
    if target is not None:
        key = reading.file_key(target, root)
        names = {key, personal_key(key, root)}
    for memory in snap.heads():
        if memory.status == PROPOSED or (scope and memory.scope != scope) or (category and memory.category != category) \
                or (tag and tag not in memory.tags):
            continue
        source = memory.extra.get("source")
        if target is not None and isinstance(source, dict) and source.get("file") and (
                str(source["file"]) in names or reading.same_file(reading.key_path(str(source["file"]), root), target)):
            echoed += 1
            continue
        chosen.append(memory)
    chosen.sort(key=_order)
    if not max_tokens:
        return Selection(chosen, 0, echoed, sum(_tokens(_bullet(m), model) for m in chosen))
    kept: list[Memory] = []
    used = 0
    for memory in chosen:
        cost = _tokens(_bullet(memory), model)
        if not any(k.category == memory.category for k in kept):
            cost += _tokens(f"### {TITLES[memory.category]}", model)
        if used + cost <= max_tokens:
            kept.append(memory)
            used += cost
    return Selection(kept, len(chosen) - len(kept), echoed, used)


def _order(memory: Memory) -> tuple:
    """A category's memories: those imported from files first, in their files' order, then by age."""
    source = memory.extra.get("source")
    where: tuple = (1, "", 0)
    if isinstance(source, dict) and source.get("file"):
        first = str(source.get("lines") or "0").split("-")[0]
        where = (0, str(source["file"]), int(first) if first.isdigit() else 0)
    return (ORDER.index(memory.category), *where, memory.created_at, memory.id)


def _bullet(memory: Memory) -> str:
    """A memory as a list item: its first line after `- `, the others indented under it, markers defused."""
    # control characters shown as \xNN: an escape sequence in a cloned memory reaches no AGENTS.md reader's terminal
    lines = [_defuse(line) for line in visible_controls(memory.body).split("\n")]
    if sum(1 for line in lines if sections._FENCE.match(line)) % 2:
        lines.append("```")  # an unclosed code block would swallow the rest of the file
    return "\n".join(["- " + lines[0]] + [("  " + line) if line.strip() else "" for line in lines[1:]])


def _defuse(line: str) -> str:
    return line.replace("<!--", "&lt;!--") if sections._LOOSE.match(line) or "forgemem:" in line else line


def render(selection: Selection, max_tokens: int | None) -> list[str]:
    """The lines between the markers."""
    inner = ["## Memories from forgemem", ""]
    if not selection.memories:
        inner += ["_No memories yet: `forgemem add` writes one._"]
    current = None
    for memory in selection.memories:
        if memory.category != current:
            if current is not None:
                inner.append("")
            current = memory.category
            inner += [f"### {TITLES[current]}", ""]
        inner += _bullet(memory).split("\n")
    if selection.left_out:
        inner += ["", f"_{selection.left_out} more in forgemem, left out to stay within {max_tokens} tokens "
                      "(`forgemem recall QUERY` finds them)._"]
    return inner


def target_of(workspace: Workspace, fmt: str, cwd: Path, output: Path | None) -> tuple[Path, Path | None]:
    """The file an export writes (links followed) and the repository root provenance is relative to."""
    from forgemem.interop.importer import repo_root

    root = repo_root(workspace, cwd)
    path = output if output is not None else (root or cwd) / FILE_FORMATS[fmt]
    path = path if path.is_absolute() else cwd / path
    real = Path(os.path.realpath(path))
    if path.is_symlink() and root is not None and not real.is_relative_to(os.path.realpath(root)):
        raise InputError(f"{reading.shown(path)} is a link to {real}, outside this repository; "
                         "nothing was written (export to the file itself with --output)")
    return real, root


def export_file(workspace: Workspace, fmt: str, cwd: Path, *, output: Path | None = None,
                scope: str | None = "repo", category: str | None = None, tag: str | None = None,
                max_tokens: int | None = DEFAULT_MAX_TOKENS, check: bool = False) -> ExportResult:
    """Write (or, with `check`, compare) the generated section of an agent's instruction file."""
    if fmt not in FILE_FORMATS:
        raise UsageError(f"unknown format {fmt!r} (expected one of: {', '.join(FORMATS)})")
    if scope == "repo" and "repo" not in workspace.stores:
        raise UsageError("no repo store here: run `forgemem init` in the repository, or pass --scope user "
                         "(personal memories in a shared file) or --scope all")
    path, root = target_of(workspace, fmt, cwd, output)
    name = reading.shown(path)
    exists = path.exists()
    if exists and path.is_dir():
        raise InputError(f"{name} is a folder; nothing was written")
    text = reading.read_text(path, what="a file forgemem writes into", keep_bom=True) if exists else ""
    selection = select(workspace.load(), scope=scope, category=category, tag=tag, max_tokens=max_tokens,
                       target=path, root=root, model=workspace.config.embedding_model)
    inner = render(selection, max_tokens)
    if exists:
        new = sections.put(text, inner, name)
    elif fmt == "cursor-rules":
        new = "\n".join(CURSOR_HEAD) + "\n" + sections.block(inner, "\n")
    else:
        new = sections.block(inner, "\n")
    changed = new != text
    result = ExportResult(fmt, path, changed, False, not exists, selection)
    if check or not changed:
        return result
    if exists and (not path.stat().st_mode & 0o222 or not os.access(path, os.W_OK)):  # no write bit: even root keeps off
        raise InputError(f"{name} is read-only; nothing was written (make it writable, or use --check to "
                         "only compare)")
    from forgemem.permissions import atomic_write_text

    try:
        atomic_write_text(path, new)
    except OSError as exc:
        raise InputError(f"cannot write {name} ({exc.strerror or exc}); nothing was changed") from None
    result.written = True
    return result


def export_records(workspace: Workspace, fmt: str, *, scope: str | None = None, category: str | None = None,
                   tag: str | None = None, max_tokens: int | None = None) -> str:
    """The memories as JSON (one array) or JSON Lines (one memory a line), for scripts."""
    if fmt not in ("json", "jsonl"):
        raise UsageError(f"unknown format {fmt!r} (expected one of: {', '.join(FORMATS)})")
    selection = select(workspace.load(), scope=scope, category=category, tag=tag, max_tokens=max_tokens,
                       model=workspace.config.embedding_model)
    records = [m.to_dict() for m in selection.memories]
    if fmt == "json":
        return json.dumps(records, indent=2, ensure_ascii=False) + "\n"
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
