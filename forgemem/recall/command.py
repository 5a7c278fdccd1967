"""The `forgemem recall QUERY` command line: its request, and what it prints, wherever it runs.

The `recall` command (`forgemem.cli.recall`) builds its request with `recall_request` and prints the answer
with `show_answer`. A warm recall's fast path (`forgemem.cli.quick`) loads none of that: it sends the command
line's options, its folder and its terminal to the running recall server (op "recall-command"), which opens
the workspace, answers and prints into text as the command would have printed it (`answer_command`); the
client writes that text out. So both print through the same code and cannot drift apart.

The server answers a command line only when the client's environment is its own (`command_environment`:
HOME and the `FORGEMEM_*` variables, which decide where the stores and the config are); for anything it
would not answer exactly as the command would (another environment, a value the command refuses, a store it
does not serve, an error), it says no and the client runs the full command instead.
"""

from __future__ import annotations

import functools
import io
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from forgemem.environment import command_environment, embeddings_disabled
from forgemem.recall.protocol import MAX_HOPS, MAX_K, BadRequest, Request, store_dirs
from forgemem.store.model import CATEGORIES, PROPOSED, short, visible_controls

#: what `recall --scope` accepts (the command and the server check it; `MAX_HOPS` bounds `--hops`)
SCOPE_CHOICES = ("repo", "user", "all")
MAX_QUERY_CHARS = 10_000
#: the client's environment variables that decide how rich prints to its terminal
TERMINAL_VARIABLES = ("TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE",
                      "COLUMNS", "LINES")


def new_console(**options: Any):
    """A rich console that prints as the CLI's do (`forgemem.cli.output`), and so the server's copies of a
    client's terminal: markup, no guessed highlights, lines as long as they are, memory text as written
    (`:100:` is no emoji), control characters shown as `\\xNN`."""
    return _plain_text_console()(highlight=False, soft_wrap=True, emoji=False, **options)


@functools.cache
def _plain_text_console() -> type:
    from rich.console import Console

    class PlainTextConsole(Console):
        """Prints every string (a line, a table cell) with its control characters shown as `\\xNN`: a
        memory file from a cloned repository cannot send an escape sequence to the terminal."""

        def render_str(self, text: str, **kwargs: Any):
            return super().render_str(visible_controls(text), **kwargs)

    return PlainTextConsole


@dataclass
class Printer:
    """Where a command's text goes: `out` and `err`, rich consoles (the CLI's own, or a client's terminal
    reproduced in the server)."""

    out: Any
    err: Any

    def warn(self, message: str) -> None:
        from rich.markup import escape

        self.err.print(f"forgemem: {escape(message)}")

    def json(self, data: Any) -> None:
        self.out.file.write(json_text(data, indent=2) + "\n")


_C1 = re.compile(r"[\x7f-\x9f]")


def json_text(data: Any, indent: int | None = None) -> str:
    """JSON as the CLI prints it: non-ASCII text as is, every control character escaped (json escapes
    C0 itself; DEL and C1, which a terminal may read as an escape, become `\\u00NN` here)."""
    return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(data, indent=indent, ensure_ascii=False))


def style_scope(scope: str) -> str:
    return "[cyan]repo[/]" if scope == "repo" else "[magenta]user[/]"


def recall_request(workspace, items: list[dict], *, k: int | None, scope: str, category: str | None,
                   tags: list[str], hops: int | None, history: bool, floor: float, lexical_only: bool) -> dict:
    """The request for these queries ({"query", optional "k"} each) with the workspace's settings."""
    config = workspace.config
    base = dict(
        k=k or config.retrieval_top_k,
        scope=None if scope == "all" else scope,
        category=category,
        tags=list(tags),
        hops=config.retrieval_hop_depth if hops is None else hops,
        history=history,
    )
    return {
        "op": "recall",
        "stores": store_dirs(workspace),
        "use_embeddings": not lexical_only and not embeddings_disabled(),  # this process's environment decides
        "queries": [{**base, "text": item["query"], "k": item.get("k", base["k"]), "floor": floor} for item in items],
    }


def show_answer(printer: Printer, workspace, query: str, answer: dict, *, explain: bool, show_all: bool,
                as_json: bool, deeper: list[dict] | None = None) -> None:
    """One query's answer: its notes on stderr, then the hits as text or JSON."""
    unreadable_note(workspace, answer)
    for note in answer["notes"]:
        if note not in workspace.warnings:  # those were said when the workspace opened
            printer.warn(note)
    floor = workspace.config.recall_floor
    hits = answer["results"][0]
    below = sum(1 for h in hits if h["score"] < floor) if show_all else answer["below_floor"][0]
    if as_json:
        printer.json({
            "query": query, "lexical_only": answer["lexical_only"], "notes": answer["notes"],
            "served_by": answer.get("served_by"), "floor": floor, "below_floor": below, "results": hits,
            **({"deep": deeper[0]} if deeper else {}),
        })
        return
    print_hits(printer.out, hits, explain, floor, below, show_all)


def print_hits(out, hits: list[dict], explain: bool, floor: float, below: int, show_all: bool) -> None:
    from rich.markup import escape

    if not hits:
        out.print("no matching memories" if not below else
                  f"nothing relevant: no memory scores {floor:.2f} or more for this (--all to see the closest)")
        return
    for n, hit in enumerate(hits, start=1):
        flags = ""
        if hit["superseded_by"]:
            flags += f" [yellow](superseded by {', '.join(short(x) for x in hit['superseded_by'])})[/]"
        if hit["conflicts"]:
            flags += " [red]CONFLICT[/]"
        if hit.get("status") == PROPOSED:
            flags += " [magenta](proposed: not reviewed yet)[/]"
        out.print(
            f"[bold]{n:>2}. {short(hit['id'])}[/]  {style_scope(hit['scope'])}  {hit['category']}  "
            f"v{hit['version']}  [dim]score {hit['score']:.3f}[/]{flags}"
        )
        for line in hit["content"].splitlines() or [""]:
            out.print(f"    {escape(line)}")
        if hit["via"] and not explain:
            out.print(f"    [dim]via {escape(describe_via(hit['via']))}[/]")
        if hit["conflicts"]:
            out.print(f"    [red]contradicted by {', '.join(short(x) for x in hit['conflicts'])}: "
                      f"`forgemem resolve {short(hit['id'])}` writes one version in place of both[/]")
        if explain:
            e = hit["explain"]
            lexical = (f"bm25 {e['lexical_score']:.2f}, {e['lexical_share']:.0%} of the query"
                       if e["lexical_score"] is not None else "no word match")
            dense = f"cosine {e['dense_score']:.3f}" if e["dense_score"] is not None else "no vector"
            parts = [
                f"lexical rank {e['lexical_rank'] or '-'} ({lexical})",
                f"dense rank {e['dense_rank'] or '-'} ({dense})",
            ] + [f"{k} {v:+.3f}" for k, v in {**e.get("surroundings", {}), **e["priors"]}.items()] + [
                f"combined {e['combined']:.3f}, place {e['position'] or '-'}: relevance {e['fused']:.3f}",
            ] + ([f"score {hit['score']:.3f} over the edge from the match it is linked to"]
                 if hit["via"] and hit["score"] > e["fused"] + 5e-4 else [])
            out.print(f"    [dim]why: {escape(e['why'])}[/]")
            out.print(f"    [dim]{escape(' · '.join(parts))}[/]")
            out.print(f"    [dim]{escape(hit['path'] or '')}[/]")
    shown = sum(1 for h in hits if h["score"] >= floor)
    if show_all:
        out.print(f"[dim]{shown} relevant (score {floor:.2f} or more), {len(hits) - shown} under it[/]")
    elif below:
        beside = len(hits) - shown  # under the floor, shown because it contradicts a relevant one
        out.print(f"{shown} relevant" + (f", shown with {beside} contradicting it" if beside else "")
                  + f"; nothing else above {floor:.2f} (--all to see the rest)")


def describe_via(via: list[dict]) -> str:
    from forgemem.store.graph import Step

    return ", ".join(Step(s["from"], s["relationship"], s["to"], s["reverse"]).describe() for s in via)


def unreadable_note(workspace, answer: dict) -> str | None:
    """A note (for stderr, and `notes` in JSON) when memory files could not be read: recall left them out."""
    from forgemem.index.problems import count, summary

    line = summary(count(workspace.stores.values()))
    if line and line not in answer["notes"]:
        answer["notes"].append(line)
    return line


# ------------------------------------------------------------ a command line answered by the server


@dataclass(frozen=True)
class CommandLine:
    """A plain `forgemem recall QUERY …` as the fast path sends it (op "recall-command"), checked."""

    folder: Path  # the client's working folder: relative paths below are relative to it
    cwd: Path | None  # -C / --cwd
    repo_dir: Path | None
    user_dir: Path | None
    query: str
    k: int | None
    scope: str
    category: str | None
    tags: tuple[str, ...]
    hops: int | None
    history: bool
    show_all: bool
    as_json: bool
    terminal: dict
    environment: dict

    @classmethod
    def parse(cls, data: dict) -> CommandLine:
        """The command line in a request; BadRequest for anything the command would refuse or say more about."""
        folder = data.get("folder")
        if not isinstance(folder, str) or "\0" in folder or not os.path.isabs(folder):
            raise BadRequest('"folder" must be an absolute path')
        paths: dict[str, Path | None] = {}
        for key in ("cwd", "repo_dir", "user_dir"):
            value = data.get(key)
            if value is None:
                paths[key] = None
            elif not isinstance(value, str) or not value or "\0" in value:
                raise BadRequest(f'"{key}" must be a path')
            else:  # as the CLI reads them: -C as given, the stores with ~ expanded
                paths[key] = Path(folder) / (Path(value) if key == "cwd" else Path(value).expanduser())
        cwd = paths["cwd"]
        if cwd is not None and not cwd.is_dir():
            raise BadRequest("-C is not a folder")  # the command says so, in its words
        query = data.get("query")
        if not isinstance(query, str) or len(query) > MAX_QUERY_CHARS:
            raise BadRequest('"query" must be text')
        if not query.strip():
            raise BadRequest("the query is empty")  # a usage error: the command says so
        k, hops = data.get("k"), data.get("hops")
        for name, value, low, high in (("k", k, 1, MAX_K), ("hops", hops, 0, MAX_HOPS)):
            if value is not None and (type(value) is not int or not low <= value <= high):
                raise BadRequest(f'"{name}" is out of range')
        scope, category, tags = data.get("scope"), data.get("category"), data.get("tags")
        if scope not in SCOPE_CHOICES or category is not None and category not in CATEGORIES:
            raise BadRequest("unknown scope or category")
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags) or len(tags) > 100:
            raise BadRequest('"tags" must be a list of text')
        history, show_all, as_json = (data.get(key) for key in ("history", "show_all", "as_json"))
        if not (isinstance(history, bool) and isinstance(show_all, bool) and isinstance(as_json, bool)):
            raise BadRequest("flags must be true or false")
        terminal, environment = data.get("terminal"), data.get("environment")
        if not isinstance(terminal, dict) or not _text_map(terminal.get("environ")) or not _text_map(environment):
            raise BadRequest('"terminal" and "environment" must be objects of text')
        return cls(Path(folder), cwd, paths["repo_dir"], paths["user_dir"], query, k, scope, category,
                   tuple(tags), hops, history, show_all, as_json, terminal, environment)


def _text_map(value: object) -> TypeGuard[dict[str, str]]:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


@dataclass(frozen=True)
class Prepared:
    """A command line the server answers: the line, the workspace it opened, the request it asks itself."""

    line: CommandLine
    workspace: Any
    request: Request


def prepare(data: dict, uid: int | None = None) -> Prepared | dict:
    """The request for a command line, opened as the command would open it; `{"ok": false, "error"}` where
    the client must run the command itself (another environment, a value or store the server does not take)."""
    from forgemem.errors import ForgememError
    from forgemem.workspace import Workspace

    try:
        line = CommandLine.parse(data)
    except BadRequest as exc:
        return {"ok": False, "error": f"bad request: {exc}"}
    if line.environment != command_environment():
        return {"ok": False, "error": "another environment: the command runs in the client"}
    try:
        workspace = Workspace.open(cwd=line.cwd or line.folder, repo_dir=line.repo_dir, user_dir=line.user_dir)
        request = recall_request(workspace, [{"query": line.query}], k=line.k, scope=line.scope,
                                 category=line.category, tags=list(line.tags), hops=line.hops, history=line.history,
                                 floor=0.0 if line.show_all else workspace.config.recall_floor, lexical_only=False)
        return Prepared(line, workspace, Request.parse(request, strict=True, uid=uid))  # a store it does not serve
    except (ForgememError, BadRequest) as exc:
        return {"ok": False, "error": str(exc)}


def printout(prepared: Prepared, answer: dict) -> dict:
    """`{"ok": true, "stdout", "stderr", "exit_code"}`: the text `forgemem recall` prints for this answer on the
    client's terminal; `{"ok": false, "error"}` for a failed answer (the command says it, in its words)."""
    if not answer["ok"]:
        return {"ok": False, "error": answer["error"]}
    line, workspace = prepared.line, prepared.workspace
    answer["served_by"] = os.getpid()
    printer = Printer(_console(line.terminal, "stdout"), _console(line.terminal, "stderr"))
    for message in workspace.warnings:
        printer.warn(message)
    show_answer(printer, workspace, line.query, answer, explain=False, show_all=line.show_all, as_json=line.as_json)
    return {"ok": True, "stdout": printer.out.file.getvalue(), "stderr": printer.err.file.getvalue(), "exit_code": 0}


class _Stream(io.StringIO):
    """Text for a client's stdout or stderr, which rich asks what it is (a terminal? which encoding?)."""

    def __init__(self, tty: bool, encoding: str):
        super().__init__()
        self._tty, self._encoding = tty, encoding

    def isatty(self) -> bool:
        return self._tty

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._encoding


def _console(terminal: dict, stream: str):
    """A rich console that prints as the CLI's `out`/`err` would print on the client's terminal."""
    environ = dict(terminal["environ"])  # text only (`CommandLine.parse`)
    size = terminal.get("size")
    columns, lines = size if isinstance(size, list) and len(size) == 2 else (None, None)
    width = int(environ["COLUMNS"]) if environ.get("COLUMNS", "").isdigit() else columns if type(columns) is int else 80
    height = int(environ["LINES"]) if environ.get("LINES", "").isdigit() else lines if type(lines) is int else 25
    file = _Stream(terminal.get(f"{stream}_tty") is True, str(terminal.get(f"{stream}_encoding") or "utf-8"))
    return new_console(file=file, width=width, height=height, legacy_windows=False, force_jupyter=False,
                       _environ=environ)
