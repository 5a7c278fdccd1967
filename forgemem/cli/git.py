"""Commands for memory in git: review, diff-driver, consolidate."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from forgemem.cli.app import JSON_OPTION, _engine, _refresh, _repo_root, app, emit_json, err, out, state, warn
from forgemem.errors import EXIT_PROBLEMS, ForgememError, UsageError
from forgemem.store.model import memory_count, short


@app.command()
def review(
    rev_range: Optional[str] = typer.Argument(
        None, metavar="[REV-RANGE]", help="A..B, A...B (from their merge base), or REV (against the working tree)."
    ),
    staged: bool = typer.Option(False, "--staged", help="The index against HEAD."),
    worktree: bool = typer.Option(False, "--worktree", help="The working tree against HEAD (the default)."),
    accept: list[str] = typer.Option([], "--accept", metavar="ID", help="Accept a proposed memory (repeatable)."),
    reject: list[str] = typer.Option([], "--reject", metavar="ID", help="Reject (delete) a proposed memory (repeatable)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Explain the memory changes between two git states as memory changes (markdown for a PR comment).

    The plain `forgemem review` (the working tree) also lists proposed memories
    of your personal store, which is not in git; a revision range or --staged
    never does. Memories citing a path or symbol the new side no longer has are
    flagged. Exit 1 when the new side has problems or deleted memory files.
    """
    from forgemem.curate.stale import review as review_with_stale
    from forgemem.git import proposals
    from forgemem.git import review as review_module

    if accept or reject:
        if rev_range or staged or worktree:
            raise UsageError("--accept/--reject take ids only")
        done = {"accepted": [m.id for m in proposals.accept(state.workspace(), accept)],
                "rejected": [m.id for m in proposals.reject(state.workspace(), reject)]}
        if as_json:
            emit_json(done)
        else:
            for key, ids in done.items():
                for memory_id in ids:
                    out.print(f"{key} {memory_id}")
        return
    if worktree and (staged or rev_range):
        raise UsageError("--worktree goes alone (it is the default)")
    personal = [] if (rev_range or staged) else proposals.personal_proposals(state.workspace())
    try:
        root = _repo_root()
    except UsageError:
        if not personal:
            raise
        if as_json:  # outside git, the personal store's proposals are all there is to review
            emit_json({"personal_proposed": [m.to_dict() for m in personal]})
        else:
            sys.stdout.write(review_module.render_personal(personal))
        return
    result = review_with_stale(root, rev_range, staged)
    result.personal = personal
    if as_json:
        emit_json(result.to_dict())
    else:
        sys.stdout.write(review_module.render_markdown(result))
    if result.problems or result.of("deleted"):
        raise typer.Exit(EXIT_PROBLEMS)


@app.command("diff-driver")
def diff_driver(path: Path = typer.Argument(..., help="The file git hands its textconv program.")) -> None:
    """git's textconv for memory files (installed by `forgemem install git`): a readable memory."""
    from forgemem.git.drivers import main_textconv

    code = main_textconv(str(path))
    if code:
        raise typer.Exit(code)


@app.command("merge-driver")
def merge_driver(
    base: Path = typer.Argument(..., metavar="BASE", help="git's %O: the common ancestor's version."),
    ours: Path = typer.Argument(..., metavar="OURS", help="git's %A: our version; the merge is written here."),
    theirs: Path = typer.Argument(..., metavar="THEIRS", help="git's %B: their version."),
    marker_size: int = typer.Argument(7, metavar="MARKER_SIZE", help="git's %L: the conflict marker size."),
) -> None:
    """git's merge driver for memory files (installed by `forgemem install git`).

    Edges and tags of both sides are merged, `updated_at` is the newer one; conflict
    markers only where both changed the same key or text lines. Exit 0 merged, 3 merged
    with conflict markers; any other status: nothing written (git's own merge runs).
    """
    from forgemem.git.drivers import main_merge

    code = main_merge(str(base), str(ours), str(theirs), str(marker_size))
    if code:
        raise typer.Exit(code)


@app.command()
def consolidate(
    yes: bool = typer.Option(False, "--yes", "-y", help="Write the merges (without it, nothing is written)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only show what would be merged (the default)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Propose merges of near-duplicate or tightly related small memories, with a word diff; --yes writes them.

    Each merge is a new memory that supersedes its sources. Nothing is merged across
    scopes or categories; a cluster with a contradiction inside is shown, never merged;
    near-duplicates that negate each other or differ in a value are kept apart and
    listed. See docs/git.md for the thresholds.
    """
    from forgemem.curate import consolidate as module
    from forgemem.git.review import word_diff_markdown

    engine = _engine()
    _refresh(engine)
    if engine.embedder is None:
        raise ForgememError(f"consolidation needs the embedding model: {engine.lexical_only_reason}")
    snap = engine.snapshot
    stored: dict[str, bytes] = {}
    for scope, index in engine.indexes().items():
        stored.update(index.vectors_for([m for m in snap.heads() if m.scope == scope]))
    proposed = module.plan(snap, engine.embedder, stored)
    write = yes and not dry_run
    written = module.apply_plan(state.workspace(), proposed, snap) if write else []
    if as_json:
        emit_json({**proposed.to_dict(), "written": [m.id for m in written]})
        return
    clusters = proposed.clusters
    if not clusters:
        out.print("nothing to consolidate")
    for cluster in clusters:
        out.print(f"[bold]{cluster.scope}/{cluster.category}[/]: {len(cluster.memories)} memories")
        for reason in cluster.reasons:
            out.print(f"  [dim]{escape(reason)}[/]")
        for memory in cluster.memories:
            out.print(f"  - {short(memory.id)} {escape(memory.body)}")
        if cluster.blocked_by:
            out.print("  [red]contradiction inside: not merged; resolve it with `forgemem resolve`[/]")
            continue
        out.print(f"  → {escape(word_diff_markdown(cluster.memories[0].body, cluster.text))}")
    for a, b, why in proposed.held_apart:
        out.print(f"[yellow]kept apart[/] {short(a.id)} / {short(b.id)} ({escape(why)}): settle by hand, e.g. "
                  f"`forgemem link {short(a.id)} {short(b.id)} --rel contradicts` or `forgemem forget`")
    merged = sum(1 for c in clusters if not c.blocked_by)
    open_conflicts = len(snap.graph.contradictions())
    if open_conflicts:
        warn(f"{open_conflicts} unresolved contradiction(s) are left for you: `forgemem conflicts`")
    if write:
        err.print(f"wrote {memory_count(merged, 'merged')}")
    elif merged:
        err.print(f"would write {memory_count(merged, 'merged')}: run `forgemem consolidate --yes`")

