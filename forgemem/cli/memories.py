"""Commands that write and read memories: init, trust, add, list, show, history, link, forget, resolve, edit."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from forgemem.cli.app import JSON_OPTION, _style_scope, app, emit_json, err, out, show_problem, state, warn
from forgemem.curate import nearby
from forgemem.errors import ForgememError, UsageError, require_choice
from forgemem.store.model import CATEGORIES, RELATIONSHIPS, format_timestamp, memory_count, one_line, utc_now
from forgemem.views import added_json, forgotten_json, linked_json, memory_json
from forgemem.workspace import Snapshot, default_forge_dir, init_forge_dir


def load() -> Snapshot:
    """Both stores; one line on stderr when memory files could not be read (they are left out) or
    other problems were found, and what to run to see them."""
    from forgemem.index.problems import snapshot_line

    snap = state.workspace().load()
    line = snapshot_line(snap)
    if line:
        warn(line)
    return snap


@app.command()
def init(
    user: bool = typer.Option(False, "--user", help="Set up the user store (~/.forge) instead."),
) -> None:
    """Create .forge/memory/, .forge/config.yaml and .forge/.gitignore (idempotent)."""
    ws = state.workspace()
    if user:
        forge_dir = ws.stores["user"].forge_dir
    elif state.repo_dir:
        forge_dir = Path(state.repo_dir).absolute().parent
    else:
        forge_dir = default_forge_dir(state.where())
    created = init_forge_dir(forge_dir, user=user)
    for path in created:
        out.print(f"created {path}")
    if not created:
        out.print(f"{forge_dir} is already set up")
    _offer_import(Path.home() if user else forge_dir.parent, home=user)


def _offer_import(root: Path, home: bool) -> None:
    """Name the instruction files found, with the exact command that imports them; ask only in a terminal."""
    from forgemem.interop.reading import discover, shown

    found = discover(root, home=home)
    if not found:
        return
    where = f"-C {shlex.quote(str(state.cwd))} " if state.cwd is not None else ""
    command = f"forgemem {where}import " + " ".join(shlex.quote(shown(path)) for path in found)
    out.print(f"found {escape(', '.join(shown(p) for p in found))}: their rules can become memories "
              f"(run it again later and only what changed is written):")
    out.print(f"  {escape(command)}")
    if sys.stdin.isatty() and out.is_terminal and typer.confirm("Import them now?", default=False):
        from forgemem.cli.interop import import_

        import_(paths=found, from_=None, dry_run=False, scope=None, verbose=False, as_json=False)


@app.command()
def trust(as_json: bool = JSON_OPTION) -> None:
    """Let this repository's .forge/config.yaml choose the classifier, its URL and key, and models.

    Those settings decide where your conversations and API keys are sent, so
    a repository's config may set them only once you have read it and trust
    it. Trust is recorded in ~/.forge/config.yaml with the file's SHA-256: if
    the file changes (a pull, a branch), it is untrusted until you run this again.
    """
    change = state.workspace().trust(True)
    if as_json:
        emit_json(change.to_dict())
        return
    verb = "now trusted" if change.changed else "already trusted"
    out.print(f"{escape(str(change.path))} is {verb} (sha256 {change.sha256[:12]}…)")
    for key, value in change.user_only.items():
        out.print(f"  it sets {key}: {escape(repr(value))}")
    if not change.user_only:
        out.print("  it sets none of the settings that need trust")


@app.command()
def untrust(as_json: bool = JSON_OPTION) -> None:
    """Stop letting this repository's config choose the classifier, its URL and key, and models."""
    change = state.workspace().trust(False)
    if as_json:
        emit_json(change.to_dict())
        return
    out.print(f"{escape(str(change.path))} is {'no longer' if change.changed else 'not'} trusted")


def _parse_relates(values: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for value in values:
        ref, sep, relationship = value.rpartition(":")
        if not sep or not ref:
            raise UsageError(f"--relates takes ID:relationship, not {value!r}")
        pairs.append((ref, relationship))
    return pairs


@app.command()
def add(
    text: str = typer.Argument(..., help="The memory's text; '-' reads it from stdin."),
    scope: Optional[str] = typer.Option(None, "--scope", "-s", help="repo or user (default: repo if there is one)."),
    category: Optional[str] = typer.Option(
        None, "--category", "-c",
        help=f"Required (with --supersedes: the old version's by default). One of: {', '.join(CATEGORIES)}."
    ),
    tags: str = typer.Option("", "--tags", "-t", help="Comma-separated tags."),
    supersedes: list[str] = typer.Option(
        [], "--supersedes", help="Write a new version of this memory (repeat to merge several)."
    ),
    relates: list[str] = typer.Option(
        [], "--relates", help=f"ID:relationship, relationship one of {', '.join(RELATIONSHIPS)}."
    ),
    confidence: Optional[float] = typer.Option(None, "--confidence", help="0 to 1."),
    no_carry: bool = typer.Option(
        False, "--no-carry", help="With --supersedes: do not carry the old version's tags and edges forward."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Write a new memory file and print its id and path."""
    from forgemem.store.memfile import check_text_size

    if text == "-":
        text = sys.stdin.read()
    check_text_size(text)  # before anything is read or written: a file over 1 MiB could not be read back
    ws = state.workspace()
    memory, redacted = ws.add(
        text,
        scope=scope,
        category=category,
        tags=tags.split(",") if tags else (),
        supersedes=supersedes,
        related=_parse_relates(relates),
        confidence=confidence,
        carry=not no_carry,
    )
    if redacted:
        warn(f"redacted {len(redacted)} secret(s) before writing: {', '.join(sorted(set(redacted)))}")
    if not as_json:
        print(f"{memory.id}\t{memory.path}", flush=True)  # on disk: said before the memories near it are looked for
    if scope is None and not supersedes and memory.scope == "user" and memory.category != "user-facts":
        _say_no_repo_store()
    near = _near(ws, memory) if memory.id not in ws.reused else []
    for found in near:
        warn(nearby.advice(found, memory))
    if as_json:
        emit_json({**added_json(memory, redacted, existing=memory.id in ws.reused),
                   "near_duplicates": [n.to_dict() for n in near if n.kind == "duplicate"],
                   "likely_contradictions": [n.to_dict() for n in near if n.kind == "contradiction"]})


def _say_no_repo_store() -> None:
    """A memory meant for the repository (repo is `add`'s default scope) went to the user store because
    the repository has no store: said, so that it is not a surprise later."""
    from forgemem.store.folder import repository_without_store

    root = repository_without_store(state.where())
    if root is not None:
        warn(f"{root.name} has no repo store, so this memory went to your user store: `forgemem init` "
             "creates one (pass --scope user to write there without this note)")


def _near(ws, memory) -> list:
    """The current memories close to the one just written; a failure to look is said, never an error."""
    from forgemem.cli.app import _refresh

    try:
        return nearby.near_new(ws, memory, prepare=_refresh, on_notice=warn)
    except Exception as exc:  # noqa: BLE001 - the memory is written; the check is advice
        warn(f"could not look for similar memories ({type(exc).__name__}: {exc})")
        return []


@app.command("list")
def list_(
    scope: Optional[str] = typer.Option(None, "--scope", "-s", help="repo or user."),
    category: Optional[str] = typer.Option(None, "--category", "-c", help="Only this category."),
    tag: Optional[str] = typer.Option(None, "--tag", help="Only memories with this tag."),
    all_versions: bool = typer.Option(
        False, "--all-versions", help="Include superseded versions and retractions."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """List memories (newest versions only unless --all-versions)."""
    if scope and scope not in ("repo", "user"):
        raise UsageError(f"unknown scope {scope!r} (expected repo or user)")
    if category:
        require_choice("category", category, CATEGORIES)
    snap = load()
    memories = snap.memories if all_versions else snap.heads()
    memories = [
        m
        for m in memories
        if (not scope or m.scope == scope)
        and (not category or m.category == category)
        and (not tag or tag in m.tags)
    ]
    memories.sort(key=lambda m: (m.scope, m.category, m.created_at, m.id))
    if as_json:
        emit_json([memory_json(snap, m) for m in memories])
        return
    width = max((len(m.category) for m in memories), default=0)
    for m in memories:
        version = f"v{m.version}" + ("" if snap.graph.is_head(m.id) else "*")
        line = (
            f"{m.short_id()}  {_style_scope(m.scope)}  {m.category:<{width}}  {version:<3}  "
            f"{escape(one_line(m))}"
        )
        # In a terminal one memory per line, cut at its width; piped output keeps the whole text.
        if out.is_terminal:
            out.print(line, no_wrap=True, overflow="ellipsis")
        else:
            out.print(line)
    out.print(f"[dim]{memory_count(len(memories))}[/]")


@app.command()
def show(
    memory_id: str = typer.Argument(..., metavar="ID", help="An id or an unambiguous prefix."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Show one memory: its front matter, text, versions and edges."""
    snap = load()
    memory = snap.resolve(memory_id)
    if as_json:
        emit_json(memory_json(snap, memory))
        return
    out.print(f"[bold]{memory.id}[/]  {_style_scope(memory.scope)}  {memory.category}  v{memory.version}")
    out.print(f"[dim]{memory.path}[/]")
    out.print(
        f"[dim]created {format_timestamp(memory.created_at)}  updated "
        f"{format_timestamp(memory.updated_at)}  trigger {memory.trigger}[/]"
    )
    if memory.tags:
        out.print(f"[dim]tags: {escape(', '.join(memory.tags))}[/]")
    for key, value in memory.extra.items():
        if key == "source" and memory.source:
            out.print(f"[dim]source: {escape(memory.source.describe())}[/]")
        elif key != "tags":
            out.print(f"[dim]{escape(key)}: {escape(str(value))}[/]")
    out.print()
    out.print(escape(memory.body))
    out.print()
    for older in memory.supersedes:
        out.print(f"supersedes {older}")
    for newer in snap.graph.superseded_by.get(memory.id, []):
        out.print(f"[yellow]superseded by {newer}[/]")
    if memory.id in snap.graph.held_back:
        out.print(f"[yellow]superseded by {escape(str(snap.graph.held_back[memory.id]))}, which cannot be read "
                  "(`forgemem validate` says why)[/]")
    for relation in memory.related:
        out.print(f"{relation.relationship} {relation.id}")
    for step in snap.graph.neighbours(memory.id, 1, RELATIONSHIPS).values():
        if step[0].reverse:
            out.print(f"{step[0].target} {step[0].type} this")


@app.command()
def history(
    memory_id: str = typer.Argument(..., metavar="ID", help="Any version in the chain."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Every version of a memory, oldest first."""
    snap = load()
    memory = snap.resolve(memory_id)
    versions = snap.graph.history(memory.id)
    if as_json:
        emit_json([memory_json(snap, m) for m in versions])
        return
    for m in versions:
        marker = "head" if snap.graph.is_head(m.id) else "    "
        out.print(
            f"[bold]v{m.version}[/] {marker} {m.id}  [dim]{format_timestamp(m.created_at)}[/]"
            + (f"  [dim]supersedes {', '.join(x[:12] for x in m.supersedes)}[/]" if m.supersedes else "")
        )
        out.print(f"    {escape(one_line(m))}")


@app.command()
def link(
    source: str = typer.Argument(..., metavar="ID", help="The memory that gets the edge."),
    target: str = typer.Argument(..., metavar="OTHER_ID", help="The memory it points at."),
    rel: str = typer.Option(..., "--rel", "-r", help=f"One of: {', '.join(RELATIONSHIPS)}."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Add a typed edge ID -> OTHER_ID (recorded in ID's `related` list)."""
    memory, other = state.workspace().link(source, target, rel)
    if as_json:
        emit_json(linked_json(memory, rel, other))
        return
    print(f"{memory.id} {rel} {other.id}\t{memory.path}")


@app.command()
def forget(
    memory_id: str = typer.Argument(..., metavar="ID"),
    reason: str = typer.Option("", "--reason", help="Why it no longer holds (kept in the retraction)."),
    purge: bool = typer.Option(
        False, "--purge", help="Delete the file instead of retracting it (for secrets)."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Retract a memory with a new version that supersedes it (git keeps the trail)."""
    memory, pointing = state.workspace().forget(memory_id, reason=reason, purge=purge)
    if as_json:
        emit_json(forgotten_json(memory, pointing, purge))
        return
    if purge:
        out.print(f"deleted {memory.path}")
        for other in pointing:
            warn(f"{other.path} still refers to {memory.id}; edit it or run `forgemem validate`")
    else:
        print(f"{memory.id}\t{memory.path}")


def _run_editor(path: Path) -> None:
    """$VISUAL / $EDITOR (vi) on a file; an editor that fails leaves everything unchanged."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        code = subprocess.call([*shlex.split(editor), str(path)])
    except FileNotFoundError:
        raise ForgememError(f"cannot run the editor {editor!r}; set $EDITOR") from None
    if code != 0:
        raise ForgememError(f"the editor exited with status {code}; nothing was changed")


@app.command()
def resolve(
    memory_id: str = typer.Argument(..., metavar="ID", help="A memory in the fork or conflict."),
    text: Optional[str] = typer.Option(None, "--text", help="The resolved memory (default: write it in $EDITOR)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Write one version that supersedes both heads of a fork or both sides of a conflict."""
    from forgemem.curate import resolve as resolve_module

    ws = state.workspace()
    if text is None:
        heads = resolve_module.heads_to_resolve(ws.load(), memory_id)
        with tempfile.TemporaryDirectory(prefix="forgemem-resolve-") as tmp:
            draft = Path(tmp) / "resolved-memory.md"
            draft.write_text(resolve_module.draft_text(heads), encoding="utf-8")
            _run_editor(draft)
            text = resolve_module.text_from_draft(draft.read_text(encoding="utf-8"))
    memory, heads = resolve_module.resolve(ws, memory_id, text)
    if as_json:
        emit_json({**added_json(memory, []), "supersedes": [m.id for m in heads]})
        return
    out.print(f"{memory.id} v{memory.version} supersedes {', '.join(m.id for m in heads)}\t{memory.path}")


@app.command()
def edit(memory_id: str = typer.Argument(..., metavar="ID")) -> None:
    """Open a memory in $EDITOR; the file is replaced only if the edit validates."""
    from forgemem.store import memfile

    snap = load()
    memory = snap.resolve(memory_id)
    assert memory.path is not None
    original = memory.path.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="forgemem-edit-") as tmp:
        draft = Path(tmp) / memory.path.name
        draft.write_text(original, encoding="utf-8")
        while True:
            _run_editor(draft)
            text = draft.read_text(encoding="utf-8", errors="replace")
            if text == original:
                out.print("no changes")
                return
            try:
                edited = memfile.parse_bytes(draft.read_bytes(), memory.path)
                break
            except memfile.MemoryFileError as exc:
                for problem in exc.problems:
                    err.print(f"forgemem: {show_problem(problem)}")
                if sys.stdin.isatty() and typer.confirm("Edit again?", default=True):
                    continue
                raise ForgememError("the edit does not validate; the memory file is unchanged") from None
    if edited.body != memory.body:
        edited.updated_at = utc_now()
    try:
        state.workspace().replace(edited)
    except ForgememError as exc:  # the file moved on meanwhile: keep the edit where the user can get it back
        fd, kept = tempfile.mkstemp(prefix="forgemem-edit-", suffix=".md")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        raise ForgememError(f"{exc}; your edit is kept in {kept}") from None
    out.print(f"saved {memory.path}")

