"""A warm `forgemem recall QUERY`, answered without loading forgemem.

With a recall server running, a recall is a socket round trip of a few milliseconds, and importing the CLI
framework, the configuration and the printing library costs several times that. `recall(args)` handles the
everyday form (a query; -k/--top, -s/--scope, -c/--category, --tag, --hops, --history, --all, --json; the
global --repo-dir, --user-dir, -C/--cwd and their environment variables): it sends the command line, its
folder, its terminal and its environment to the running server, which answers with the text the `recall`
command prints for it (`forgemem.recall.command`), and writes that text. It imports only the standard
library, `forgemem.environment` and `forgemem.recall.wire`.

Anything else returns None before anything was printed, and the full CLI runs as if this had not been
tried: another option, a value the CLI would refuse (it says why), no server answering (the CLI answers here
and starts one), a server that declines (another environment, an error), text this process's streams
cannot encode.
"""

from __future__ import annotations

import os
import sys

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
    """Whether the values look like what the command takes (the server checks the rest: ranges, choices)."""
    if "query" not in found or any(found.get(key) == "" for key in ("repo_dir", "user_dir", "cwd")):
        return False
    for key in ("k", "hops"):
        if key in found:
            if not (found[key].isascii() and found[key].isdigit()):
                return False
            found[key] = int(found[key])
    found.setdefault("scope", "all")
    return True


#: the environment variables that decide how the CLI's printing library writes to a terminal
TERMINAL_VARIABLES = ("TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE",
                      "COLUMNS", "LINES")


def recall(args: list[str]) -> int | None:
    """Run `forgemem recall …` through a running server; None when the full CLI should run it instead."""
    from forgemem.environment import command_environment, server_enabled

    if not server_enabled():
        return None
    found = parse(args)
    if found is None:
        return None
    try:
        folder = os.getcwd()
    except OSError:
        return None  # the CLI says what is wrong with this folder
    from forgemem.recall.wire import ANSWER_TIMEOUT, exchange

    request = {
        "op": "recall-command", "folder": folder,
        **{key: found.get(key) for key in ("cwd", "repo_dir", "user_dir", "query", "k", "hops", "category")},
        "scope": found["scope"], "tags": found["tag"],
        **{key: found[key] for key in ("history", "show_all", "as_json")},
        "terminal": _terminal(), "environment": command_environment(),
    }
    reply = exchange(request, ANSWER_TIMEOUT, _answer_problem)
    if reply is None or not reply["ok"]:
        return None
    return _write(reply)


def _write(reply: dict) -> int | None:
    """Write the server's text as the CLI would have; None (nothing written) where only the CLI can say
    what happens: text this process's streams cannot encode (an ASCII terminal, a query that was not UTF-8)."""
    streams = ((sys.stderr, reply["stderr"]), (sys.stdout, reply["stdout"]))
    for stream, text in streams:
        if stream is not None and text:
            try:
                text.encode(getattr(stream, "encoding", None) or "utf-8", getattr(stream, "errors", None) or "strict")
            except (LookupError, UnicodeError):
                return None
    try:
        for stream, text in streams:
            if stream is not None:  # a closed stream: the CLI's printing library drops what goes there
                stream.write(text)
                stream.flush()
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a full disk, a stream gone bad: one line, as the CLI says an unexpected error
        from forgemem.cli.dispatch import internal_error
        from forgemem.environment import debug
        from forgemem.errors import EXIT_PROBLEMS

        if debug():
            raise
        if sys.stderr is not None:
            sys.stderr.write(internal_error(exc) + "\n")
        return EXIT_PROBLEMS
    return reply["exit_code"]


def _terminal() -> dict:
    """What the printing library would ask of this process's terminal, for the server to print as it would."""
    size = None
    for fd in (0, 1, 2):  # where the printing library looks for a terminal's size, in this order
        try:
            size = list(os.get_terminal_size(fd))
            break
        except (OSError, ValueError):
            pass
    return {
        "stdout_tty": _isatty(sys.stdout), "stderr_tty": _isatty(sys.stderr),
        "stdout_encoding": getattr(sys.stdout, "encoding", None) or "utf-8",
        "stderr_encoding": getattr(sys.stderr, "encoding", None) or "utf-8",
        "size": size, "environ": {key: os.environ[key] for key in TERMINAL_VARIABLES if key in os.environ},
    }


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _answer_problem(reply: object, op: object) -> str | None:
    """Why a server's answer to a command line cannot be written out (None: it can)."""
    if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
        return "its answer is not an object with \"ok\""
    if reply["ok"] and not (isinstance(reply.get("stdout"), str) and isinstance(reply.get("stderr"), str)
                            and type(reply.get("exit_code")) is int):
        return "its answer has no text to print"
    return None
