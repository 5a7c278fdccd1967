"""`forgemem tidy`: near-duplicates, contradictions, stale and long-unused memories, one decision at a time."""

from __future__ import annotations

import typer
from rich.markup import escape

from forgemem.cli.app import JSON_OPTION, _Progress, app, emit_json, err, out, state, warn
from forgemem.errors import UsageError

_NOT_INTERACTIVE = ("tidy asks one question at a time and stdin is not interactive: run it in a terminal, "
                    "or pass --yes (the safe default for each) or --dry-run (only list)")
_TITLES = {"duplicate": "near-duplicates", "conflict": "conflict", "contradiction": "likely contradiction",
           "stale": "stale", "unused": "long unused"}


@app.command()
def tidy(
    dry_run: bool = typer.Option(False, "--dry-run", help="List what it would ask; change nothing."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Take the safe default for every question (for scripts)."),
    unused_days: int = typer.Option(90, "--unused-days", help="A memory no recall returned in this many days is long unused."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Walk through near-duplicates, contradictions, stale and long-unused memories, one decision at a time.

    Every change is a new version or a retraction (nothing is deleted). --yes
    merges same-store near-duplicates into one version with the newer text and
    retracts memories that are both stale and long unused; it leaves the rest.
    """
    from forgemem.curate.tidy import tidy as run

    if dry_run and yes:
        raise UsageError("give --dry-run or --yes, not both")
    ui = err if as_json else out  # with --json, stdout is for the JSON alone
    asker = None if (dry_run or yes) else _Asker(ui)
    if asker is not None and _no_one_to_ask():
        raise UsageError(_NOT_INTERACTIVE)
    progress = _Progress("embedding memories")
    if asker is not None:
        asker.before = progress.close  # the bar of a first index build goes before the first question
    try:
        report = run(state.workspace(), ask=asker, yes=yes, dry_run=dry_run, unused_days=unused_days,
                     progress=progress, on_notice=warn, said=None if as_json else _said)
    finally:
        progress.close()
    if asker is not None and asker.ended:
        warn("stdin ended: the remaining questions are left for the next `forgemem tidy`")
    if as_json:
        emit_json(report.to_dict())
        return
    if not report.questions:
        out.print("nothing to tidy: no near-duplicates, conflicts, stale or long-unused memories")
        return
    if dry_run:
        for n, question in enumerate(report.questions, start=1):
            _show(out, question, n, len(report.questions))
        out.print(f"{len(report.questions)} question(s); nothing was changed")
        return
    counts = {done: sum(1 for a in report.actions if a["done"] in kinds)
              for done, kinds in (("changed", ("superseded", "retracted")), ("kept", ("kept",)),
                                  ("skipped", ("skipped",)))}
    out.print(", ".join(f"{n} {done}" for done, n in counts.items())
              + (f", {len(report.questions) - len(report.actions)} not asked" if report.stopped else ""))


def _show(ui, question, n: int, total: int) -> None:
    from forgemem.curate.tidy import describe

    ui.print(f"[bold]{escape(f'[{n}/{total}]')} {_TITLES[question.kind]}[/]: {escape(question.detail)}")
    for memory in question.memories:
        ui.print(f"  {escape(describe(memory))}")
    for answer, meaning in question.choices.items():
        marker = " (default)" if answer == question.default else ""
        ui.print(f"    [bold]{escape(answer[0])}[/] {escape(answer)}: {escape(meaning)}{marker}")


class _Asker:
    """Asks each question with a rich prompt: an answer's first letter or its word; q stops."""

    def __init__(self, ui):
        self.ui = ui
        self.answered = 0
        self.ended = False
        self.before = lambda: None

    def __call__(self, question, n: int, total: int) -> str | None:
        from rich.prompt import Prompt

        self.before()
        _show(self.ui, question, n, total)
        self.ui.print("    [bold]q[/] quit: leave this and the rest for later")
        letters = {answer[0]: answer for answer in question.choices}
        try:
            said = Prompt.ask(escape(f"  choose [{'/'.join([*letters, 'q'])}]"), console=self.ui, show_choices=False,
                              choices=[*letters, *question.choices, "q", "quit"], default=question.default[0],
                              case_sensitive=False)
        except (EOFError, OSError, ValueError, RuntimeError):  # no stdin, or it ended
            return self._ended()
        said = said.strip().lower()
        if not _terminal():
            self.ui.print(escape(said))  # an answer read from a pipe is not echoed: the transcript shows it
        if said in ("q", "quit"):
            return None
        self.answered += 1
        return letters.get(said, said)

    def _ended(self) -> str | None:
        if not self.answered:
            raise UsageError(_NOT_INTERACTIVE)
        self.ended = True
        return None


def _said(action: dict) -> None:
    from forgemem.store.model import short

    written = ", ".join(short(i) for i in action.get("written", []))
    if action["done"] == "skipped":
        line = "skipped" + (f": {action['why']}" if action.get("why") else "")
    elif action["done"] == "kept":
        line = "kept as it is (not asked again)"
    elif action["done"] == "superseded":
        line = f"wrote {written}, one version in place of {', '.join(short(i) for i in action['ids'])}"
    else:
        line = f"retracted ({written})"
    out.print(f"  → {escape(line)}")


def _no_one_to_ask() -> bool:
    """stdin can give no answer: missing, closed, or a device that is not a terminal (/dev/null). A pipe or a
    file may hold answers (a script's); one that ends before the first answer is the same error."""
    import io
    import os
    import stat
    import sys

    stream = sys.stdin
    if stream is None or stream.closed:
        return True
    try:
        fd = stream.fileno()
    except (OSError, ValueError, io.UnsupportedOperation):
        return False  # in memory: answers may be in it
    return not os.isatty(fd) and stat.S_ISCHR(os.fstat(fd).st_mode)


def _terminal() -> bool:
    import sys

    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False
