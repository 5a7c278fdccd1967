"""What `forgemem recall` asks and shows, without the CLI framework: the request for the recall server (or
this process), and the answer as text or JSON. The `recall` command and the fast path of a warm recall
(`forgemem.cli.quick`) both use it, so they cannot drift apart.
"""

from __future__ import annotations

from rich.markup import escape

from forgemem.cli.output import emit_json, out, style_scope, warn
from forgemem.store.model import PROPOSED, short

#: what `recall --scope` accepts, and how far `--hops` may go (the command and its fast path check both)
SCOPE_CHOICES = ("repo", "user", "all")
MAX_HOPS = 5


def recall_request(workspace, items: list[dict], *, k: int | None, scope: str, category: str | None,
                   tags: list[str], hops: int | None, history: bool, floor: float, lexical_only: bool) -> dict:
    """The request for these queries ({"query", optional "k"} each) with the workspace's settings."""
    from forgemem.recall.client import store_dirs

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
        "use_embeddings": not lexical_only,
        "queries": [{**base, "text": item["query"], "k": item.get("k", base["k"]), "floor": floor} for item in items],
    }


def show_answer(workspace, query: str, answer: dict, *, explain: bool, show_all: bool, as_json: bool,
                deeper: list[dict] | None = None) -> None:
    """One query's answer: its notes on stderr, then the hits as text or JSON."""
    unreadable_note(workspace, answer)
    for note in answer["notes"]:
        if note not in workspace.warnings:  # those were said when the workspace opened
            warn(note)
    floor = workspace.config.recall_floor
    hits = answer["results"][0]
    below = sum(1 for h in hits if h["score"] < floor) if show_all else answer["below_floor"][0]
    if as_json:
        emit_json({
            "query": query, "lexical_only": answer["lexical_only"], "notes": answer["notes"],
            "served_by": answer.get("served_by"), "floor": floor, "below_floor": below, "results": hits,
            **({"deep": deeper[0]} if deeper else {}),
        })
        return
    print_hits(hits, explain, floor, below, show_all)


def print_hits(hits: list[dict], explain: bool, floor: float, below: int, show_all: bool) -> None:
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
            out.print(f"    [red]contradicted by {', '.join(hit['conflicts'])}: resolve it with a new version[/]")
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
            ]
            out.print(f"    [dim]why: {escape(e['why'])}[/]")
            out.print(f"    [dim]{escape(' · '.join(parts))}[/]")
            out.print(f"    [dim]{escape(hit['path'] or '')}[/]")
    shown = sum(1 for h in hits if h["score"] >= floor)
    if show_all:
        out.print(f"[dim]{shown} relevant (score {floor:.2f} or more), {len(hits) - shown} under it[/]")
    elif below:
        out.print(f"{shown} relevant; nothing else above {floor:.2f} (--all to see the rest)")


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
