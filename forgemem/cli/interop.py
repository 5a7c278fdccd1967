"""Memories in from the files agents and other tools keep, and out into them: import, export."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from forgemem.cli.app import JSON_OPTION, _Progress, _style_scope, app, emit_json, out, state, warn
from forgemem.store.model import memory_count, one_line, short

_VERBS = {"new": "[green]new[/]", "changed": "[yellow]changed[/]", "unchanged": "[dim]unchanged[/]",
          "duplicate": "[dim]duplicate[/]", "removed": "[red]removed[/]"}


@app.command("import")
def import_(
    paths: list[Path] = typer.Argument(
        None, metavar="[PATH]...",
        help="Instruction files or folders (default: the ones this repository holds); with --from, one export."),
    from_: Optional[str] = typer.Option(
        None, "--from", metavar="FORMAT",
        help="Read another tool's export instead: basic-memory (a note or a folder), mem0-json, mcp-memory-json."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show what would be written; write nothing."),
    scope: Optional[str] = typer.Option(
        None, "--scope", "-s", help="repo or user: put every new memory there (default: the classifier decides; "
        "other tools' exports go to user)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Also list the unchanged and duplicate rules."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Turn the rules in CLAUDE.md, AGENTS.md, .cursorrules … into memories (again: only what changed)."""
    from forgemem.interop.importer import import_files

    progress = _Progress("importing rules", threshold=50)
    try:
        report = import_files(state.workspace(), list(paths or []), state.where(), fmt=from_, dry_run=dry_run,
                              scope=scope, progress=progress)
    finally:
        progress.close()
    for note in report.notes:
        warn(note)
    if report.redacted:
        warn(f"redacted {len(report.redacted)} secret(s) before writing: {', '.join(sorted(set(report.redacted)))}")
    if as_json:
        emit_json(report.to_dict())
        return
    if report.dry_run:
        out.print("[bold]dry run[/]: nothing was written")
    for file in report.files:
        counts = [(a, report.count(a, file)) for a in ("new", "changed", "unchanged", "duplicate", "removed")]
        summary = ", ".join(f"{n} {a}" for a, n in counts if n) or "no rules found"
        out.print(f"[bold]{escape(file)}[/]: {summary}")
        for item in report.items:
            if item.file != file or (item.action in ("unchanged", "duplicate") and not verbose):
                continue
            memory = item.written if item.action in ("new", "changed") else item.memory
            ident = short(memory.id) if memory is not None else " " * 8
            where = item.rule.lines if item.rule is not None else (
                item.memory.source.lines if item.memory is not None and item.memory.source else "") or ""
            text = item.rule.text if item.rule is not None else (item.memory.body if item.memory else "")
            detail = ""
            if item.action == "new" and item.category:
                detail = f" {_style_scope(item.scope or '')} {item.category}"
            elif item.action == "changed" and item.memory is not None:
                detail = f" supersedes {short(item.memory.id)}"
            out.print(f"  {_VERBS[item.action]} {ident} {escape(where):>7}{detail}  {escape(one_line(text, 80))}")
    removed = report.count("removed")
    if removed:
        out.print(f"{removed} memor{'y is' if removed == 1 else 'ies are'} no longer in {'its file' if removed == 1 else 'their files'} "
                  "and stay in the store: `forgemem forget ID` retracts one")
    if report.dry_run and (report.count("new") or report.count("changed")):
        out.print("run it again without --dry-run to write them")


@app.command("export")
def export(
    fmt: str = typer.Option(..., "--format", "-f",
                            help="agents-md, claude-md, cursor-rules (a section in that file), json or jsonl (stdout)."),
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", help="Write the section into this file instead (agents-md, claude-md, cursor-rules)."),
    scope: Optional[str] = typer.Option(
        None, "--scope", "-s", help="repo, user or all (default: repo for files, which git shares; all for JSON)."),
    category: Optional[str] = typer.Option(None, "--category", "-c", help="Only this category."),
    tag: Optional[str] = typer.Option(None, "--tag", help="Only memories with this tag."),
    max_tokens: Optional[int] = typer.Option(
        None, "--max-tokens", min=0, help="Token budget (default 2000 for files, none for JSON; 0: no limit)."),
    check: bool = typer.Option(False, "--check", help="Write nothing; exit 1 when the file's section is out of date."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Write the current memories into AGENTS.md / CLAUDE.md / .cursor/rules, or print them as JSON."""
    from forgemem.errors import UsageError
    from forgemem.interop.exporter import DEFAULT_MAX_TOKENS, FILE_FORMATS, export_file, export_records

    chosen = None if scope == "all" else scope
    if fmt not in FILE_FORMATS:
        if check or output is not None:
            raise UsageError(f"--check and --output go with a file format ({', '.join(FILE_FORMATS)}), not {fmt}")
        sys.stdout.write(export_records(state.workspace(), fmt, scope=chosen, category=category, tag=tag,
                                        max_tokens=max_tokens or None))
        return
    result = export_file(state.workspace(), fmt, state.where(), output=output,
                         scope="repo" if scope is None else chosen, category=category, tag=tag,
                         max_tokens=DEFAULT_MAX_TOKENS if max_tokens is None else (max_tokens or None), check=check)
    selection = result.selection
    if as_json:
        emit_json(result.to_dict())
    else:
        name = escape(str(result.path))
        extra = ""
        if selection.left_out:
            extra += f"; {selection.left_out} left out to stay within the token budget"
        if selection.echoed:
            extra += f"; {selection.echoed} imported from this file not written back"
        if check:
            state_ = (f"is out of date: run `forgemem export --format {fmt}` (with the same options) to update it"
                      if result.changed else "is up to date")
            out.print(f"{name}: the forgemem section {state_}")
        elif result.written:
            out.print(f"{'created' if result.created else 'updated'} {name}: "
                      f"{memory_count(len(selection.memories))}, {selection.tokens} tokens{extra}")
        else:
            out.print(f"{name} is up to date ({memory_count(len(selection.memories))}{extra})")
    if check and result.changed:
        raise typer.Exit(1)
