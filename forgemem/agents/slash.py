"""The `/memory` command language, for any agent harness (and `forgemem slash "<line>"`).

    /memory                       summary: counts, newest, conflicts
    /memory list [CATEGORY|SCOPE] current memories, one line each
    /memory search QUERY          recall
    /memory show ID               one memory in full
    /memory history ID            its versions, oldest first
    /memory graph ID              its edges
    /memory conflicts             unresolved contradictions and forks
    /memory forget ID             retract it (a new version; the file stays in git history)
    /memory add [CATEGORY:] TEXT  remember something
    /memory stats                 counts by scope and category
    /memory help

Answers are compact markdown for a chat pane: ids shortened to the shortest
unambiguous prefix (8+ characters, accepted back by every command), one line
per memory, details on request. Mistakes get a one-line answer, never a traceback.
`/forgemem …` (the Claude Code command name) and a bare sub-command are the same; answers name the
command as it was typed (`/memory` for a bare sub-command).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from contextvars import ContextVar

from forgemem.errors import ForgememError
from forgemem.store.model import CATEGORIES, SCOPES, Memory, format_timestamp, memory_count, one_line, short, short_ids
from forgemem.workspace import Snapshot, Workspace

LIST_LIMIT = 50
SEARCH_K = 8
LINE_WIDTH = 160  # characters of a memory's text on a listed line
PREFIXES = ("/memory", "/forgemem")

HELP = """**/memory** — forgemem's long-term memory
- `/memory` — summary
- `/memory list [category|scope]` — current memories
- `/memory search <query>` — find memories
- `/memory show <id>` · `/memory history <id>` · `/memory graph <id>`
- `/memory conflicts` — contradictions and forks to resolve
- `/memory forget <id>` — retract a memory
- `/memory add [category:] <text>` — remember something
- `/memory stats` — counts
Categories: """ + ", ".join(CATEGORIES) + "."
#: the command as the user typed it (`/forgemem` in Claude Code, `/memory` elsewhere): every answer names it
_NAME: ContextVar[str] = ContextVar("slash_name", default="/memory")


def _cmd() -> str:
    return _NAME.get()


class SlashError(Exception):
    """A mistake in a /memory line: its message is the whole answer."""


def run(line: str, workspace: Workspace, search: Callable[[str, int], list[dict]] | None = None) -> str:
    """The markdown answer to one `/memory …` line. Never raises for bad input."""
    typed = line.strip()
    token = _NAME.set(next((p for p in PREFIXES if typed == p or typed.startswith(p + " ")), "/memory"))
    try:
        return _dispatch(line, workspace, search)
    except SlashError as exc:
        return str(exc)
    except ForgememError as exc:
        return f"forgemem: {exc}"
    except Exception as exc:  # noqa: BLE001 - a chat pane gets one line, not a traceback
        return f"forgemem could not do that ({type(exc).__name__}: {exc})"
    finally:
        _NAME.reset(token)


def _dispatch(line: str, workspace: Workspace, search) -> str:
    text = line.strip()
    for prefix in PREFIXES:
        if text == prefix or text.startswith(prefix + " "):
            text = text[len(prefix):].strip()
            break
    command, _, rest = text.partition(" ")
    rest = rest.strip()
    command = command.lower()
    if command in ("", "summary"):
        return summary(workspace.load())
    if command in ("help", "-h", "--help", "?"):
        return HELP.replace("/memory", _cmd())
    handlers = {
        "list": lambda: list_memories(workspace.load(), rest),
        "ls": lambda: list_memories(workspace.load(), rest),
        "search": lambda: search_memories(workspace, rest, search),
        "find": lambda: search_memories(workspace, rest, search),
        "show": lambda: show(workspace.load(), _one_id(rest, "show")),
        "history": lambda: history(workspace.load(), _one_id(rest, "history")),
        "graph": lambda: graph(workspace.load(), _one_id(rest, "graph")),
        "conflicts": lambda: conflicts(workspace.load()),
        "forget": lambda: forget(workspace, rest),
        "add": lambda: add(workspace, rest),
        "stats": lambda: stats(workspace.load()),
    }
    handler = handlers.get(command)
    if handler is None:
        raise SlashError(
            f"Unknown {_cmd()} command `{command}`. Try: list, search, show, history, graph, "
            "conflicts, forget, add, stats, help."
        )
    return handler()


def _one_id(rest: str, command: str) -> str:
    words = rest.split()
    if len(words) != 1:
        raise SlashError(f"Usage: `{_cmd()} {command} <id>` (an id or its first characters, from `{_cmd()} list`).")
    return words[0].strip("`")


def _resolve(snap: Snapshot, ref: str) -> Memory:
    try:
        return snap.resolve(ref)
    except ForgememError as exc:
        message = str(exc).replace("'", "`")
        raise SlashError(message[:1].upper() + message[1:] + ".") from None


class _Ids:
    """Short ids that are unambiguous among every memory of the snapshot."""

    def __init__(self, snap: Snapshot):
        self.short = short_ids(list(snap.graph.memories))

    def __call__(self, memory_id: str) -> str:
        return self.short.get(memory_id, short(memory_id))


def _problems(snap: Snapshot) -> list[str]:
    """One line when memory files could not be read (left out of every answer) or have other problems."""
    from forgemem.index.problems import snapshot_line

    line = snapshot_line(snap)
    return [f"⚠ {line}."] if line else []


def _line(memory: Memory, ids: _Ids, snap: Snapshot | None = None) -> str:
    mark = ""
    if snap is not None and snap.graph.conflicts.get(memory.id):
        mark = " ⚠"
    if memory.status and not memory.retracted:
        mark += f" ({memory.status})"
    return f"- `{ids(memory.id)}` {memory.scope}/{memory.category}{mark}: {one_line(memory, LINE_WIDTH)}"


# ------------------------------------------------------------------ commands


def summary(snap: Snapshot) -> str:
    heads = snap.heads()
    ids = _Ids(snap)
    by_scope = {s: sum(1 for m in heads if m.scope == s) for s in SCOPES}
    conflicts_ = snap.graph.contradictions()
    forks = snap.graph.forks()
    lines = [
        f"**forgemem**: {len(heads)} current memories (repo {by_scope['repo']}, user {by_scope['user']}), "
        f"{len(snap.memories)} files in all (older versions included)"
        + (f", **{len(conflicts_)} conflict(s)**" if conflicts_ else "")
        + (f", **{len(forks)} fork(s)**" if forks else "")
        + "."
    ]
    lines += _problems(snap)
    newest = sorted(heads, key=lambda m: m.created_at, reverse=True)[:3]
    if newest:
        lines.append("Newest:")
        lines += [_line(m, ids, snap) for m in newest]
    lines.append(f"`{_cmd()} help` for commands.")
    return "\n".join(lines)


def list_memories(snap: Snapshot, rest: str) -> str:
    ids = _Ids(snap)
    heads = snap.heads()
    what = rest.strip().lower()
    if what:
        if what in CATEGORIES:
            heads = [m for m in heads if m.category == what]
        elif what in SCOPES:
            heads = [m for m in heads if m.scope == what]
        else:
            raise SlashError(
                f"`{_cmd()} list` takes a category ({', '.join(CATEGORIES)}) or a scope (repo, user), not `{rest}`."
            )
    if not heads:
        return "\n".join(["No memories" + (f" in {what}." if what else " yet."), *_problems(snap)])
    heads.sort(key=lambda m: (m.scope, m.category, -m.created_at.timestamp()))
    lines = [f"**{memory_count(len(heads))}**" + (f" ({what})" if what else "") + ":"]
    lines += [_line(m, ids, snap) for m in heads[:LIST_LIMIT]]
    if len(heads) > LIST_LIMIT:
        lines.append(f"… and {len(heads) - LIST_LIMIT} more; narrow with `{_cmd()} list <category>` or search.")
    return "\n".join(lines + _problems(snap))


def search_memories(workspace: Workspace, query: str, search) -> str:
    if not query:
        raise SlashError(f"Usage: `{_cmd()} search <what you want to find>`.")
    hits = (search or _search_in_process(workspace))(query, SEARCH_K)
    snap = workspace.load()
    if not hits:
        floor = workspace.config.recall_floor
        return "\n".join([f"Nothing found for “{query}” (no memory scores {floor:.2f} or more for it).",
                          *_problems(snap)])
    ids = _Ids(snap)
    lines = [f"**{len(hits)} result(s)** for “{query}”:"]
    for hit in hits:
        mark = " ⚠ conflict" if hit.get("conflicts") else ""
        lines.append(
            f"- `{ids(hit['id'])}` {hit['scope']}/{hit['category']} ({hit['score']:.2f}){mark}: "
            f"{one_line(hit['content'], LINE_WIDTH)}"
        )
    return "\n".join(lines + _problems(snap))


def server_search(workspace: Workspace, on_notice=None) -> Callable[[str, int], list[dict]]:
    """A search that asks the recall server first (in-process when none answers)."""

    def search(query: str, k: int) -> list[dict]:
        from forgemem.recall import client

        answer = client.answer(client.query_request(workspace, "recall", query, k=k), on_notice=on_notice)
        if not answer["ok"]:
            raise ForgememError(answer["error"])
        return answer["results"][0]

    return search


def _search_in_process(workspace: Workspace):
    def search(query: str, k: int) -> list[dict]:
        from forgemem.recall.engine import RecallEngine
        from forgemem.recall.rank import Query

        return RecallEngine(workspace).recall(Query(query, k=k, floor=workspace.config.recall_floor)).to_dicts()

    return search


def show(snap: Snapshot, ref: str) -> str:
    memory = _resolve(snap, ref)
    ids = _Ids(snap)
    graph = snap.graph
    head = "current" if graph.is_head(memory.id) else "superseded by " + ", ".join(
        [f"`{ids(i)}`" for i in graph.superseded_by.get(memory.id, [])]
        + ([f"`{graph.held_back[memory.id].name}` (which cannot be read)"] if memory.id in graph.held_back else [])
    )
    lines = [
        f"**`{ids(memory.id)}`** {memory.scope}/{memory.category} · v{memory.version} · {head} · "
        f"{format_timestamp(memory.created_at)}" + (f" · {memory.status}" if memory.status else ""),
        "",
        memory.body,
        "",
    ]
    if memory.supersedes:
        lines.append("supersedes " + ", ".join(f"`{ids(i)}`" for i in memory.supersedes))
    for relation in memory.related:
        lines.append(f"{relation.relationship} `{ids(relation.id)}`")
    for other in graph.conflicts.get(memory.id, []):
        lines.append(f"⚠ contradicted by `{ids(other)}`")
    if memory.source:
        lines.append(f"from {memory.source.describe()}")
    if memory.path:
        lines.append(f"file: `{memory.path}`")
    return "\n".join(lines).rstrip()


def history(snap: Snapshot, ref: str) -> str:
    memory = _resolve(snap, ref)
    ids = _Ids(snap)
    versions = snap.graph.history(memory.id)
    lines = [f"**History of `{ids(memory.id)}`** ({len(versions)} version(s), oldest first):"]
    for version in versions:
        current = " ← current" if snap.graph.is_head(version.id) else ""
        lines.append(
            f"- v{version.version} `{ids(version.id)}` {format_timestamp(version.created_at)[:10]}"
            f"{current}: {one_line(version, LINE_WIDTH)}"
        )
    return "\n".join(lines)


def graph(snap: Snapshot, ref: str) -> str:
    memory = _resolve(snap, ref)
    ids = _Ids(snap)
    g = snap.graph
    lines = [f"**`{ids(memory.id)}`** {memory.category}: {one_line(memory, 100)}"]
    edges = []
    for old in memory.supersedes:
        edges.append(("supersedes →", old))
    for newer in g.superseded_by.get(memory.id, []):
        edges.append(("superseded by ←", newer))
    for relation in memory.related:
        edges.append((f"{relation.relationship} →", relation.id))
    for other in snap.memories:
        for relation in other.related:
            if relation.id == memory.id:
                edges.append((f"{relation.relationship} ←", other.id))
    if not edges:
        lines.append("No edges.")
    for label, other_id in edges:
        other = g.memories.get(other_id)
        text = one_line(other, 100) if other else "(missing memory)"
        lines.append(f"- {label} `{ids(other_id)}`: {text}")
    return "\n".join(lines)


def conflicts(snap: Snapshot) -> str:
    from forgemem.curate.nearby import supersede_command

    ids = _Ids(snap)
    pairs = [(e.source, e.target) for e in snap.graph.contradictions()]
    forks = snap.graph.forks().items()
    if not pairs and not forks:
        return "No conflicts."
    lines = []
    for a, b in pairs:
        lines.append(f"**Conflict**: `{ids(a)}` contradicts `{ids(b)}`")
        for memory_id in (a, b):
            memory = snap.graph.memories.get(memory_id)
            if memory:
                lines.append(f"  - `{ids(memory_id)}` {memory.category}: {one_line(memory, 120)}")
    for base, heads in forks:
        lines.append(f"**Fork**: `{ids(base)}` is superseded by " + " and ".join(f"`{ids(h)}`" for h in heads))
    lines.append(f"Resolve by adding a memory that supersedes both (`{supersede_command(['A', 'B'])}`).")
    return "\n".join(lines)


def forget(workspace: Workspace, rest: str) -> str:
    ref, _, reason = rest.partition(" ")
    if not ref:
        raise SlashError(f"Usage: `{_cmd()} forget <id> [reason]`.")
    snap = workspace.load()
    memory = _resolve(snap, ref.strip("`"))
    retraction, _ = workspace.forget(memory.id, reason=reason.strip())
    ids = _Ids(workspace.load())
    return f"Forgot `{ids(memory.id)}` ({one_line(memory, 80)}); retraction `{ids(retraction.id)}` written."


def add(workspace: Workspace, rest: str) -> str:
    if not rest:
        raise SlashError(f"Usage: `{_cmd()} add [category:] <text>`, e.g. `{_cmd()} add corrections: use ruff, not flake8`.")
    category, _, text = rest.partition(":")
    if category.strip().lower() in CATEGORIES and text.strip():
        category, text = category.strip().lower(), text.strip()
    else:
        category, text = None, rest
    scope = None
    if category is None:
        from forgemem.capture.classify.patterns import match, scope_for

        found = match(text, after_work=True)
        category = found.category if found else "project-conventions"
        scope = scope_for(category, text, "repo" in workspace.stores)
    elif category == "user-facts" or "repo" not in workspace.stores:
        scope = "user"
    memory, redacted = workspace.add(shlex_safe(text), scope=scope, category=category)
    ids = _Ids(workspace.load())
    note = f" ({len(redacted)} secret(s) redacted)" if redacted else ""
    return f"Remembered `{ids(memory.id)}` as {memory.scope}/{memory.category}{note}: {one_line(memory, LINE_WIDTH)}"


def shlex_safe(text: str) -> str:
    """Text typed after `/memory add`, with one pair of surrounding quotes removed."""
    text = text.strip()
    try:
        parts = shlex.split(text)
    except ValueError:
        return text
    if len(parts) == 1 and text[0] in "\"'" and text[-1] == text[0]:
        return parts[0]
    return text


def stats(snap: Snapshot) -> str:
    heads = snap.heads()
    lines = [f"**{len(heads)} current memories**, {len(snap.memories)} files:"]
    for scope in SCOPES:
        counts = [(c, sum(1 for m in heads if m.scope == scope and m.category == c)) for c in CATEGORIES]
        shown = ", ".join(f"{c} {n}" for c, n in counts if n)
        lines.append(f"- {scope}: {shown or 'none'}")
    chains = sum(1 for m in heads if m.version > 1)
    lines.append(
        f"- {memory_count(chains)} changed at least once; {len(snap.graph.contradictions())} conflict(s); "
        f"{len(snap.graph.forks())} fork(s); {len(snap.problems)} problem(s)"
    )
    return "\n".join(lines + _problems(snap))
