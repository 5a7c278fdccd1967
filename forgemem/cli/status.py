"""The status command: one screen of everything, and what to do next."""

from __future__ import annotations

from rich.markup import escape

from forgemem.cli.app import JSON_OPTION, app, emit_json, out, state
from forgemem.store.model import short


@app.command()
def status(as_json: bool = JSON_OPTION) -> None:
    """Both stores, memories waiting for review, conflicts, broken files, stale memories, the recall server,
    the observer and its last captures, installed hooks, index freshness, and the one next action.
    Read-only: writes nothing and starts no server."""
    from forgemem.agents.status import status as build

    report = build(state.workspace(), state.where())
    if as_json:
        emit_json(report)
        return
    _print(report)


def _print(report: dict) -> None:
    out.print(f"[bold]forgemem status[/] {escape(report['root'] or str(state.where()))}")
    for scope, store in report["stores"].items():
        label = "[cyan]repo[/]" if scope == "repo" else "[magenta]user[/]"
        if not store["exists"]:
            out.print(f"{label}  {escape(_shown(store['path'], report['root']))}: none yet")
            continue
        counts = f"{store['current']} current, {store['versions']} older versions"
        if store["proposed"]:
            counts += f", [yellow]{store['proposed']} proposed (awaiting review)[/]"
        if store["retracted"]:
            counts += f", {store['retracted']} retracted"
        out.print(f"{label}  {escape(_shown(store['path'], report['root']))}: {counts}; index {_index(store['index'])}")
    stale = {s["id"]: s for s in reversed(report["stale"])}  # one finding per memory (its first)
    out.print(", ".join(_n(n, one, many) for n, one, many in (
        (len(report["conflicts"]), "conflict", "conflicts"), (len(report["forks"]), "fork", "forks"),
        (report["broken_files"], "broken file", "broken files"), (len(stale), "stale memory", "stale memories"))))
    for a, b in report["conflicts"][:3]:
        out.print(f"  [yellow]conflict[/] {short(a)} contradicts {short(b)}")
    for problem in report["problems"][:3]:
        out.print(f"  [red]broken[/] {escape(problem['path'] or '?')}: {escape(problem['reason'])}")
    for finding in list(reversed(stale.values()))[:3]:
        out.print(f"  [yellow]stale[/] {short(finding['id'])}: {escape(finding['detail'])}")
    server = report["server"]
    if not server["enabled"]:
        out.print("recall server: off (FORGEMEM_SERVER)")
    elif server["running"]:
        out.print(f"recall server: running (pid {server['pid']}) at {escape(server['socket'])}")
    else:
        out.print(f"recall server: not running (the next recall starts one) at {escape(server['socket'])}")
    _print_observer(report["observer"], report["not_captured"])
    hooks = ", ".join(f"{i['agent']}{' (user)' if i['where'] == 'user' and i['agent'] == 'claude-code' else ''}"
                      f" {_install(i)}" for i in report["installs"])
    out.print(f"hooks: {escape(hooks)}")
    out.print(f"[bold]next:[/] {escape(report['next'])}")


def _n(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _shown(path: str, root: str | None) -> str:
    """A path inside the repository relative to it, one in the home folder as `~/…`."""
    from pathlib import Path

    for base, prefix in ((root, ""), (str(Path.home()), "~/")):
        if base and Path(base) in Path(path).parents:
            return prefix + Path(path).relative_to(base).as_posix()
    return path


def _index(index: dict) -> str:
    if index["state"] == "fresh":
        return "fresh"
    if index["state"] == "missing":
        return "not built yet (the next recall builds it)"
    if index["state"] == "unreadable":
        return "from another version (rebuilt on the next recall)"
    parts = [f"{index[k]} {k}" for k in ("new", "changed", "deleted") if index[k]]
    if index["unembedded"]:
        parts.append(f"{index['unembedded']} without a vector")
    return f"behind ({', '.join(parts)} files; the next recall catches up)"


def _install(entry: dict) -> str:
    if entry["state"] == "partly":
        return f"partly ({entry['detail']})"
    if entry["state"] == "unknown":
        return f"unknown ({entry['detail']})"
    return entry["state"]


def _print_observer(observer: dict, not_captured: int) -> None:
    if observer.get("error"):
        out.print(f"observer: state {escape(observer['error'])}")
    elif not observer["exists"]:
        out.print("observer: nothing captured here yet")
    else:
        passes = observer["passes"]
        line = (f"observer: {observer['transcripts']} transcripts ({observer['read_to_end']} read to the end), "
                f"{passes['done']} passes done, {passes['pending']} waiting, {passes['failed']} failed")
        if observer["last_pass"]:
            line += f"; last pass {observer['last_pass']}"
        if observer["capturing_now"]:
            line += f"; capturing now (pid {', '.join(map(str, observer['capturing_now']))})"
        out.print(escape(line))
    if not_captured:
        out.print(f"  {not_captured} past session(s) of this repository not captured yet")
    for failure in observer["failures"]:
        out.print(escape(f"  failed {failure['time']} {failure['transcript']}: {failure['error']}"))
    if observer["last_captures"]:
        out.print("last captures:")
    for w in observer["last_captures"]:
        proposed = " (proposed)" if w.get("proposed") else ""
        out.print(escape(f"  {w['time']} {short(w['id'])} {w['scope']}/{w['category']}{proposed}: {w['text']}"))
