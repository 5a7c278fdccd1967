"""Agent hooks: Claude Code's hook JSON in, context out, capture in the background.

`forgemem hook claude-code` reads one hook event on stdin:

| event | what forgemem does |
|---|---|
| `UserPromptSubmit` | recall for `prompt`; the context block goes out as `hookSpecificOutput.additionalContext`; memories capture wrote since the last prompt are announced once (`forgemem.announce`: `systemMessage` for the user, a fenced block for the agent). A prompt that is a `/forgemem …` command is answered here instead: the answer is shown to the user (`decision: block` with the answer as `reason`) and the model is not called |
| `SessionStart` with `source: compact` | the same, for the last human turns of `transcript_path` (re-inject after compaction) |
| `PreCompact` | a compaction capture pass over `transcript_path`, in a background process |
| `Stop` | a cadence check over `transcript_path` (a pass if enough exchanges are new), in the background |
| `SessionEnd` | a final cadence pass (exchanges short of the cadence too), in the background |

Hooks fail open: whatever goes wrong, the exit status is 0 with nothing
injected, and a line goes to `hooks.log` in the cache (private, secrets
redacted). A recall slower than `hook_timeout_ms` (default 2 s) is abandoned.

The prompt, the transcript path and every other field of the event are data:
they arrive on stdin and reach forgemem's own code as Python strings, never a
shell command line. Background capture starts `python -P -m forgemem -C
PROJECT observe …` in a private folder (`forgemem.spawn`), so a repository
that ships a `forgemem/` package of its own is never imported.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
import traceback
from pathlib import Path

from forgemem.config import user_cache_dir

LOG_NAME = "hooks.log"
LOG_LIMIT = 256 * 1024  # the log is cut in half when it grows past this
RECENT_TURNS = 3  # human turns used as the query after a compaction


def log_path() -> Path:
    return user_cache_dir() / LOG_NAME


def log(message: str) -> None:
    """One line in the hooks log (private, secrets redacted); never raises."""
    try:
        from forgemem.permissions import atomic_write_text, open_private_append
        from forgemem.store.redact import redact

        path = log_path()
        if path.exists() and path.stat().st_size > LOG_LIMIT:
            data = path.read_bytes()
            atomic_write_text(path, data[len(data) // 2:].decode("utf-8", "replace"), private=True)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        with open_private_append(path) as handle:
            handle.write(f"{stamp} {redact(message)[0]}\n")
    except Exception:  # noqa: BLE001 - logging must never fail a hook
        pass


#: `/forgemem …` typed as a prompt (the Claude Code command name), answered by the hook itself
SLASH_PROMPT = re.compile(r"\A\s*/forgemem(?=\s|\Z)")


def _payload_cwd(payload: dict) -> Path:
    """The project folder the event is about (the hook's own folder when the payload names none)."""
    named = payload.get("cwd")
    if isinstance(named, str) and named and Path(named).is_dir():
        return Path(named)
    return Path(os.getcwd())


def claude_code(stdin_text: str, timeout_ms: int | None = None) -> str:
    """Handle one Claude Code hook event; returns what to print (possibly nothing)."""
    if os.environ.get("FORGEMEM_CLASSIFIER_RUN"):  # capture's own classifier run (classify.agent_cli): hands off
        return ""
    try:
        payload = json.loads(stdin_text)
        if not isinstance(payload, dict):
            raise ValueError("the hook input is not a JSON object")
        event = payload.get("hook_event_name", "")
        cwd = _payload_cwd(payload)
        if event == "UserPromptSubmit":
            prompt = payload.get("prompt")
            if not isinstance(prompt, str):
                raise ValueError("UserPromptSubmit input has no prompt string")
            if SLASH_PROMPT.match(prompt):
                return json.dumps({"decision": "block", "reason": slash_answer(prompt, cwd)}, ensure_ascii=False)
            return _inject(event, prompt, cwd, timeout_ms)
        if event == "SessionStart":
            if payload.get("source") != "compact":
                return ""
            query = recent_human_text(payload.get("transcript_path"))
            return _inject(event, query, cwd, timeout_ms) if query else ""
        transcript = payload.get("transcript_path")
        if not isinstance(transcript, str):
            transcript = None
        if event == "PreCompact" and transcript:
            capture_in_background(cwd, transcript, "--compaction")
        elif event == "SessionEnd" and transcript:
            capture_in_background(cwd, transcript, "--final")
        elif event == "Stop" and transcript:
            capture_in_background(cwd, transcript)
        return ""
    except Exception as exc:  # noqa: BLE001 - hooks fail open
        log(f"claude-code hook failed: {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}")
        return ""


def _inject(event: str, query: str, cwd: Path, timeout_ms: int | None) -> str:
    """The hook's answer: the context block for `query` and, on a prompt, what capture saved since
    the last one (`forgemem.announce`): shown to the user as `systemMessage`, and to the agent as a
    fenced block after the context block (outside the token budget, at most five memories)."""
    from forgemem.workspace import Workspace

    workspace = Workspace.open(cwd=cwd)
    for warning in workspace.warnings:
        log(warning)
    block = ""
    if query.strip():
        try:
            block = context_for(query, cwd, timeout_ms, workspace=workspace)
        except Exception as exc:  # noqa: BLE001 - the notice below still goes out
            log(f"recall failed: {type(exc).__name__}: {exc}")
    saved = announced(workspace) if event == "UserPromptSubmit" else []
    output: dict = {}
    if saved:
        from forgemem.capture.announce import context_block, notice

        output["systemMessage"] = notice(saved)
        notice_block = context_block(saved, model=workspace.config.embedding_model)
        block = "\n".join(part for part in (block, notice_block) if part)
    if block:
        output["hookSpecificOutput"] = {"hookEventName": event, "additionalContext": block}
    return json.dumps(output) if output else ""


def announced(workspace) -> list:
    """The memories capture wrote that no prompt has announced yet, claimed now (fails open: [])."""
    from forgemem.capture.announce import state_file, take

    try:
        saved = take(state_file(workspace), on_error=log)
    except Exception as exc:  # noqa: BLE001 - a notice is never worth a failed hook
        log(f"announcing captured memories failed: {type(exc).__name__}: {exc}")
        return []
    if saved:
        log(f"announced {len(saved)} captured memories: {' '.join(s.short for s in saved)}")
    return saved


def slash_answer(prompt: str, cwd: Path) -> str:
    """The answer to a `/forgemem …` prompt (the `/memory` language), as markdown for the user."""
    from forgemem.agents import slash
    from forgemem.workspace import Workspace

    line = SLASH_PROMPT.sub("/memory", prompt, count=1).strip()
    try:
        workspace = Workspace.open(cwd=cwd)
    except Exception as exc:  # noqa: BLE001 - one line for the user, not a traceback
        return f"forgemem: {exc}"
    for warning in workspace.warnings:
        log(warning)
    answer = slash.run(line, workspace, search=slash.server_search(workspace, on_notice=log))
    log(f"answered /forgemem {line.split()[1] if len(line.split()) > 1 else 'summary'}")
    return answer


def context_for(query: str, cwd: Path, timeout_ms: int | None = None, workspace=None) -> str:
    """The context block for `query` in the stores seen from `cwd` (or in `workspace`); "" if none, or too slow."""
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
    log(f"injected {len(answer['ids'])} memories, {answer['tokens']} tokens, "
        f"{1000 * (time.monotonic() - started):.0f} ms")
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


def codex(payload_text: str) -> None:
    """Codex's `notify` program: after a turn, capture from that session's rollout in the background."""
    if os.environ.get("FORGEMEM_CLASSIFIER_RUN"):  # capture's own classifier run (classify.agent_cli): hands off
        return
    try:
        payload = json.loads(payload_text) if payload_text else {}
        if not isinstance(payload, dict) or payload.get("type") != "agent-turn-complete":
            return
        thread = str(payload.get("thread-id") or "")
        rollout = find_codex_rollout(thread) if thread else None
        if rollout is None:
            log(f"codex notify: no rollout found for thread {thread!r}")
            return
        capture_in_background(_payload_cwd(payload), str(rollout))
    except Exception as exc:  # noqa: BLE001 - hooks fail open
        log(f"codex hook failed: {type(exc).__name__}: {exc}")


def find_codex_rollout(thread_id: str) -> Path | None:
    """The rollout file of a Codex session: `$CODEX_HOME/sessions/**/rollout-*-<thread id>.jsonl`."""
    home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
    matches = sorted((home / "sessions").rglob(f"rollout-*{thread_id}.jsonl"))
    return matches[-1] if matches else None


def main_claude_code() -> int:
    """`forgemem hook claude-code`: the event on stdin, the output on stdout, always exit 0."""
    try:
        text = sys.stdin.read()
    except (OSError, UnicodeDecodeError) as exc:
        log(f"claude-code hook could not read its input: {exc}")
        return 0
    output = claude_code(text)
    if output:
        sys.stdout.write(output + "\n")
    sys.stdout.flush()
    return 0
