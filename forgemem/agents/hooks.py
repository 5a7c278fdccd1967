"""What every agent's hooks share: the hooks log, context for a prompt, capture in the background.

Each agent's own events are handled in its module (`claude_code`, `codex`); they call
these. Hooks fail open: whatever goes wrong, the exit status is 0 with nothing
injected, and a line goes to `hooks.log` in the cache (private, secrets redacted).
A recall slower than `hook_timeout_ms` (default 2 s) is abandoned.

The prompt, the transcript path and every other field of an event are data: they
arrive on stdin (or as one argument) and reach forgemem's own code as Python strings,
never a shell command line. Background capture starts `python -P -m forgemem -C
PROJECT observe …` in a private folder (`forgemem.spawn`), so a repository that ships
a `forgemem/` package of its own is never imported.
"""

from __future__ import annotations

import os
import re
import threading
import time
from contextvars import ContextVar
from pathlib import Path

from forgemem.config import user_cache_dir

LOG_NAME = "hooks.log"
LOG_LIMIT = 256 * 1024  # the log is cut in half when it grows past this
RECENT_TURNS = 3  # human turns used as the query after a compaction
#: the agent's session id of the event being handled, for the hooks log's injection line (`forgemem stats --tokens`)
_SESSION: ContextVar[str | None] = ContextVar("forgemem_hook_session", default=None)


def log_path() -> Path:
    return user_cache_dir() / LOG_NAME


#: an agent's session id the log keeps without running the redactor: a UUID (what the agents send), or a
#: short name of letters, digits and . : - (`bench-3`); anything else (e.g. `ghp_…`) is redacted as ever
PLAIN_SESSION = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}|[A-Za-z0-9.:-]{1,32}")


def log(message: str, generated: bool = False) -> None:
    """One line in the hooks log per event (private, secrets redacted, a multi-line message joined with
    " | "); the log is cut to its newer half, at a line, past LOG_LIMIT; never raises.

    `generated`: forgemem made every word of the message from memory ids, numbers and a plain session id
    (`PLAIN_SESSION`), none of it text from a person, a file or a transcript, so the redactor (whose
    detectors take 0.1-0.2 s to load, most of a hook's time) has nothing to find and is not run.
    """
    try:
        from forgemem.permissions import atomic_write_text, open_private_append

        path = log_path()
        if path.exists() and path.stat().st_size > LOG_LIMIT:
            data = path.read_bytes()
            half = data[len(data) // 2:]
            half = half[half.find(b"\n") + 1:]  # from the start of a line
            atomic_write_text(path, half.decode("utf-8", "replace"), private=True)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        if not generated:
            from forgemem.store.redact import redact

            message = redact(message)[0]
        line = " | ".join(part.strip() for part in message.splitlines() if part.strip())
        with open_private_append(path) as handle:
            handle.write(f"{stamp} {line}\n")
    except Exception:  # noqa: BLE001 - logging must never fail a hook
        pass


def _payload_cwd(payload: dict) -> Path:
    """The project folder the event is about (the hook's own folder when the payload names none).

    Every agent's handler starts with this call, so it also notes the event's session id for the log lines.
    """
    session = payload.get("session_id")
    _SESSION.set(session if isinstance(session, str) and len(session) <= 200 else None)
    named = payload.get("cwd")
    if isinstance(named, str) and named and Path(named).is_dir():
        return Path(named)
    return Path(os.getcwd())


def announced(workspace) -> list:
    """The memories capture wrote that no prompt has announced yet, claimed now (fails open: [])."""
    from forgemem.capture.announce import state_file, take

    try:
        saved = take(state_file(workspace), on_error=log)
    except Exception as exc:  # noqa: BLE001 - a notice is never worth a failed hook
        log(f"announcing captured memories failed: {type(exc).__name__}: {exc}")
        return []
    if saved:
        from forgemem.store.model import memory_count

        log(f"announced {memory_count(len(saved), 'captured')}: {' '.join(s.short for s in saved)}")
    return saved


def unreadable_notice(workspace) -> str | None:
    """"forgemem: N memory files could not be read …" when the set of such files changed since a hook
    last said it (`forgemem.index.problems.notice_once`): once per change, never on every prompt.
    Fails open (None)."""
    from forgemem.index.problems import notice_once

    try:
        line = notice_once(workspace.stores.values())
    except Exception as exc:  # noqa: BLE001 - a notice is never worth a failed hook
        log(f"counting unreadable memory files failed: {type(exc).__name__}: {exc}")
        return None
    if line:
        log(line)
    return f"forgemem: {line}" if line else None


def context_for(query: str, cwd: Path, timeout_ms: int | None = None, workspace=None, seen=None) -> str:
    """The context block for `query` in the stores seen from `cwd` (or in `workspace`); "" if none, or too slow.

    `seen` (a `sessions.SessionRecord`) names what this agent session already has: those memories are
    left out while unchanged, and the ones injected now are added to it (the caller saves it).
    """
    from forgemem.recall import client
    from forgemem.workspace import Workspace

    if workspace is None:
        workspace = Workspace.open(cwd=cwd)
        for warning in workspace.warnings:
            log(warning)
    limit = (timeout_ms if timeout_ms is not None else workspace.config.hook_timeout_ms) / 1000
    request = client.query_request(workspace, "context", query[:4000])
    if not request["stores"]:
        return ""
    if seen is not None and seen.injected:
        request["skip"] = dict(seen.injected)
    result: dict = {}

    def work() -> None:
        try:
            result["answer"] = client.answer(request, on_notice=log, timeout=limit, start_first=True)
        except Exception as exc:  # noqa: BLE001 - reported below, in the log
            result["error"] = f"{type(exc).__name__}: {exc}"

    thread = threading.Thread(target=work, daemon=True)
    started = time.monotonic()
    thread.start()
    thread.join(limit)
    if thread.is_alive():
        log(f"recall took longer than {limit:.1f} s; nothing injected (a server is starting for next time)")
        return ""
    if "error" in result:
        log(f"recall failed: {result['error']}")
        return ""
    answer = result["answer"]
    if not answer.get("ok"):
        log(f"recall failed: {answer.get('error')}")
        return ""
    from forgemem.usage import injection_message

    hashes = answer.get("hashes")
    if seen is not None and isinstance(hashes, dict):
        seen.add({k: v for k, v in hashes.items() if isinstance(k, str) and isinstance(v, str)})
    if answer.get("repeated") and not answer["ids"]:
        log(f"nothing new to inject: {int(answer['repeated'])} relevant memories are already in this session",
            generated=True)
        return ""
    from forgemem.store.model import is_valid_id

    session = _SESSION.get()
    plain = (session is None or bool(PLAIN_SESSION.fullmatch(session))) and all(map(is_valid_id, answer["ids"]))
    log(injection_message(answer["ids"], int(answer["tokens"]), 1000 * (time.monotonic() - started), session),
        generated=plain)
    return answer["context"]


def recent_human_text(transcript: str | None) -> str:
    """The last few human turns of a transcript (the query after a compaction)."""
    if not transcript:
        return ""
    from forgemem.capture.transcripts import Turn, detect_format, read_all

    path = Path(transcript)
    if not path.is_file():
        return ""
    fmt = detect_format(path)
    if fmt is None:
        return ""
    turns = [e for e in read_all(path, fmt) if isinstance(e, Turn) and e.role == "user"]
    return "\n".join(t.text for t in turns[-RECENT_TURNS:] if not t.text.startswith("/"))


def capture_in_background(cwd: Path, transcript: str, *flags: str) -> None:
    """`forgemem -C CWD observe --once [flags] -- TRANSCRIPT` in a detached process: the agent never waits.

    The process runs safely (`forgemem.spawn`): not in the project folder, and
    with nothing from it on `sys.path`; its errors go to the hooks log.
    """
    from forgemem.spawn import start_detached

    args = ["-C", str(cwd.absolute()), "observe", "--once", *flags, "--", transcript]
    start_detached(args, log_path=log_path())
    log(f"started: observe --once {' '.join(flags)} {transcript}")


