"""The `forgemem` command: a thin layer over `forgemem.workspace`.

Exit codes: 0 ok, 1 problems found (or an operation failed), 2 usage error.
Errors go to stderr as one sentence; set FORGEMEM_DEBUG=1 for tracebacks.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape

from forgemem import __version__
from forgemem.errors import EXIT_PROBLEMS, ForgememError, UsageError, require_choice
from forgemem.store.model import CATEGORIES, RELATIONSHIPS, Memory, format_timestamp, utc_now
from forgemem.views import added_json, conflicts_json, forgotten_json, linked_json, memory_json
from forgemem.workspace import Snapshot, Workspace, default_forge_dir, init_forge_dir

app = typer.Typer(
    name="forgemem",
    help="Long-term memory for AI coding agents, kept as markdown files in git.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

JSON_OPTION = typer.Option(False, "--json", help="Print JSON for scripts instead of a table.")


class State:
    repo_dir: Optional[Path] = None
    user_dir: Optional[Path] = None
    cwd: Optional[Path] = None
    _workspace: Optional[Workspace] = None

    def workspace(self) -> Workspace:
        if self._workspace is None:
            self._workspace = Workspace.open(cwd=self.cwd, repo_dir=self.repo_dir, user_dir=self.user_dir)
            for message in self._workspace.warnings:
                warn(message)
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


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def warn(message: str) -> None:
    err.print(f"forgemem: {escape(message)}")


def load() -> Snapshot:
    snap = state.workspace().load()
    if snap.problems:
        warn(f"{len(snap.problems)} problem(s) in the memory files; run `forgemem validate` to see them")
    return snap


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


def _style_scope(scope: str) -> str:
    return "[cyan]repo[/]" if scope == "repo" else "[magenta]user[/]"


# ------------------------------------------------------------------ init


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
    created = init_forge_dir(forge_dir)
    for path in created:
        out.print(f"created {path}")
    if not created:
        out.print(f"{forge_dir} is already set up")


# ------------------------------------------------------------------ trust


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


# ------------------------------------------------------------------ add


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
        None, "--category", "-c", help=f"One of: {', '.join(CATEGORIES)}."
    ),
    tags: str = typer.Option("", "--tags", "-t", help="Comma-separated tags."),
    supersedes: list[str] = typer.Option(
        [], "--supersedes", help="Write a new version of this memory (repeat to merge several)."
    ),
    relates: list[str] = typer.Option(
        [], "--relates", help=f"ID:relationship, relationship one of {', '.join(RELATIONSHIPS)}."
    ),
    confidence: Optional[float] = typer.Option(None, "--confidence", help="0 to 1."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Write a new memory file and print its id and path."""
    if text == "-":
        text = sys.stdin.read()
    memory, redacted = state.workspace().add(
        text,
        scope=scope,
        category=category,
        tags=tags.split(",") if tags else (),
        supersedes=supersedes,
        related=_parse_relates(relates),
        confidence=confidence,
    )
    if redacted:
        warn(f"redacted {len(redacted)} secret(s) before writing: {', '.join(sorted(set(redacted)))}")
    if as_json:
        emit_json(added_json(memory, redacted))
    else:
        print(f"{memory.id}\t{memory.path}")


# ------------------------------------------------------------------ list / show / history


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
            f"{escape(m.title)}"
        )
        # In a terminal one memory per line; piped output keeps the whole title.
        if out.is_terminal:
            out.print(line, no_wrap=True, overflow="ellipsis")
        else:
            out.print(line)
    out.print(f"[dim]{len(memories)} memories[/]")


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
        if key != "tags":
            out.print(f"[dim]{escape(key)}: {escape(str(value))}[/]")
    out.print()
    out.print(escape(memory.body))
    out.print()
    for older in memory.supersedes:
        out.print(f"supersedes {older}")
    for newer in snap.graph.superseded_by.get(memory.id, []):
        out.print(f"[yellow]superseded by {newer}[/]")
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
        out.print(f"    {escape(m.title)}")


# ------------------------------------------------------------------ link / forget / edit


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
    memfile.rewrite(edited)
    out.print(f"saved {memory.path}")


# ------------------------------------------------------------------ graph


def _label(memory: Memory) -> str:
    title = memory.title if len(memory.title) <= 70 else memory.title[:67] + "..."
    return f"{memory.short_id()} v{memory.version} [{memory.category}] {title}"


@app.command()
def graph(
    memory_id: Optional[str] = typer.Argument(None, metavar="[ID]", help="Start here (default: all memories)."),
    fmt: str = typer.Option("tree", "--format", "-f", help="tree, dot or json."),
    hops: int = typer.Option(2, "--hops", help="With ID: how many edges to follow.", min=0),
) -> None:
    """Show memories and their typed edges as a tree, Graphviz dot or JSON."""
    from rich.tree import Tree

    if fmt not in ("tree", "dot", "json"):
        raise UsageError(f"unknown format {fmt!r} (expected tree, dot or json)")
    snap = load()
    g = snap.graph
    if memory_id:
        root = snap.resolve(memory_id)
        reached = g.neighbours(root.id, hops)
        ids = [root.id, *reached]
    else:
        root, reached, ids = None, {}, list(g.memories)
    if fmt == "json":
        emit_json(g.to_json(ids))
        return
    if fmt == "dot":
        keep = set(ids)
        lines = ["digraph forgemem {", "  node [shape=box];"]
        for i in ids:
            lines.append(f"  {json.dumps(i)} [label={json.dumps(_label(g.memories[i]))}];")
        for s, t, k in g.graph.edges(keys=True):
            if s in keep and t in keep:
                style = ', style=dashed' if k != "supersedes" else ""
                lines.append(f"  {json.dumps(s)} -> {json.dumps(t)} [label={json.dumps(k)}{style}];")
        lines.append("}")
        sys.stdout.write("\n".join(lines) + "\n")
        return
    if root is not None:
        tree = Tree(escape(_label(root)))
        nodes = {root.id: tree}
        for target, path in sorted(reached.items(), key=lambda kv: len(kv[1])):
            step = path[-1]
            arrow = f"<-{step.type}-" if step.reverse else f"-{step.type}->"
            nodes[target] = nodes[step.source].add(f"{arrow} {escape(_label(g.memories[target]))}")
        out.print(tree)
        return
    tree = Tree("memories")
    for scope in ("repo", "user"):
        heads = sorted((m for m in g.heads() if m.scope == scope), key=lambda m: (m.category, m.created_at))
        if not heads:
            continue
        scope_node = tree.add(_style_scope(scope))
        by_category: dict[str, Tree] = {}
        for head in heads:
            cat = by_category.get(head.category) or scope_node.add(head.category)
            by_category[head.category] = cat
            node = cat.add(escape(_label(head)))
            for older in reversed(g.history(head.id)[:-1]):
                node.add(f"[dim]supersedes {escape(_label(older))}[/]")
            for relation in head.related:
                target = g.memories.get(relation.id)
                name = _label(target) if target else f"{relation.id} (missing)"
                node.add(f"-{relation.relationship}-> {escape(name)}")
    out.print(tree)


# ------------------------------------------------------------------ validate / stats


@app.command()
def validate(
    paths: list[Path] = typer.Argument(None, help="Files or folders to check (default: both stores)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Check memory files; exit 1 if anything is wrong (usable as a pre-commit hook)."""
    paths = paths or []
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path} does not exist")
    snap = state.workspace().load(extra_paths=paths, cache=False)
    problems = snap.problems
    if paths:
        wanted = [p.resolve() for p in paths]
        problems = [
            p
            for p in problems
            if p.path is not None
            and any(p.path.resolve() == w or w in p.path.resolve().parents for w in wanted)
        ]
    checked = len(snap.memories) + len({p.path for p in snap.problems if p.memory_id is None})
    if as_json:
        emit_json({"ok": not problems, "files_checked": checked, "problems": [p.to_dict() for p in problems]})
    else:
        for problem in problems:
            out.print(show_problem(problem))
        if problems:
            err.print(f"forgemem: {len(problems)} problem(s) found")
        else:
            out.print(f"ok: {checked} memory files, no problems")
    if problems:
        raise typer.Exit(EXIT_PROBLEMS)


@app.command()
def stats(as_json: bool = JSON_OPTION) -> None:
    """Counts by scope and category, chains, conflicts and problems, and a health view: never recalled,
    marked wrong, low confidence, old, stale, growth over time from git history."""
    snap = state.workspace().load()
    g = snap.graph
    heads = snap.heads()
    counts: dict[str, dict[str, int]] = {}
    for m in heads:
        counts.setdefault(m.scope, {}).setdefault(m.category, 0)
        counts[m.scope][m.category] += 1
    chains = g.chains()
    data = {
        "stores": {s: str(store.memory_dir) for s, store in state.workspace().stores.items()},
        "files": len(snap.memories),
        "current": len(heads),
        "by_scope_and_category": counts,
        "chains": len(chains),
        "longest_chain": max((len(c) for c in chains), default=0),
        "retracted": sum(1 for m in g.heads() if m.retracted),
        "conflicts": [[e.source, e.target] for e in g.contradictions()],
        "forks": len(g.forks()),
        "problems": len(snap.problems),
    }
    from forgemem.curate.health import health
    from forgemem.store.folder import find_repo_root

    repo = state.workspace().stores.get("repo")
    root = find_repo_root(repo.memory_dir) if repo is not None and repo.exists() else None
    data["health"] = health(state.workspace(), snap, root)
    if as_json:
        emit_json(data)
        return
    from rich.table import Table

    table = Table("scope", "category", "current", box=None, pad_edge=False)
    for scope, cats in sorted(counts.items()):
        for cat, n in sorted(cats.items()):
            table.add_row(scope, cat, str(n))
    out.print(table)
    out.print(
        f"{data['files']} files, {data['current']} current memories, {data['chains']} version chains "
        f"(longest {data['longest_chain']}), {data['retracted']} retracted"
    )
    for a, b in data["conflicts"]:
        out.print(f"[yellow]conflict:[/] {a} contradicts {b}")
    out.print(f"{data['forks']} forks, {data['problems']} problems")
    h = data["health"]
    table = Table("health", "memories", "for example", box=None, pad_edge=False, title="health")
    for key, label in (("never_recalled", "never recalled"), ("marked_wrong", "marked wrong (feedback)"),
                       ("low_confidence", "low confidence (< 0.5)"), ("old", "not updated in a year"),
                       ("stale", "stale (`forgemem doctor`)")):
        ids = h[key]
        table.add_row(label, str(len(ids)), " ".join(i[4:12] for i in ids[:4]) + (" …" if len(ids) > 4 else ""))
    table.add_row("conflicts and forks", str(h["conflicts"]), "`forgemem conflicts`" if h["conflicts"] else "")
    table.add_row("version chains", str(h["chains"]), "")
    if h["most_recalled"]:
        table.add_row("most recalled", str(h["most_recalled"][0][1]),
                      " ".join(f"{i[4:12]}×{n}" for i, n in h["most_recalled"][:4]))
    out.print(table)
    if h["growth"]:
        peak = max(g["added"] for g in h["growth"])
        out.print("[bold]growth[/] (memory files added per month, from git history)")
        for g in h["growth"][-12:]:
            bar = "█" * max(1, round(20 * g["added"] / peak))
            out.print(f"  {g['month']}  {bar} {g['added']}")


# ------------------------------------------------------------------ recall / index / doctor


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


def _refresh(engine, label: str = "embedding memories"):
    progress = _Progress(label)
    try:
        return engine.refresh(progress=progress)
    finally:
        progress.close()


def _print_hits(hits: list[dict], explain: bool) -> None:
    if not hits:
        out.print("no matching memories")
        return
    for n, hit in enumerate(hits, start=1):
        flags = ""
        if hit["superseded_by"]:
            flags += f" [yellow](superseded by {', '.join(x[4:12] for x in hit['superseded_by'])})[/]"
        if hit["conflicts"]:
            flags += " [red]CONFLICT[/]"
        if hit.get("status") == "proposed":
            flags += " [magenta](proposed: not reviewed yet)[/]"
        out.print(
            f"[bold]{n:>2}. {hit['id'][4:12]}[/]  {_style_scope(hit['scope'])}  {hit['category']}  "
            f"v{hit['version']}  [dim]score {hit['score']:.3f}[/]{flags}"
        )
        for line in hit["content"].splitlines() or [""]:
            out.print(f"    {escape(line)}")
        if hit["via"] and not explain:
            out.print(f"    [dim]via {escape(_describe_via(hit['via']))}[/]")
        if hit["conflicts"]:
            out.print(f"    [red]contradicted by {', '.join(hit['conflicts'])}: resolve it with a new version[/]")
        if explain:
            e = hit["explain"]
            lexical = f"bm25 {e['lexical_score']:.2f}" if e["lexical_score"] is not None else "no word match"
            dense = f"cosine {e['dense_score']:.3f}" if e["dense_score"] is not None else "no vector"
            parts = [
                f"lexical rank {e['lexical_rank'] or '-'} ({lexical})",
                f"dense rank {e['dense_rank'] or '-'} ({dense})",
                f"fused {e['fused']:.3f}",
            ] + [f"{k} {v:+.3f}" for k, v in e["priors"].items()]
            out.print(f"    [dim]why: {escape(e['why'])}[/]")
            out.print(f"    [dim]{escape(' · '.join(parts))}[/]")
            out.print(f"    [dim]{escape(hit['path'] or '')}[/]")


def _describe_via(via: list[dict]) -> str:
    from forgemem.store.graph import Step

    return ", ".join(Step(s["from"], s["relationship"], s["to"], s["reverse"]).describe() for s in via)


def _read_queries(source: str) -> list[dict]:
    text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    queries = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{source}:{number}: not a JSON line ({exc.msg})") from None
        if not isinstance(item, dict) or not isinstance(item.get("query"), str):
            raise UsageError(f'{source}:{number}: each line needs {{"id": ..., "query": "..."}}')
        k = item.get("k", 1)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise UsageError(f'{source}:{number}: "k" must be a whole number from 1 up, not {k!r}')
        queries.append(item)
    return queries


@app.command()
def recall(
    query: Optional[str] = typer.Argument(None, help="What you want to remember (omit with --queries)."),
    k: Optional[int] = typer.Option(None, "-k", "--top", min=1, help="How many results (default: retrieval_top_k)."),
    scope: str = typer.Option("all", "--scope", "-s", help="repo, user or all."),
    category: Optional[str] = typer.Option(None, "--category", "-c", help="Only this category."),
    tag: list[str] = typer.Option([], "--tag", help="Only memories with this tag (repeatable)."),
    hops: Optional[int] = typer.Option(None, "--hops", min=0, max=5, help="Follow typed edges this far (default: retrieval_hop_depth)."),
    history: bool = typer.Option(False, "--history", help="Return old versions too, not only heads."),
    explain: bool = typer.Option(False, "--explain", help="Show why each memory matched."),
    queries: Optional[str] = typer.Option(None, "--queries", help='Batch: a file (or -) of JSON lines {"id", "query"}; writes JSON lines {"id", "results"}.'),
    lexical_only: bool = typer.Option(False, "--lexical-only", help="Skip the embedding model."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Find the memories that matter for a question (hybrid lexical + semantic search)."""
    if scope not in ("repo", "user", "all"):
        raise UsageError(f"unknown scope {scope!r} (expected repo, user or all)")
    if category:
        require_choice("category", category, CATEGORIES)
    if (query is None) == (queries is None):
        raise UsageError("give either a QUERY or --queries FILE")
    config = state.workspace().config
    base = dict(
        k=k or config.retrieval_top_k,
        scope=None if scope == "all" else scope,
        category=category,
        tags=list(tag),
        hops=config.retrieval_hop_depth if hops is None else hops,
        history=history,
    )
    from forgemem.recall import server

    batch = _read_queries(queries) if queries is not None else None
    items = batch if batch is not None else [{"id": None, "query": query}]
    ws = state.workspace()
    request = {
        "op": "recall",
        "stores": server.store_dirs(ws),
        "use_embeddings": not lexical_only,
        "queries": [{**base, "text": item["query"], "k": item.get("k", base["k"])} for item in items],
    }
    # A running server answers in milliseconds; otherwise do the work here (with a
    # progress bar for a long first build) and start a server for the next call.
    answer = server.answer(request, prepare=_refresh, use_server=batch is None, on_notice=warn)
    if not answer["ok"]:
        raise ForgememError(answer["error"])
    for note in answer["notes"]:
        if note not in ws.warnings:  # those were said when the workspace opened
            warn(note)
    if batch is not None:
        for item, hits in zip(batch, answer["results"], strict=True):
            sys.stdout.write(json.dumps({"id": item.get("id"), "results": hits}, ensure_ascii=False) + "\n")
        return
    hits = answer["results"][0]
    if as_json:
        emit_json({
            "query": query, "lexical_only": answer["lexical_only"], "notes": answer["notes"],
            "served_by": answer.get("served_by"), "results": hits,
        })
        return
    _print_hits(hits, explain)


@app.command()
def index(
    rebuild: bool = typer.Option(False, "--rebuild", help="Throw the caches away and build them again."),
    status: bool = typer.Option(False, "--status", help="Show what is stale and why, without changing anything."),
    lexical_only: bool = typer.Option(False, "--lexical-only", help="Skip the embedding model."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Bring the search index up to date with the memory files."""
    engine = _engine(use_embeddings=not lexical_only)
    indexes = engine.indexes()
    if status:
        embedder = engine.embedder
        data = [i.status(embedder).to_dict() for i in indexes.values()]
        if as_json:
            emit_json({"stores": data, "embedder": getattr(embedder, "id", None), "lexical_only_reason": engine.lexical_only_reason})
            return
        for st in data:
            out.print(f"[bold]{st['scope']}[/] {st['database']}")
            out.print(f"  {st['files']} files, {st['memories']} memories, {st['vectors']} vectors ({st['embedder'] or 'no embedder'})")
            out.print("  up to date" if not st["stale"] else "  stale:")
            for line in st["stale"]:
                out.print(f"    {escape(line)}")
        return
    if rebuild:
        for i in indexes.values():
            i.destroy()
    reports = _refresh(engine)
    if engine.lexical_only_reason and not lexical_only:
        warn(f"lexical search only: {engine.lexical_only_reason}")
    if as_json:
        emit_json({scope: r.to_dict() for scope, r in reports.items()})
        return
    for scope, r in reports.items():
        out.print(
            f"{scope}: {r.files} files; {r.added} added, {r.changed} changed, {r.deleted} deleted, "
            f"{r.embedded} embedded" + (f" ({r.rebuilt_reason})" if r.rebuilt_reason else "")
        )


@app.command()
def doctor(as_json: bool = JSON_OPTION) -> None:
    """Check the index against the memory files (rebuilding a cache that disagrees), and flag stale
    memories: paths they name that are gone or changed a lot since, symbols no longer in the code."""
    engine = _engine()
    results = {}
    for scope, i in engine.indexes().items():
        try:
            i.refresh(engine.embedder)
            found = i.check()
        except Exception as exc:  # a broken cache of any kind is what doctor is for
            found = [f"the cache cannot be read ({type(exc).__name__}: {exc})"]
        fixed = False
        if found:
            i.destroy()
            _refresh(engine, f"rebuilding the {scope} index")
            fixed = not i.check()
        results[scope] = {"disagreements": found, "rebuilt": bool(found), "ok_after": fixed or not found}
    from forgemem.curate.stale import find_stale
    from forgemem.store.folder import find_repo_root

    repo = state.workspace().stores.get("repo")
    root = find_repo_root(repo.memory_dir) if repo is not None and repo.exists() else None
    stale = find_stale(engine.snapshot.heads(), root) if root is not None else []
    if as_json:
        emit_json({**results, "stale": [f.to_dict() for f in stale]})
    else:
        for scope, r in results.items():
            if not r["disagreements"]:
                out.print(f"{scope}: index agrees with the files")
                continue
            for line in r["disagreements"]:
                out.print(f"{scope}: {escape(line)}")
            out.print(f"{scope}: rebuilt the cache" + ("; it now agrees" if r["ok_after"] else "; still disagrees"))
        for finding in stale:
            out.print(f"[yellow]stale[/] {finding.memory.id[4:12]}: {escape(finding.detail)} — "
                      f"{escape(finding.memory.title[:80])}")
        if root is not None and not stale:
            out.print("no stale memories (paths and symbols they name still exist)")
    if not all(r["ok_after"] for r in results.values()):
        raise typer.Exit(EXIT_PROBLEMS)


@app.command()
def serve(
    idle_timeout: float = typer.Option(900, "--idle-timeout", help="Exit after this many seconds without a request."),
    stop_: bool = typer.Option(False, "--stop", help="Stop the running server."),
    status: bool = typer.Option(False, "--status", help="Say whether a server is running."),
) -> None:
    """Run the recall server (recall starts one by itself; FORGEMEM_SERVER=off turns that off)."""
    from forgemem.recall import server

    if stop_:
        out.print("stopped the recall server" if server.stop() else "no recall server was running")
        return
    if status:
        answer = server.ask({"op": "ping", "stores": {}, "queries": []}, timeout=2.0)
        running = answer is not None
        out.print(f"recall server {'running' if running else 'not running'} at {server.socket_path()}")
        raise typer.Exit(0 if running else EXIT_PROBLEMS)
    server.serve(idle_timeout=idle_timeout)


@app.command()
def conflicts(as_json: bool = JSON_OPTION) -> None:
    """Unresolved contradictions (both sides) and forks; exit 1 when there are any."""
    snap = load()
    data = conflicts_json(snap)
    if as_json:
        emit_json(data)
    else:
        from forgemem.agents import slash

        out.print(escape(slash.conflicts(snap)))
    if data["conflicts"] or data["forks"]:
        raise typer.Exit(EXIT_PROBLEMS)


# ------------------------------------------------------------------ git


def _repo_root() -> Path:
    from forgemem.store.folder import find_repo_root

    ws = state.workspace()
    repo = ws.stores.get("repo")
    start = repo.memory_dir if repo is not None else state.where()
    root = find_repo_root(start if start.exists() else state.where())
    if root is None:
        raise UsageError("not in a git repository")
    return root


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
    never does. Exit 1 when the new side has problems or deleted memory files.
    """
    from forgemem.git import review as review_module

    if accept or reject:
        if rev_range or staged or worktree:
            raise UsageError("--accept/--reject take ids only")
        done = {"accepted": [m.id for m in review_module.accept(state.workspace(), accept)],
                "rejected": [m.id for m in review_module.reject(state.workspace(), reject)]}
        if as_json:
            emit_json(done)
        else:
            for key, ids in done.items():
                for memory_id in ids:
                    out.print(f"{key} {memory_id}")
        return
    if worktree and (staged or rev_range):
        raise UsageError("--worktree goes alone (it is the default)")
    personal = [] if (rev_range or staged) else review_module.personal_proposals(state.workspace())
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
    result = review_module.review(root, rev_range, staged)
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
    from forgemem.git.review import textconv

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ForgememError(f"cannot read {path}: {exc.strerror or exc}") from None
    sys.stdout.write(textconv(data, str(path)))


@app.command()
def consolidate(
    dry_run: bool = typer.Option(False, "--dry-run", help="Show what would be merged; write nothing."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Merge clusters of near-duplicate or tightly related small memories (each merge supersedes its sources).

    Nothing is merged across scopes or categories; a cluster with a contradiction
    inside is shown, never merged. See docs/git.md for the thresholds.
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
    clusters = module.find_clusters(snap, engine.embedder, stored)
    written = []
    if not dry_run:
        for cluster in clusters:
            if not cluster.blocked_by:
                written.append(module.apply(state.workspace(), cluster, snap))
                snap = state.workspace().load()
    if as_json:
        emit_json({"clusters": [c.to_dict() for c in clusters], "written": [m.id for m in written]})
        return
    if not clusters:
        out.print("nothing to consolidate")
    for cluster in clusters:
        out.print(f"[bold]{cluster.scope}/{cluster.category}[/]: {len(cluster.memories)} memories")
        for reason in cluster.reasons:
            out.print(f"  [dim]{escape(reason)}[/]")
        for memory in cluster.memories:
            out.print(f"  - {memory.id[4:12]} {escape(memory.body)}")
        if cluster.blocked_by:
            out.print("  [red]contradiction inside: not merged; resolve it with `forgemem resolve`[/]")
            continue
        out.print(f"  → {escape(word_diff_markdown(cluster.memories[0].body, cluster.text))}")
    verb = "would write" if dry_run else "wrote"
    merged = sum(1 for c in clusters if not c.blocked_by)
    open_conflicts = len(snap.graph.contradictions())
    if open_conflicts:
        warn(f"{open_conflicts} unresolved contradiction(s) are left for you: `forgemem conflicts`")
    err.print(f"{verb} {merged} merged memor{'y' if merged == 1 else 'ies'}")


@app.command()
def feedback(
    memory_id: str = typer.Argument(..., metavar="ID"),
    verdict: str = typer.Argument(..., metavar="useful|wrong"),
) -> None:
    """Say whether a recalled memory helped: it moves up (useful) or down (wrong) in later recalls.

    Kept in your usage data (~/.forge/usage/), never in the memory file; rebuilding
    the cache keeps it.
    """
    target = state.workspace().feedback(memory_id, verdict)
    out.print(f"noted: {target.id} {verdict}")
    if verdict == "wrong":
        err.print("forgemem: if it no longer holds, `forgemem forget` it or add a version that supersedes it")


# ------------------------------------------------------------------ in the agent


@app.command()
def context(
    prompt: str = typer.Argument(..., metavar="QUERY", help="The prompt (or - to read it from stdin)."),
    budget: Optional[int] = typer.Option(
        None, "--budget", min=0, help="Most tokens the block may take (default: context_budget_tokens, 1500)."
    ),
    k: Optional[int] = typer.Option(None, "-k", min=1, help="Memories to consider (default: retrieval_top_k)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Print the memories that matter for a prompt as a block for an agent's context.

    Nothing is printed when nothing is relevant enough (see docs/hooks.md for the
    threshold); the block never exceeds the token budget.
    """
    from forgemem.recall import server

    if prompt == "-":
        prompt = sys.stdin.read()
    request = server.query_request(state.workspace(), "context", prompt, k=k, budget=budget)
    answer = server.answer(request, prepare=_refresh, on_notice=warn)
    if not answer["ok"]:
        raise ForgememError(answer["error"])
    if as_json:
        emit_json({key: answer[key] for key in ("context", "tokens", "ids", "left_out", "lexical_only", "notes")})
    elif answer["context"]:
        print(answer["context"])


@app.command()
def slash(line: str = typer.Argument(..., metavar='"/memory …"', help="One /memory command line.")) -> None:
    """Run one /memory command (what agent harnesses route to forgemem); prints markdown."""
    from forgemem.agents import slash as slash_module

    workspace = state.workspace()
    print(slash_module.run(line, workspace, search=slash_module.server_search(workspace, on_notice=warn)))


@app.command()
def hook(
    agent: str = typer.Argument(..., help="claude-code or codex."),
    payload: Optional[str] = typer.Argument(None, help="codex: the JSON Codex passes to its notify program."),
) -> None:
    """Handle an agent's hook event (Claude Code: JSON on stdin). Always exits 0: hooks fail open."""
    from forgemem.agents import hooks

    if agent == "claude-code":
        hooks.main_claude_code()
    elif agent == "codex":
        hooks.codex(payload or "")
    else:
        hooks.log(f"hook for unknown agent {agent!r} ignored")


_AGENTS = ("claude-code", "codex", "git")
_AGENT_ARGUMENT = typer.Argument(..., help="claude-code, codex or git.")
_USER_OPTION = typer.Option(False, "--user", help="claude-code: ~/.claude instead of this project's .claude.")
_DRY_RUN_OPTION = typer.Option(False, "--dry-run", help="Show the diff; change nothing.")


def _install_plan(agent: str, user: bool, uninstall: bool):
    from forgemem.agents import install
    from forgemem.store.folder import find_repo_root

    if agent not in _AGENTS:
        raise UsageError(f"unknown agent {agent!r} (known: {', '.join(_AGENTS)})")
    if agent == "git":
        root = find_repo_root(state.where())
        if root is None:
            raise UsageError("not in a git repository")
        return (install.plan_git_uninstall if uninstall else install.plan_git_install)(root)
    if agent == "claude-code":
        folder = install.claude_dir(find_repo_root(state.where()), user)
        return (install.plan_claude_code_uninstall if uninstall else install.plan_claude_code_install)(folder)
    config = install.codex_config_path()
    return (install.plan_codex_uninstall if uninstall else install.plan_codex_install)(config)


def _run_plan(plan, dry_run: bool, verb: str) -> None:
    for note in plan.notes:
        warn(note)
    changed = [c for c in plan.changes if c.changed]
    if dry_run:
        for change in changed:
            sys.stdout.write(change.diff())
        for _, argv in plan.commands:
            sys.stdout.write("$ " + " ".join(shlex.quote(a) for a in argv) + "\n")
        if not changed and not plan.commands:
            err.print("nothing would change")
        return
    plan.apply()
    for _, argv in plan.commands:
        out.print(escape("ran " + " ".join(shlex.quote(a) for a in argv)))
    for change in changed:
        action = "removed" if change.after is None else ("created" if change.before is None else "updated")
        out.print(f"{action} {escape(str(change.path))}")
    if changed:
        err.print(f"forgemem {verb}")


@app.command()
def install(
    agent: str = _AGENT_ARGUMENT,
    user: bool = _USER_OPTION,
    dry_run: bool = _DRY_RUN_OPTION,
) -> None:
    """Wire forgemem in: hooks and /forgemem (Claude Code), notify + MCP (Codex), the diff driver (git)."""
    _run_plan(_install_plan(agent, user, uninstall=False), dry_run, "installed")
    if agent != "git":  # which classifier capture uses, and how to have the agent itself decide
        from forgemem.capture.classify.agent_cli import install_note

        warn(install_note(agent, state.workspace))


@app.command()
def uninstall(
    agent: str = _AGENT_ARGUMENT,
    user: bool = _USER_OPTION,
    dry_run: bool = _DRY_RUN_OPTION,
) -> None:
    """Remove exactly what `forgemem install` added."""
    _run_plan(_install_plan(agent, user, uninstall=True), dry_run, "uninstalled")


@app.command()
def mcp() -> None:
    """Serve the memory over the Model Context Protocol on stdio (needs `pip install forgemem[mcp]`)."""
    from forgemem.agents.mcp import build_server

    build_server(state.workspace()).run("stdio")


# ------------------------------------------------------------------ capture


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
    capturer = None
    if not status:
        from forgemem.capture.capturer import Capturer

        capturer = Capturer(state.workspace())  # a bad classifier setting fails here, not in every pass
    observer = Observer(state.workspace(), targets, fmt=fmt, cadence=cadence, capturer=capturer)
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
                edge = f" (supersedes {memory.supersedes[0][:12]})"
            elif memory.related:
                edge = f" ({memory.related[0].relationship} {memory.related[0].id[:12]})"
            out.print(f"+ {memory.id[:12]} {memory.scope}/{memory.category}{edge}: {escape(memory.title)}")

    if once:
        read, ran = observer.once(compaction=compaction, final=final, on_result=report)
        if as_json:
            emit_json({"turns_read": read, "passes": results})
        else:
            written = sum(len(r["written"]) for r in results)
            err.print(f"read {read} turn(s), ran {ran} capture pass(es), wrote {written} memor{'y' if written == 1 else 'ies'}")
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
        out.print(escape(f"  {w['time']} {w['transcript']} {w['id'][4:12]} {w['scope']}/{w['category']}: "
                         f"{w['text']}{pending}"))


# ------------------------------------------------------------------ entry point


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code instead of raising.

    Usage errors are reported by typer itself (exit 2); a `ForgememError` is
    one sentence on stderr with its own exit code; anything else is a bug,
    reported in one line unless FORGEMEM_DEBUG is set.
    """
    try:
        app(args=argv, prog_name="forgemem")
    except SystemExit as exc:
        if exc.code is None:
            return 0
        return exc.code if isinstance(exc.code, int) else EXIT_PROBLEMS
    except ForgememError as exc:
        err.print(f"forgemem: error: {escape(str(exc))}")
        return exc.exit_code
    except KeyboardInterrupt:
        err.print("forgemem: interrupted")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: one line, traceback on request
        if os.environ.get("FORGEMEM_DEBUG"):
            raise
        err.print(
            f"forgemem: internal error: {escape(type(exc).__name__)}: {escape(str(exc))} "
            "(set FORGEMEM_DEBUG=1 for the traceback)"
        )
        return EXIT_PROBLEMS
    return 0


def run() -> None:
    sys.exit(main())
