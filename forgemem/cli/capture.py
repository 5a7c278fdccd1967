"""The capture command: observe."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from forgemem.cli.app import JSON_OPTION, app, emit_json, err, out, state, warn
from forgemem.errors import UsageError
from forgemem.store.model import one_line, short


@app.command()
def observe(
    paths: list[Path] = typer.Argument(
        None, metavar="[PATH]...", help="Transcript files or folders (searched recursively)."
    ),
    once: bool = typer.Option(False, "--once", help="Process what is new, run the passes that fell due, exit."),
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
        False, "--final", help="With --once: the session ended; also capture exchanges short of the cadence."
    ),
    cadence: Optional[int] = typer.Option(
        None, "--cadence", min=1, max=10, help="Exchanges per capture pass (default: cadence_turns, 5)."
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
    from forgemem.store.folder import find_repo_root

    if (compaction or final) and not once:
        raise UsageError("--compaction and --final go with --once")
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
            out.print(f"+ {short(memory.id)} {memory.scope}/{memory.category}{edge}: {escape(one_line(memory))}")

    if once:
        read, ran = observer.once(compaction=compaction, final=final, on_result=report)
        if as_json:
            emit_json({"turns_read": read, "passes": results})
        else:
            written = sum(len(r["written"]) for r in results)
            err.print(f"read {read} turn(s), ran {ran} capture pass(es), wrote {written} memor{'y' if written == 1 else 'ies'}")
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
    from rich.table import Table

    table = Table("transcript", "format", "read", "exchanges", "waiting", "passes", "chars sent", box=None)
    for t in status["transcripts"]:
        read = f"{t['offset']}/{t['size']}" if t["size"] is not None else f"{t['offset']} (gone)"
        passes = t["passes"]
        done = ", ".join(f"{n} {k}" for k, n in passes.items() if n) or "none"
        table.add_row(
            escape(_short_path(t["path"])), t["format"], read, str(t["exchanges"]), str(t["since_last_pass"]),
            done, str(t["chars_sent"]),
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
        out.print(escape(f"  {w['time']} {w['transcript']} {short(w['id'])} {w['scope']}/{w['category']}: "
                         f"{w['text']}{pending}"))

