"""Commands that look at a whole store: graph, validate, stats."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from forgemem.cli.app import JSON_OPTION, _style_scope, app, emit_json, err, out, show_problem, state
from forgemem.cli.memories import load
from forgemem.errors import EXIT_PROBLEMS, UsageError
from forgemem.store.model import Memory, one_line, short


def _label(memory: Memory) -> str:
    status = f" ({memory.status})" if memory.status else ""  # retracted or proposed: not current
    return f"{memory.short_id()} v{memory.version} [{memory.category}]{status} {one_line(memory, 70)}"


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
            faded = ", style=dashed, color=gray" if g.memories[i].status or not g.is_head(i) else ""
            lines.append(f"  {json.dumps(i)} [label={json.dumps(_label(g.memories[i]), ensure_ascii=False)}{faded}];")
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
        # current memories first, then (dimmed, in their own branches) retracted and proposed ones
        heads = sorted((m for m in g.heads() if m.scope == scope),
                       key=lambda m: (m.status is not None, m.category, m.created_at))
        if not heads:
            continue
        scope_node = tree.add(_style_scope(scope))
        by_category: dict[str, Tree] = {}
        for head in heads:
            category = head.category if head.status is None else f"{head.category} ({head.status})"
            cat = by_category.get(category) or scope_node.add(category if head.status is None
                                                                else f"[dim]{category}[/]")
            by_category[category] = cat
            node = cat.add(escape(_label(head)) if head.status is None else f"[dim]{escape(_label(head))}[/]")
            for older in reversed(g.history(head.id)[:-1]):
                node.add(f"[dim]supersedes {escape(_label(older))}[/]")
            for relation in head.related:
                target = g.memories.get(relation.id)
                name = _label(target) if target else f"{relation.id} (missing)"
                node.add(f"-{relation.relationship}-> {escape(name)}")
    out.print(tree)


def _where(path: Path) -> Path:
    """Where a file is, its folder resolved but not the file itself: a link named on the command line (or a
    link to nowhere, or a loop) is the link."""
    return Path(os.path.realpath(path.parent)) / path.name


@app.command()
def validate(
    paths: list[Path] = typer.Argument(None, help="Files or folders to check (default: both stores)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Check memory files; exit 1 if anything is wrong (usable as a pre-commit hook)."""
    paths = paths or []
    for path in paths:
        if not os.path.lexists(path):  # a link to nowhere is there, and a problem
            raise UsageError(f"{path} does not exist")
    snap = state.workspace().load(extra_paths=paths, cache=False)
    problems = snap.problems
    if paths:
        wanted = [_where(p) for p in paths]
        problems = [
            p
            for p in problems
            if p.path is not None
            and any(_where(p.path) == w or w in _where(p.path).parents for w in wanted)
        ]
    checked = len({m.path for m in snap.memories} | {p.path for p in snap.problems if p.path is not None})
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
def stats(
    tokens: bool = typer.Option(False, "--tokens", help="Tokens the hooks injected: per session, per day, the "
                                "memories injected most and those never injected (from the hooks log)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Counts by scope and category, chains, conflicts and problems, and a health view: never recalled,
    marked wrong, low confidence, old, stale, growth over time from git history."""
    if tokens:
        _token_stats(as_json)
        return
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
        "unreadable": [str(p) for p in snap.unreadable],
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
    out.print(f"{data['forks']} forks, {data['problems']} problems"
              + (f" ({len(snap.unreadable)} memory file(s) could not be read: `forgemem validate`)"
                 if snap.unreadable else ""))
    h = data["health"]
    table = Table("health", "memories", "for example", box=None, pad_edge=False, title="health")
    for key, label in (("never_recalled", "never recalled"), ("marked_wrong", "marked wrong (feedback)"),
                       ("low_confidence", "low confidence (< 0.5)"), ("old", "not updated in a year"),
                       ("stale", "stale (`forgemem doctor`)")):
        ids = h[key]
        table.add_row(label, str(len(ids)), " ".join(short(i) for i in ids[:4]) + (" …" if len(ids) > 4 else ""))
    table.add_row("conflicts and forks", str(h["conflicts"]), "`forgemem conflicts`" if h["conflicts"] else "")
    table.add_row("version chains", str(h["chains"]), "")
    if h["most_recalled"]:
        table.add_row("most recalled", str(h["most_recalled"][0][1]),
                      " ".join(f"{short(i)}×{n}" for i, n in h["most_recalled"][:4]))
    out.print(table)
    if h["growth"]:
        peak = max(g["added"] for g in h["growth"])
        out.print("[bold]growth[/] (memory files added per month, from git history)")
        for g in h["growth"][-12:]:
            bar = "█" * max(1, round(20 * g["added"] / peak))
            out.print(f"  {g['month']}  {bar} {g['added']}")



def _token_stats(as_json: bool) -> None:
    from forgemem.agents.hooks import log_path
    from forgemem.usage import token_report

    snap = state.workspace().load()
    heads = {m.id: m for m in snap.heads() if m.status is None}
    report = token_report(log_path(), list(heads))
    if as_json:
        emit_json(report)
        return
    from rich.table import Table

    if not report["injections"]:
        out.print(escape(f"no injections in the hooks log {report['log']} yet (`forgemem install claude-code` "
                         "puts memories into each prompt)"))
    else:
        out.print(escape(f"{report['tokens']} tokens in {report['injections']} injections since {report['since']} "
                         f"(the hooks log {report['log']} keeps its newest lines)"))
        table = Table("day", "injections", "tokens", box=None, pad_edge=False, title="per day")
        for day in report["per_day"][-14:]:
            table.add_row(day["day"], str(day["injections"]), str(day["tokens"]))
        out.print(table)
        table = Table("session", "injections", "tokens", "last", box=None, pad_edge=False, title="per session")
        for session in report["per_session"][:10]:
            table.add_row(escape(session["session"] or "(not recorded)"), str(session["injections"]),
                          str(session["tokens"]), session["last"])
        out.print(table)
        table = Table("memory", "injections", "text", box=None, pad_edge=False, title="injected most")
        for entry in report["most_injected"]:
            memory = snap.graph.memories.get(entry["id"])
            text = one_line(memory, 60) if memory is not None else "(not in these stores)"
            table.add_row(short(entry["id"]), str(entry["injections"]), escape(text))
        out.print(table)
    never = report["never_injected"]
    out.print(f"{len(never)} of {len(heads)} current memories never injected"
              + (f" since {report['since']}" if report["since"] else "")
              + (":" if never else ""))
    for memory_id in never[:10]:
        out.print(f"  {short(memory_id)} {escape(one_line(heads[memory_id], 70))}")
    if len(never) > 10:
        out.print(f"  … and {len(never) - 10} more (`--json` lists them all)")
