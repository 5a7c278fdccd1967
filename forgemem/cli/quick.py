"""A warm `forgemem recall QUERY`, answered without the CLI framework.

With a recall server running, a recall is a socket round trip of a few milliseconds, and importing
typer and building its command cost more than that. `recall(args)` handles the everyday form (a query;
-k/--top, -s/--scope, -c/--category, --tag, --hops, --history, --all, --json; the global --repo-dir,
--user-dir, -C/--cwd and their environment variables) when a running server answers it, and prints
exactly what the `recall` command prints (both use `forgemem.cli.recall_output`).

Anything else returns None before anything was printed or recorded, and the full CLI runs as if this
had not been tried: another option, a value the CLI would refuse (it says why), no server answering
(the CLI answers here and starts one), an error from the server.
"""

from __future__ import annotations

import os
from pathlib import Path

VALUE_OPTIONS = {"-k": "k", "--top": "k", "-s": "scope", "--scope": "scope", "-c": "category",
                 "--category": "category", "--tag": "tag", "--hops": "hops"}
FLAGS = {"--history": "history", "--all": "show_all", "--json": "as_json"}
GLOBAL_OPTIONS = {"--repo-dir": "repo_dir", "--user-dir": "user_dir", "-C": "cwd", "--cwd": "cwd"}
ENVIRONMENT = {"repo_dir": "FORGEMEM_REPO_DIR", "user_dir": "FORGEMEM_USER_DIR"}


def parse(args: list[str]) -> dict | None:
    """The options of a plain `recall QUERY …` command line; None for anything this path leaves to the CLI."""
    found: dict = {"tag": [], "history": False, "show_all": False, "as_json": False}
    for key, variable in ENVIRONMENT.items():
        if variable in os.environ:
            found[key] = os.environ[variable]
    i = 0
    while i < len(args) and args[i] in GLOBAL_OPTIONS:
        if i + 1 >= len(args):
            return None
        found[GLOBAL_OPTIONS[args[i]]] = args[i + 1]
        i += 2
    if args[i : i + 1] != ["recall"]:
        return None
    i += 1
    while i < len(args):
        arg = args[i]
        if arg in VALUE_OPTIONS and i + 1 < len(args):
            key = VALUE_OPTIONS[arg]
            if key == "tag":
                found["tag"].append(args[i + 1])
            elif key in found:
                return None  # given twice: the CLI decides which counts
            else:
                found[key] = args[i + 1]
            i += 2
        elif arg in FLAGS:
            found[FLAGS[arg]] = True
            i += 1
        elif arg.startswith("-") or "query" in found:
            return None
        else:
            found["query"] = arg
            i += 1
    return found if _valid(found) else None


def _valid(found: dict) -> bool:
    from forgemem.cli.recall_output import MAX_HOPS, SCOPE_CHOICES
    from forgemem.store.model import CATEGORIES

    if "query" not in found or any(found.get(key) == "" for key in ("repo_dir", "user_dir", "cwd")):
        return False
    for key, low, high in (("k", 1, None), ("hops", 0, MAX_HOPS)):
        if key in found:
            value = found[key]
            if not (value.isascii() and value.isdigit()) or int(value) < low or (high is not None and int(value) > high):
                return False
            found[key] = int(value)
    if found.setdefault("scope", "all") not in SCOPE_CHOICES:
        return False
    if "category" in found and found["category"] not in CATEGORIES:
        return False
    return "cwd" not in found or Path(found["cwd"]).is_dir()


def recall(args: list[str]) -> int | None:
    """Run `forgemem recall …` through a running server; None when the full CLI should run it instead."""
    from forgemem.config import server_enabled

    if not server_enabled():
        return None
    found = parse(args)
    if found is None:
        return None
    from forgemem.cli.output import err, warn
    from forgemem.cli.recall_output import recall_request, show_answer
    from forgemem.errors import ForgememError
    from forgemem.recall import client
    from forgemem.workspace import Workspace

    try:
        workspace = Workspace.open(cwd=_path(found.get("cwd")), repo_dir=_path(found.get("repo_dir")),
                                   user_dir=_path(found.get("user_dir")))
        request = recall_request(workspace, [{"query": found["query"]}], k=found.get("k"), scope=found["scope"],
                                 category=found.get("category"), tags=found["tag"], hops=found.get("hops"),
                                 history=found["history"],
                                 floor=0.0 if found["show_all"] else workspace.config.recall_floor,
                                 lexical_only=False)
        answer = client.ask(request)
    except ForgememError:
        return None  # the CLI says it, in its words
    if answer is None or not answer.get("ok"):
        return None
    try:
        for message in workspace.warnings:
            warn(message)
        show_answer(workspace, found["query"], answer, explain=False, show_all=found["show_all"],
                    as_json=found["as_json"])
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        err.print("forgemem: interrupted")
        return 130
    return 0


def _path(value: str | None) -> Path | None:
    return None if value is None else Path(value)
