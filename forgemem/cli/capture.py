"""The capture command: observe."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape

from forgemem.cli.app import JSON_OPTION, app, emit_json, err, out, state, warn
from forgemem.errors import UsageError
from forgemem.store.model import PROPOSED, memory_count, one_line, short


@app.command()
def observe(
    paths: list[Path] = typer.Argument(
        None, metavar="[PATH]...", help="Transcript files or folders (searched recursively)."
    ),
    once: bool = typer.Option(
        False, "--once", help="Process what is new and exit: every new exchange is captured, the last few too "
        "(with --due, only the passes that fell due)."
    ),
    due: bool = typer.Option(
        False, "--due", help="With --once: run only the passes that fell due (every cadence_turns exchanges, or a "
        "compaction); the exchanges short of the cadence wait for the next run (for hooks and cron)."
    ),
    status: bool = typer.Option(False, "--status", help="Show what is watched, offsets, passes and their cost."),
    claude_code: bool = typer.Option(
        False, "--claude-code", help="Also watch this repository's Claude Code sessions (~/.claude/projects/…)."
    ),
    fmt: Optional[str] = typer.Option(
        None, "--format", help="Transcript format (default: detected): claude-code, codex, aider, gemini, jsonl."
    ),
    compaction: bool = typer.Option(
        False, "--compaction", help="With --once: the agent just compacted; run a compaction pass (for hooks)."
    ),
    final: bool = typer.Option(
        False, "--final", help="With --once --due: the session ended; also capture exchanges short of the cadence."
    ),
    cadence: Optional[int] = typer.Option(
        None, "--cadence", min=1, max=10, help="Exchanges per capture pass (default: cadence_turns, 5)."
    ),
    backfill: bool = typer.Option(
        False, "--backfill", help="Capture this repository's past Claude Code, Codex, Gemini and aider sessions "
        "(or PATH's transcripts), oldest first; run again to resume."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Watch agent transcripts and capture memories from them as the conversation goes.

    Every `cadence_turns` exchanges, and whenever the agent compacts its context,
    a capture pass hands the new turns to the classifier (offline by default,
    an LLM when `classifier_model` is set); what it finds is written as memory
    files with their provenance. Offsets live in the cache, so a restart never
    re-reads or re-captures anything.
    """
    import threading

    from forgemem.capture.observer import Observer, claude_code_folder
    from forgemem.capture.transcripts import FORMATS as format_names
    from forgemem.capture.transcripts import detect_format
    from forgemem.store.folder import find_repo_root

    if backfill:
        if once or status or compaction or final or due or claude_code:
            raise UsageError("--backfill goes without --once, --due, --status, --compaction, --final and --claude-code")
        if len(paths or []) > 1:
            raise UsageError("--backfill takes one PATH at most (a transcript or a folder)")
        _backfill(paths[0] if paths else None, fmt, cadence, as_json)
        return
    if (compaction or final or due) and not once:
        raise UsageError("--compaction, --final and --due go with --once")
    targets = list(paths or [])
    if claude_code:
        root = find_repo_root(state.where()) or state.where()
        folder = claude_code_folder(root)
        if not folder.is_dir() and not status:
            raise UsageError(f"no Claude Code sessions for this repository at {folder}")
        targets.append(folder)
    for target in targets:
        if not target.exists() and not status:
            raise UsageError(f"no such file or folder: {target}")
        if not status and fmt is None and target.is_file() and detect_format(target) is None:
            warn(f"{target} is not a transcript forgemem can read ({', '.join(format_names)}); "
                 "name its format with --format")
    if not targets and not status:
        raise UsageError("name transcript files or folders to observe, or pass --claude-code")
    workspace = state.workspace(for_capture=not status)
    capturer = None
    if not status:
        from forgemem.capture.capturer import Capturer

        capturer = Capturer(workspace)  # a bad classifier setting fails here, not in every pass
    observer = Observer(workspace, targets, fmt=fmt, cadence=cadence, capturer=capturer, on_notice=warn)
    if status:
        _print_observe_status(observer.status(), as_json)
        return
    results: list[dict] = []

    def report(row, result) -> None:
        name = Path(row["path"]).name
        if result is None:
            warn(f"capture pass {row['id']} over {name} failed; see `forgemem observe --status`")
            return
        results.append({"path": row["path"], **result.to_dict()})
        if as_json:
            return
        for note in result.notes:
            warn(note)
        for memory in result.written:
            edge = ""
            if memory.supersedes:
                edge = f" (supersedes {short(memory.supersedes[0])})"
            elif memory.related:
                edge = f" ({memory.related[0].relationship} {short(memory.related[0].id)})"
            proposed = " (proposed)" if memory.status == PROPOSED else ""
            out.print(f"+ {short(memory.id)} {memory.scope}/{memory.category}{proposed}{edge}: "
                      f"{escape(one_line(memory))}")

    if once:
        final = final or not (due or compaction)  # a person's --once captures everything it read
        read, ran = observer.once(compaction=compaction, final=final, on_result=report)
        if as_json:
            emit_json({"turns_read": read, "passes": results, "waiting": observer.waiting()})
        else:
            written = sum(len(r["written"]) for r in results)
            err.print(f"read {read} turn(s), ran {ran} capture pass(es), wrote {memory_count(written)}")
            waiting = observer.waiting() if read and not (final or compaction) else 0
            if waiting:
                err.print(f"{waiting} exchange(s) wait until there are {observer.cadence} (cadence_turns) for a "
                          "capture pass; `--once` without `--due` captures them now")
        observer.hand_over()
        for folder in workspace.created:
            err.print(f"created the repository's store {folder} (as `forgemem init` does): review it with "
                      "`git status` and commit it, or delete it")
        return
    import signal

    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())  # a service manager's stop
    err.print(f"watching {len(targets)} path(s); capture every {observer.cadence} exchange(s); Ctrl-C stops")
    try:
        observer.watch(stop, on_result=report)
    except KeyboardInterrupt:
        stop.set()  # watch() has let the running pass finish; the rest stays pending for next time
    err.print("stopped watching")


def _short_path(path: str) -> str:
    parts = Path(path).parts
    return str(Path(*parts[-2:])) if len(parts) > 2 else path


def _print_observe_status(status: dict, as_json: bool) -> None:
    if as_json:
        emit_json(status)
        return
    out.print(f"state: {escape(status['state'])}  (capture every {status['cadence_turns']} exchanges)")
    for notice in status.get("notices") or []:
        out.print(escape(f"note ({notice['time']}): {notice['message']}"))
    if not status["transcripts"]:
        out.print("no transcripts observed yet")
        return
    from rich.table import Column, Table

    # the transcript's path folds onto more lines in a narrow terminal instead of being cut to "trial-trans…"
    table = Table(Column("transcript (last written, UTC)", overflow="fold", ratio=1, min_width=28), "format", "read",
                  "exchanges", "waiting", Column("passes", overflow="fold"), "chars sent", box=None)
    for t in status["transcripts"]:
        read = f"{t['offset']}/{t['size']}" if t["size"] is not None else f"{t['offset']} (gone)"
        passes = t["passes"]
        done = ", ".join(f"{n} {k}" for k, n in passes.items() if n) or "none"
        # the date under the name: transcript files are named by UUID, their dates tell them apart
        changed = (t.get("changed") or "").replace("T", " ").removesuffix("Z")[:16]  # "2026-11-27 10:31"
        table.add_row(
            escape(_short_path(t["path"])) + (f"\n{changed}" if changed else ""), t["format"], read,
            str(t["exchanges"]), str(t["since_last_pass"]), done, str(t["chars_sent"]),
        )
    out.print(table)
    for t in status["transcripts"]:
        if t.get("skipped_records"):
            out.print(escape(f"{Path(t['path']).name}: {t['skipped_records']} record(s) that could not be read were "
                             "skipped (said in the hooks log, or by `observe`, when it happened)"))
        for p in t["recent"][:3]:
            line = f"  pass {p['id']} {p['trigger']} {p['status']}"
            if p["status"] == "done":
                line += f" by {p['classifier']}: {len(p['written'])} written, {p['skipped']} skipped, {p['seconds']} s"
                line += "".join(f", {n}" for n in p.get("notes") or [] if n.startswith("cost: "))  # an agent CLI's report
            if p["error"]:
                line += f": {p['error']}"
            out.print(escape(f"{Path(t['path']).name}{line}"))
    _print_last_writes(status.get("writes") or [])


def _print_last_writes(writes: list[dict]) -> None:
    """The newest memories capture wrote (all transcripts of this state), newest first."""
    if not writes:
        return
    out.print("last writes:")
    for w in writes:
        pending = "  (not announced yet)" if w.get("announced") is False else ""
        proposed = " (proposed)" if w.get("proposed") else ""
        proposed += f" ({w['now']})" if w.get("now") in ("replaced", "gone") else ""
        out.print(escape(f"  {w['time']} {w['transcript']} {short(w['id'])} {w['scope']}/{w['category']}{proposed}: "
                         f"{w['text']}{pending}"))



def _backfill(path: Path | None, fmt: str | None, cadence: int | None, as_json: bool) -> None:
    """`observe --backfill`: a progress bar (a line per transcript when not on a terminal), then a summary."""
    from forgemem.capture import backfill
    from forgemem.store.folder import find_repo_root

    if path is not None and not path.exists():
        raise UsageError(f"no such file or folder: {path}")
    root = find_repo_root(state.where()) or state.where()
    workspace = state.workspace(for_capture=True)
    progress = _BackfillProgress(quiet=as_json)
    try:
        summary = backfill.run(workspace, root, path, fmt=fmt, cadence=cadence, on_progress=progress,
                               on_notice=None if as_json else warn)
    except KeyboardInterrupt:
        progress.close()
        err.print("interrupted: run `forgemem observe --backfill` again to carry on where it stopped")
        raise typer.Exit(130) from None
    progress.close()
    if as_json:
        emit_json(summary.to_dict())
        return
    if not summary.transcripts:
        where = f"in {path}" if path is not None else "in " + ", ".join(backfill.places(root))
        out.print(escape(f"no past sessions found {where}"))
        return
    _print_backfill_summary(summary)
    for folder in workspace.created:
        err.print(f"created the repository's store {folder} (as `forgemem init` does): review it with "
                  "`git status` and commit it, or delete it")


class _BackfillProgress:
    """A rich progress bar over transcripts with a running count; on a pipe, one line per transcript."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.bar: Any = None  # a rich Progress, made on the first call (rich is imported only then)
        self.task: Any = None

    def __call__(self, number: int, total: int, result, summary, finished: bool) -> None:
        if self.quiet:
            return
        written = len(summary.written)
        counts = f"{memory_count(written)} written, {summary.skipped} skipped"
        if summary.failed_passes:
            counts += f", {summary.failed_passes} failed"
        if err.is_terminal:
            if self.bar is None:
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

                self.bar = Progress(TextColumn("[bold]backfill"), BarColumn(), MofNCompleteColumn(),
                                    TextColumn("{task.description}"), TimeElapsedColumn(), console=err,
                                    transient=True)
                self.bar.start()
                self.task = self.bar.add_task("", total=total)
            self.bar.update(self.task, completed=number if finished else number - 1,
                            description=escape(f"{counts} · {result.name}"))
            if finished and result.status != "done before":
                self.bar.console.print(_transcript_line(number, total, result))
        elif finished:
            err.print(f"{_transcript_line(number, total, result)} ({counts})")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def _transcript_line(number: int, total: int, result) -> str:
    detail = {"done before": "captured before",
              "busy": "left unfinished (another process holds it, or it grew meanwhile): run again"}.get(result.status)
    if detail is None:
        detail = f"{result.passes} pass(es), {result.written} written"
        if result.failed:
            detail += f", {result.failed} failed"
    return escape(f"[{number}/{total}] {result.agent or result.format or '?'} {result.name}: {detail}")


def _print_backfill_summary(summary) -> None:
    """Memories written per scope and category, supersessions, skipped, failed, and what to do next."""
    data = summary.to_dict()
    out.print(f"{data['found']} transcript(s): {data['captured']} captured now, {data['done_before']} captured before"
              + (f", {data['failed']} with failures" if data["failed"] else "")
              + (f", {data['busy']} left unfinished (run again)" if data["busy"] else ""))
    if data["by_scope_and_category"]:
        from rich.table import Table

        table = Table("scope", "category", "written", box=None, pad_edge=False)
        for scope, categories in sorted(data["by_scope_and_category"].items()):
            for category, n in sorted(categories.items()):
                table.add_row(scope, category, str(n))
        out.print(table)
    written = len(data["written"])
    out.print(f"{memory_count(written)} written ({data['supersessions']} superseding an "
              f"earlier one), {data['skipped']} proposal(s) skipped (duplicates or captured before), "
              f"{data['failed_passes']} pass(es) failed")
    for result in summary.transcripts:
        for error in result.errors[:3]:
            warn(f"{result.name}: {error}")
    if data["proposed"] and written:
        out.print(f"capture_review is on: the {written} new memor{'y waits' if written == 1 else 'ies wait'} "
                  "for you in `forgemem review` (accept with `forgemem review --accept ID`)")
    if data["failed_passes"]:
        out.print("details of the failed passes: `forgemem observe --status`")
