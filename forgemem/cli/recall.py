"""Commands that find memories: recall, context, index, doctor, serve, conflicts, feedback."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from forgemem.cli.app import JSON_OPTION, _engine, _refresh, app, emit_json, err, out, state, warn
from forgemem.cli.output import printer
from forgemem.errors import EXIT_PROBLEMS, ForgememError, UsageError, require_choice
from forgemem.recall.command import MAX_HOPS, SCOPE_CHOICES, json_text, recall_request, show_answer, unreadable_note
from forgemem.store.model import CATEGORIES, one_line, short
from forgemem.views import conflicts_json


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
    hops: Optional[int] = typer.Option(None, "--hops", min=0, max=MAX_HOPS, help="Follow typed edges this far (default: retrieval_hop_depth)."),
    deep: bool = typer.Option(False, "--deep", help="Let classifier_model reorder the top candidates (the fast ranking if it cannot, saying why)."),
    deep_candidates: int = typer.Option(20, "--deep-candidates", min=2, max=100, help="How many of the top candidates --deep sends (default 20)."),
    history: bool = typer.Option(False, "--history", help="Return old versions too, not only heads."),
    explain: bool = typer.Option(False, "--explain", help="Show why each memory matched."),
    queries: Optional[str] = typer.Option(None, "--queries", help='Batch: a file (or -) of JSON lines {"id", "query"}; writes JSON lines {"id", "floor", "results"} (the top k, whatever they score).'),
    lexical_only: bool = typer.Option(False, "--lexical-only", help="Skip the embedding model."),
    show_all: bool = typer.Option(False, "--all", help="Show the top k even when they score under recall_floor."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Find the memories that matter for a question (hybrid lexical + semantic search).

    Each score is the probability that the memory is relevant; only those scoring at least
    recall_floor (0.25) are shown, unless --all. --queries returns the top k whatever they score.
    """
    if scope not in SCOPE_CHOICES:
        raise UsageError(f"unknown scope {scope!r} (expected repo, user or all)")
    if category:
        require_choice("category", category, CATEGORIES)
    if (query is None) == (queries is None):
        raise UsageError("give either a QUERY or --queries FILE")
    if query is not None and not query.strip():
        raise UsageError('the query is empty: say what to recall, e.g. forgemem recall "how do we run the tests"')
    from forgemem.recall import client

    batch = _read_queries(queries) if queries is not None else None
    items = batch if batch is not None else [{"id": None, "query": query}]
    ws = state.workspace()
    floor = ws.config.recall_floor
    request = recall_request(ws, items, k=k, scope=scope, category=category, tags=tag, hops=hops, history=history,
                             floor=0.0 if show_all or batch is not None else floor, lexical_only=lexical_only)
    if deep:
        _ask_for_candidates(request, deep_candidates)
    # A running server answers in milliseconds; otherwise do the work here (with a
    # progress bar for a long first build) and start a server for the next call.
    answer = client.answer(request, prepare=_refresh, use_server=batch is None, on_notice=warn)
    if not answer["ok"]:
        raise ForgememError(answer["error"])
    deeper = _rerank(answer, request, len(items), deep_candidates, say=batch is None) if deep else None
    if batch is None:
        show_answer(printer, ws, query or "", answer, explain=explain, show_all=show_all, as_json=as_json, deeper=deeper)
        return
    unreadable_note(ws, answer)
    for note in answer["notes"]:
        if note not in ws.warnings:  # those were said when the workspace opened
            warn(note)
    for item, hits in zip(batch, answer["results"], strict=True):
        line = {"id": item.get("id"), "floor": floor, "results": hits,
                **({"deep": deeper.pop(0)} if deeper else {})}
        sys.stdout.write(json_text(line) + "\n")


def _ask_for_candidates(request: dict, candidates: int) -> None:
    """`--deep`: the same queries again, for at least `candidates` hits each, whatever they score (a memory
    the fast ranking scores low is shown when the model names it); the fast answers stay as they are, for
    when the model fails. Nothing is logged as recalled here: `_rerank` logs what is finally shown."""
    request["queries"] += [{**q, "k": max(q["k"], candidates), "floor": 0.0} for q in request["queries"]]
    request["log"] = False


def _rerank(answer: dict, request: dict, count: int, candidates: int, say: bool) -> list[dict]:
    """`--deep`: each query's hits reordered by the classifier model (forgemem.recall.deep), in place of the
    fast ones when that worked; the extra candidate lists removed. Returns what happened, per query."""
    from forgemem.recall.deep import rerank
    from forgemem.recall.engine import log_shown

    ws = state.workspace()
    config = ws.config
    done = []
    for n in range(count):
        query = request["queries"][n]
        fast = answer["results"][n]
        hits, result = rerank(query["text"], answer["results"][count + n], config, k=query["k"],
                              candidates=candidates, keep={hit["id"] for hit in fast})
        if result.used:
            answer["results"][n] = hits
        log_shown(ws, answer["results"][n][: query["k"]])
        if say:
            answer["notes"].append(result.line())
        done.append(result.to_dict())
    del answer["results"][count:]
    return done


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
    """Check every cache and model file and the index against the memory files (rebuilding or
    re-exporting what is broken), check the observer's state (a corrupt one is moved aside and rebuilt,
    passes of a dead process run again), and flag stale memories: paths they name that are gone or
    changed a lot since, symbols no longer in the code."""
    from forgemem.capture.health import check as check_observer
    from forgemem.cli.app import _Progress
    from forgemem.curate.health import check_caches
    from forgemem.curate.stale import find_stale
    from forgemem.store.folder import find_repo_root

    engine = _engine()
    progress = _Progress("rebuilding the index")
    try:
        caches = check_caches(engine, progress=progress)
    finally:
        progress.close()
    repo = state.workspace().stores.get("repo")
    root = find_repo_root(repo.memory_dir) if repo is not None and repo.exists() else None
    stale = find_stale(engine.snapshot.heads(), root) if root is not None else []
    observer = check_observer(state.workspace())
    if as_json:
        emit_json({**caches["stores"], "model": caches["model"], "repairs": caches["said"], "observer": observer,
                   "stale": [f.to_dict() for f in stale]})
    else:
        _print_observer_check(observer)
        _print_cache_check(caches)
        for finding in stale:
            out.print(f"[yellow]stale[/] {short(finding.memory.id)}: {escape(finding.detail)} — "
                      f"{escape(one_line(finding.memory, 80))}")
        if root is not None and not stale:
            out.print("no stale memories (paths and symbols they name still exist)")
    if not caches["ok"] or not observer["ok"]:
        raise typer.Exit(EXIT_PROBLEMS)


def _print_cache_check(caches: dict) -> None:
    model = caches["model"]
    for line in model["problems"]:
        out.print(f"model: {escape(line)}")
    for line in model["repaired"]:
        out.print(f"model: repaired: {escape(line)}")
    for line in model["not_repaired"]:
        out.print(f"[red]model: could not repair[/] {escape(line)}")
    if not model["problems"]:
        out.print(f"model: {model.get('skipped') or str(model['models']) + ' exported model(s), checksums agree'}")
    for scope, r in caches["stores"].items():
        files = r["cache_files"]
        for line in files["problems"]:
            out.print(f"{scope}: {escape(line)}")
        for line in files["repaired"]:
            out.print(f"{scope}: repaired: {escape(line)}")
        for line in files["not_repaired"]:
            out.print(f"[red]{scope}: could not repair[/] {escape(line)}")
        if files["moved_aside"]:
            out.print(escape(f"{scope}: kept aside in {files['folder']} (delete when no longer needed): "
                             f"{', '.join(files['moved_aside'])}"))
        if not r["disagreements"]:
            out.print(f"{scope}: index agrees with the files"
                      + ("; vectors made again with the model exported again" if r["rebuilt"] else ""))
            continue
        for line in r["disagreements"]:
            out.print(f"{scope}: {escape(line)}")
        out.print(f"{scope}: rebuilt the cache" + ("; it now agrees" if r["ok_after"] else "; still disagrees"))
    for line in caches["said"]:
        out.print(f"repaired on the way: {escape(line)}")


def _print_observer_check(report: dict) -> None:
    if not report["exists"]:
        out.print("observer state: none yet (nothing captured from transcripts here)")
        return
    for line in report["problems"]:
        out.print(f"observer state: {escape(line)}")
    for line in report["repaired"]:
        out.print(f"observer state: {escape(line)}")
    if not report["problems"]:
        out.print(f"observer state: readable; {report['pending']} pass(es) waiting, {report['failed']} failed"
                  + (f", {report['skipped_records']} transcript record(s) skipped" if report["skipped_records"] else ""))
    if report["moved_aside"]:
        out.print(escape(f"observer state: kept aside (delete when no longer needed): {', '.join(report['moved_aside'])}"))


@app.command()
def serve(
    idle_timeout: float = typer.Option(900, "--idle-timeout", help="Exit after this many seconds without a request."),
    stop_: bool = typer.Option(False, "--stop", help="Stop the running server."),
    status: bool = typer.Option(False, "--status", help="Say whether a server is running."),
    read_timeout: float = typer.Option(
        2.0, "--read-timeout", min=0.1, max=3600, help="Close a connection whose request line is not in after this many seconds."
    ),
) -> None:
    """Run the recall server (recall starts one by itself; FORGEMEM_SERVER=off turns that off)."""
    from forgemem.config import server_socket_path
    from forgemem.recall import client, server

    if stop_:
        out.print("stopped the recall server" if client.stop() else "no recall server was running")
        return
    if status:
        answer = client.ask({"op": "ping", "stores": {}, "queries": []}, timeout=2.0)
        running = answer is not None
        out.print(f"recall server {'running' if running else 'not running'} at {server_socket_path()}")
        raise typer.Exit(0 if running else EXIT_PROBLEMS)
    server.serve(idle_timeout=idle_timeout, read_timeout=read_timeout)


@app.command()
def conflicts(as_json: bool = JSON_OPTION) -> None:
    """Unresolved contradictions (both sides) and forks; exit 1 when there are any."""
    from forgemem.cli.memories import load  # here: a recall does not load the memory commands

    snap = load()
    data = conflicts_json(snap)
    if as_json:
        emit_json(data)
    else:
        from forgemem.agents import slash

        out.print(escape(slash.conflicts(snap)))
    if data["conflicts"] or data["forks"]:
        raise typer.Exit(EXIT_PROBLEMS)


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

    Nothing is printed when no memory scores recall_floor or more (docs/recall.md); the
    block never exceeds the token budget.
    """
    from forgemem.recall import client

    if prompt == "-":
        prompt = sys.stdin.read()
    request = client.query_request(state.workspace(), "context", prompt, k=k, budget=budget)
    answer = client.answer(request, prepare=_refresh, on_notice=warn)
    if not answer["ok"]:
        raise ForgememError(answer["error"])
    line = unreadable_note(state.workspace(), answer)
    if as_json:
        emit_json({key: answer[key] for key in ("context", "tokens", "ids", "left_out", "floor", "lexical_only", "notes")})
        return
    if line:
        warn(line)
    if answer["context"]:
        print(answer["context"])

