"""The `forgemem` command's shared parts: the typer app, global options, output helpers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import click
import typer
from rich.markup import escape
from typer.core import TyperGroup

from forgemem import __version__
from forgemem.cli.output import emit_json, err, out, warn  # noqa: F401 - the commands import them from here
from forgemem.cli.output import style_scope as _style_scope  # noqa: F401
from forgemem.errors import UsageError
from forgemem.workspace import Workspace

#: `forgemem --help` lists the commands in these groups, in this order; a command in none of them shows under
#: "Other" (tests/test_cli.py keeps every command in one)
HELP_SECTIONS = (
    ("Start", ("init", "add", "recall", "status")),
    ("Memories", ("list", "show", "history", "edit", "link", "forget", "resolve", "conflicts", "graph", "stats")),
    ("Agents and capture", ("install", "uninstall", "observe", "context", "feedback", "mcp")),
    ("Review and upkeep", ("review", "tidy", "consolidate", "validate", "doctor", "index", "serve")),
    ("Other tools' files", ("import", "export")),
    ("Repository configs", ("trust", "untrust")),
    ("Run by agents and git", ("hook", "slash", "diff-driver", "merge-driver")),
)


class _SectionedGroup(TyperGroup):
    """The top-level help in `HELP_SECTIONS`' groups instead of one list in the order modules were loaded."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        found = {name: self.get_command(ctx, name) for name in self.list_commands(ctx)}
        commands = {name: command for name, command in found.items() if command is not None and not command.hidden}
        if not commands:
            return
        limit = formatter.width - 6 - max(len(name) for name in commands)
        placed = {name for _, names in HELP_SECTIONS for name in names}
        for title, names in (*HELP_SECTIONS, ("Other", tuple(sorted(set(commands) - placed)))):
            rows = [(name, commands[name].get_short_help_str(limit)) for name in names if name in commands]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


app = typer.Typer(
    cls=_SectionedGroup,
    name="forgemem",
    help="Long-term memory for AI coding agents, kept as markdown files in git.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    # click (8.2+) already says "Did you mean …?"; typer would say it a second time
    suggest_commands=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


JSON_OPTION = typer.Option(False, "--json", help="Print JSON for scripts instead of a table.")


class State:
    repo_dir: Optional[Path] = None
    user_dir: Optional[Path] = None
    cwd: Optional[Path] = None
    _workspace: Optional[Workspace] = None

    def workspace(self, for_capture: bool = False) -> Workspace:
        """The stores (opened once; `for_capture`: a git repository without `.forge/` gets its repo
        store when capture first writes to it)."""
        if self._workspace is None:
            self._workspace = Workspace.open(cwd=self.cwd, repo_dir=self.repo_dir, user_dir=self.user_dir,
                                             repo_on_first_write=for_capture)
            for message in self._workspace.warnings:
                warn(message)
            self._workspace.on_notice = warn  # what a write cleaned up or found already written
        return self._workspace

    def where(self) -> Path:
        """The folder commands work for: `-C DIR`, else the current one."""
        return (self.cwd or Path.cwd()).absolute()


state = State()


def _version(value: bool) -> None:
    if value:
        print(f"forgemem {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    repo_dir: Optional[Path] = typer.Option(
        None,
        "--repo-dir",
        envvar="FORGEMEM_REPO_DIR",
        help="The repo-scope memory folder itself (e.g. path/.forge/memory); default: "
        "found by walking up from the current folder.",
    ),
    user_dir: Optional[Path] = typer.Option(
        None,
        "--user-dir",
        envvar="FORGEMEM_USER_DIR",
        help="The user-scope memory folder itself; default ~/.forge/memory.",
    ),
    cwd: Optional[Path] = typer.Option(
        None,
        "-C",
        "--cwd",
        help="Work as if started in this folder (the repo store is found from there); "
        "the current folder is not changed.",
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    if cwd is not None and not cwd.is_dir():
        raise UsageError(f"-C {cwd}: not a folder")
    state.repo_dir = repo_dir
    state.user_dir = user_dir
    state.cwd = cwd
    state._workspace = None


def show_problem(problem) -> str:
    """A problem with its path relative to the current folder where that is shorter."""
    text = str(problem)
    if problem.path is not None:
        try:
            relative = os.path.relpath(problem.path)
        except ValueError:
            relative = str(problem.path)
        if not relative.startswith(".."):
            text = relative + text[len(str(problem.path)):]
    return escape(text)


def _repo_root() -> Path:
    from forgemem.store.folder import find_repo_root

    ws = state.workspace()
    repo = ws.stores.get("repo")
    start = repo.memory_dir if repo is not None else state.where()
    root = find_repo_root(start if start.exists() else state.where())
    if root is None:
        raise UsageError("not in a git repository")
    return root


def _engine(use_embeddings: bool = True):
    from forgemem.recall.engine import RecallEngine

    engine = RecallEngine(state.workspace(), use_embeddings=use_embeddings, on_notice=warn)
    return engine


class _Progress:
    """A rich progress bar for long index builds; silent for small ones and when piped."""

    def __init__(self, label: str, threshold: int = 200):
        self.label, self.threshold = label, threshold
        self.bar = None
        self.task = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            if total < self.threshold or not err.is_terminal:
                return
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

            self.bar = Progress(
                f"[bold]{self.label}", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                console=err, transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=total)
        self.bar.update(self.task, completed=done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
            self.threshold = 1 << 62  # closed for good: a later call draws nothing


def _refresh(engine, label: str = "embedding memories"):
    progress = _Progress(label)
    try:
        return engine.refresh(progress=progress)
    finally:
        progress.close()
