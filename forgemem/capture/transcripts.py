"""Agent transcripts in, a stream of human and assistant turns out.

Each supported format has a small parser that reads the *new* part of a file
(from a byte offset kept by the observer) and yields:

- `Turn`: one human or assistant message (tool calls, tool output, model-written
  "user" lines and injected context are never turns), with the session id,
  a running turn index, a timestamp and where in the file it came from;
- `Compaction`: the agent compacted its context here.

Parsers keep a small JSON-able `state` between reads (the pending assistant
turn, the session id, line numbers), so reading a file in pieces gives the
same turns as reading it whole; a last line without its newline waits for it.

Formats: `claude-code` (session JSONL, subagent files, the older layout with
inline sidechains), `codex` (rollout JSONL), `aider` (`.aider.chat.history.md`),
`gemini` (one session JSON object), `jsonl` (plain `{"role", "content"}` lines).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

FORMATS = ("claude-code", "codex", "aider", "gemini", "jsonl")
HUMAN, ASSISTANT = "user", "assistant"


@dataclass
class Turn:
    session_id: str | None
    index: int
    role: str  # user | assistant
    text: str
    timestamp: str | None
    path: str
    line_start: int
    line_end: int
    byte_start: int
    byte_end: int

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Compaction:
    session_id: str | None
    timestamp: str | None
    path: str
    line: int


Event = Turn | Compaction


@dataclass
class ReadResult:
    events: list[Event]
    offset: int  # where the next read starts
    state: dict = field(default_factory=dict)


# ---------------------------------------------------------------- text cleaning

_SYSTEM_REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.S)
_COMMAND = re.compile(r"<command-name>\s*(/?[^<\s]*)\s*</command-name>")
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_BASH_INPUT = re.compile(r"<bash-input>(.*?)</bash-input>", re.S)
#: wrappers whose content is program output, never something a person typed
_OUTPUT_TAGS = re.compile(
    r"<(local-command-stdout|local-command-stderr|bash-stdout|bash-stderr|local-command-caveat)>"
)
_INTERRUPTED = re.compile(r"^\[Request interrupted by user[^\]]*\]$")
#: Codex and other agents inject these as "user" messages; no person typed them
_INJECTED_PREFIXES = (
    "# AGENTS.md instructions",
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
    "Caveat: The messages below were generated",
)


#: memories forgemem itself injected (forgemem.context): never captured again
_FORGEMEM_CONTEXT = re.compile(r"<forgemem-context>.*?(?:</forgemem-context>|\Z)", re.S)


def clean_text(text: str) -> str:
    """Strip `<system-reminder>` fragments, forgemem's own context blocks, surrounding blank space."""
    return _FORGEMEM_CONTEXT.sub("", _SYSTEM_REMINDER.sub("", text)).strip()


def human_text(text: str) -> str | None:
    """What a person typed, from a Claude Code user string; None when nothing was.

    Slash-command wrappers become `/name args`; `!` shell input becomes `!cmd`;
    command output, caveats and interruption markers are not human text.
    """
    text = clean_text(text)
    if not text or _INTERRUPTED.match(text):
        return None
    command = _COMMAND.search(text)
    if command:
        args = _COMMAND_ARGS.search(text)
        name = command.group(1)
        name = name if name.startswith("/") else f"/{name}"
        arguments = args.group(1).strip() if args else ""
        return f"{name} {arguments}".strip()
    bash = _BASH_INPUT.search(text)
    if bash:
        return f"!{bash.group(1).strip()}"
    if _OUTPUT_TAGS.match(text) or text.startswith(_INJECTED_PREFIXES):
        return None
    return text


# ---------------------------------------------------------------- reading lines


def _complete_lines(path: Path, offset: int) -> Iterator[tuple[int, int, bytes]]:
    """(byte start, byte end, line) for each complete line from offset on."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        data = handle.read()
    end = data.rfind(b"\n")
    if end < 0:
        return
    position = offset
    for line in data[: end + 1].splitlines(keepends=True):
        yield position, position + len(line), line
        position += len(line)


class _Builder:
    """Collects events; joins an assistant turn split over several lines."""

    def __init__(self, path: Path, state: dict):
        self.path = str(path)
        self.state = state
        state.setdefault("line", 0)  # lines consumed so far
        state.setdefault("turns", 0)
        self.events: list[Event] = []

    def human(self, text: str, timestamp: str | None, line: int, byte_start: int, byte_end: int) -> None:
        self.flush()
        self._emit(HUMAN, text, timestamp, line, line, byte_start, byte_end)

    def assistant(self, text: str, timestamp: str | None, line: int, byte_start: int, byte_end: int) -> None:
        text = text.strip()
        if not text:
            return
        pending = self.state.get("pending")
        if pending:
            pending["text"] += "\n\n" + text
            pending["line_end"], pending["byte_end"] = line, byte_end
        else:
            self.state["pending"] = {
                "text": text,
                "timestamp": timestamp,
                "line_start": line,
                "line_end": line,
                "byte_start": byte_start,
                "byte_end": byte_end,
            }

    def compaction(self, timestamp: str | None, line: int) -> None:
        self.flush()
        self.events.append(Compaction(self.state.get("session"), timestamp, self.path, line))

    def flush(self) -> None:
        """Emit the pending assistant turn (a human turn or compaction ended it)."""
        pending = self.state.pop("pending", None)
        if pending:
            self._emit(
                ASSISTANT,
                pending["text"].strip(),
                pending["timestamp"],
                pending["line_start"],
                pending["line_end"],
                pending["byte_start"],
                pending["byte_end"],
            )

    def _emit(self, role, text, timestamp, line_start, line_end, byte_start, byte_end) -> None:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate from a broken JSON escape
            text = text.encode("utf-8", "replace").decode("utf-8")
        self.events.append(
            Turn(
                self.state.get("session"),
                self.state["turns"],
                role,
                text,
                timestamp,
                self.path,
                line_start,
                line_end,
                byte_start,
                byte_end,
            )
        )
        self.state["turns"] += 1


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def storable_state(state: dict) -> dict:
    """A parser state as it may be stored: the text it holds between reads (an assistant
    turn still being written, an aider message being collected) with secrets redacted."""
    from forgemem.store.redact import redact

    stored = dict(state)
    pending = stored.get("pending")
    if isinstance(pending, dict) and isinstance(pending.get("text"), str):
        stored["pending"] = {**pending, "text": redact(pending["text"])[0]}
    human = stored.get("human")
    if isinstance(human, dict) and isinstance(human.get("lines"), list):
        stored["human"] = {**human, "lines": [redact(line)[0] if isinstance(line, str) else line
                                              for line in human["lines"]]}
    return stored


def _read_jsonl(path: Path, offset: int, state: dict, handle_line) -> ReadResult:
    builder = _Builder(path, state)
    for byte_start, byte_end, raw in _complete_lines(path, offset):
        state["line"] += 1
        offset = byte_end
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue  # a damaged line is skipped, never fatal
        if isinstance(record, dict):
            handle_line(builder, record, state["line"], byte_start, byte_end)
    return ReadResult(builder.events, offset, state)


# ---------------------------------------------------------------- Claude Code


def _blocks(content) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _claude_line(builder: _Builder, record: dict, line: int, byte_start: int, byte_end: int) -> None:
    state = builder.state
    kind = record.get("type")
    if record.get("sessionId"):
        state["session"] = record["sessionId"]
    timestamp = record.get("timestamp")
    if kind == "system" and record.get("subtype") == "compact_boundary":
        builder.compaction(timestamp, line)
        state["compacted_at"] = line
        return
    if kind == "queue-operation":
        # text typed while the agent was busy; it may never appear as a user line
        content = record.get("content")
        if record.get("operation") == "enqueue" and isinstance(content, str):
            text = human_text(content)
            if text:
                builder.human(text, timestamp, line, byte_start, byte_end)
                queued = state.setdefault("queued", [])
                queued.append(_digest(text))  # a digest: the state never holds the words
                del queued[:-20]
        return
    if kind not in ("user", "assistant"):
        return  # progress, summary, file-history-snapshot, unknown types
    if record.get("isSidechain"):
        return  # a subagent: its "user" is the parent model, its answers go to that model
    message = record.get("message")
    if not isinstance(message, dict):
        return
    if kind == "assistant":
        text = "\n\n".join(
            clean_text(b.get("text", "")) for b in _blocks(message.get("content")) if b.get("type") == "text"
        )
        builder.assistant(text, timestamp, line, byte_start, byte_end)
        return
    if record.get("isCompactSummary"):
        # the model-written summary; a compaction unless its boundary came just before
        if state.get("compacted_at") is None or line - state["compacted_at"] > 3:
            builder.compaction(timestamp, line)
        state["compacted_at"] = None
        return
    if record.get("isMeta") or record.get("toolUseResult") is not None:
        return
    blocks = _blocks(message.get("content"))
    if any(b.get("type") == "tool_result" for b in blocks):
        return
    parts = [human_text(b.get("text", "")) for b in blocks if b.get("type") == "text"]
    text = "\n\n".join(p for p in parts if p)
    if not text:
        return
    queued = state.get("queued") or []
    if _digest(text) in queued:
        queued.remove(_digest(text))  # already counted when it was queued
        return
    builder.human(text, timestamp, line, byte_start, byte_end)


# ---------------------------------------------------------------- Codex


def _codex_line(builder: _Builder, record: dict, line: int, byte_start: int, byte_end: int) -> None:
    state = builder.state
    kind = record.get("type")
    payload = record.get("payload") if isinstance(record.get("payload"), dict) else {}
    timestamp = record.get("timestamp")
    if kind == "session_meta":
        state["session"] = payload.get("id") or state.get("session")
    elif kind == "compacted":
        builder.compaction(timestamp, line)
    elif kind == "event_msg":
        # the event stream holds exactly what the person typed and what the agent said;
        # the response_item copies also hold injected AGENTS.md / environment context
        message = payload.get("message")
        if not isinstance(message, str):
            return
        if payload.get("type") == "user_message":
            text = clean_text(message)
            if text and not text.startswith(_INJECTED_PREFIXES):
                builder.human(text, timestamp, line, byte_start, byte_end)
        elif payload.get("type") == "agent_message":
            builder.assistant(message, timestamp, line, byte_start, byte_end)


# ---------------------------------------------------------------- plain JSONL


def _plain_line(builder: _Builder, record: dict, line: int, byte_start: int, byte_end: int) -> None:
    role = record.get("role")
    content = record.get("content")
    if isinstance(content, list):
        content = "\n\n".join(b.get("text", "") for b in _blocks(content) if b.get("type") in ("text", None))
    if not isinstance(content, str):
        return
    if record.get("session_id"):
        builder.state["session"] = str(record["session_id"])
    timestamp = record.get("timestamp")
    if role == "user":
        text = clean_text(content)
        if text:
            builder.human(text, timestamp, line, byte_start, byte_end)
    elif role == "assistant":
        builder.assistant(clean_text(content), timestamp, line, byte_start, byte_end)
    elif role == "compaction" or record.get("type") == "compaction":
        builder.compaction(timestamp, line)


# ---------------------------------------------------------------- aider

_AIDER_START = re.compile(r"^# aider chat started at (.+?)\s*$")
#: commands whose following unprefixed lines are program output, not the model
_AIDER_RUN = re.compile(r"^/(run|test|lint|git|commit|diff|tokens|ls|help|settings|map)\b|^!")
_AIDER_MODELINE = re.compile(r"^-\*-.*-\*-\s*$")
_AIDER_AUTO = ("# Fix any errors below", "Fix any errors below")


def _read_aider(path: Path, offset: int, state: dict) -> ReadResult:
    """Human lines start with `#### `, tool output with `> `; the rest is the model.

    Consecutive `####` lines are one message; it is emitted when a line of
    another kind follows, so a message is never split between reads.
    """
    builder = _Builder(path, state)
    state.setdefault("human", None)  # the human message being collected
    state.setdefault("mode", "model")  # model | output (after /run, /test …)
    if state.get("session") is None:
        state["session"] = f"aider:{path.name}"
    for byte_start, byte_end, raw in _complete_lines(path, offset):
        state["line"] += 1
        line_no = state["line"]
        offset = byte_end
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if line.startswith("####"):
            content = line[5:] if line.startswith("#### ") else line[4:]
            pending = state["human"]
            if pending is None:
                builder.flush()
                state["human"] = {"lines": [content.rstrip()], "line": line_no, "byte_start": byte_start}
            else:
                pending["lines"].append(content.rstrip())
            state["human"]["line_end"], state["human"]["byte_end"] = line_no, byte_end
            continue
        _aider_end_human(builder, state)
        started = _AIDER_START.match(line)
        if started:
            builder.flush()
            state["session"] = f"aider:{started.group(1)}"
            state["started"] = started.group(1)
            state["mode"] = "output"  # the start-up banner follows
        elif line.startswith(">") or _AIDER_MODELINE.match(line):
            continue
        elif state["mode"] == "model" and line.strip():
            builder.assistant(line, state.get("started"), line_no, byte_start, byte_end)
        elif state["mode"] == "model" and state.get("pending"):
            state["pending"]["text"] += "\n"
    return ReadResult(builder.events, offset, state)


def _aider_end_human(builder: _Builder, state: dict) -> None:
    pending = state["human"]
    if pending is None:
        return
    state["human"] = None
    text = "\n".join(pending["lines"]).strip()
    if not text or text.startswith(_AIDER_AUTO):
        state["mode"] = "model"
        return  # aider's own lint/test feedback, written as if the user typed it
    state["mode"] = "output" if _AIDER_RUN.match(text) else "model"
    builder._emit(  # noqa: SLF001 - one human message spanning several lines
        HUMAN,
        text,
        state.get("started"),
        pending["line"],
        pending["line_end"],
        pending["byte_start"],
        pending["byte_end"],
    )


# ---------------------------------------------------------------- Gemini


def _read_gemini(path: Path, offset: int, state: dict) -> ReadResult:
    """Gemini CLI rewrites one JSON object per session: re-read it, emit new messages.

    `offset` is the file size seen; state["messages"] counts messages consumed.
    """
    builder = _Builder(path, state)
    state.setdefault("messages", 0)
    try:
        data = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError, OSError):
        return ReadResult([], offset, state)  # half-written: try again on the next change
    size = path.stat().st_size
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        return ReadResult([], size, state)
    state["session"] = data.get("sessionId") or state.get("session")
    messages = data["messages"]
    if len(messages) < state["messages"]:
        state["messages"] = 0  # the file was replaced by a shorter session
    for number, message in enumerate(messages[state["messages"] :], start=state["messages"] + 1):
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
        if not isinstance(content, str):
            continue
        kind, timestamp = message.get("type"), message.get("timestamp")
        if kind == "user":
            text = clean_text(content)
            if text:
                builder.human(text, timestamp, number, 0, size)
        elif kind in ("gemini", "model", "assistant"):
            builder.assistant(clean_text(content), timestamp, number, 0, size)
        elif kind == "compression" or message.get("compressed"):
            builder.compaction(timestamp, number)
    state["messages"] = len(messages)
    state["line"] = len(messages)
    return ReadResult(builder.events, size, state)


# ---------------------------------------------------------------- detection and entry point


def detect_format(path: Path) -> str | None:
    """The format of a transcript from its name and first lines; None when unknown."""
    name = path.name
    if name.endswith(".aider.chat.history.md"):
        return "aider"
    try:
        with open(path, "rb") as handle:
            head = handle.read(65536)
    except OSError:
        return None
    text = head.decode("utf-8", errors="replace")
    if name.endswith(".md"):
        return "aider" if re.search(r"^# aider chat started at ", text, re.M) else None
    if name.endswith(".json"):
        return "gemini" if '"messages"' in text and '"sessionId"' in text else None
    for line in text.splitlines()[:20]:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(record, dict):
            continue
        if "payload" in record and record.get("type") in (
            "session_meta", "response_item", "event_msg", "turn_context", "compacted",
        ):
            return "codex"
        if "sessionId" in record or record.get("type") in (
            "summary", "file-history-snapshot", "queue-operation", "user", "assistant", "progress",
        ):
            return "claude-code"
        if "role" in record and "content" in record:
            return "jsonl"
    return None


def read_new(path: Path, fmt: str, offset: int = 0, state: dict | None = None) -> ReadResult:
    """Parse what was appended to `path` since `offset` (state from the previous read)."""
    state = dict(state or {})
    if fmt == "claude-code":
        return _read_jsonl(path, offset, state, _claude_line)
    if fmt == "codex":
        return _read_jsonl(path, offset, state, _codex_line)
    if fmt == "jsonl":
        return _read_jsonl(path, offset, state, _plain_line)
    if fmt == "aider":
        return _read_aider(path, offset, state)
    if fmt == "gemini":
        return _read_gemini(path, offset, state)
    raise ValueError(f"unknown transcript format {fmt!r} (known: {', '.join(FORMATS)})")


def flush(path: Path, fmt: str, state: dict) -> list[Event]:
    """End the turn in progress (the pending answer, aider's unfinished message): a compaction
    or the end of a session says it is complete even though no next turn came."""
    builder = _Builder(path, state)
    if fmt == "aider" and "human" in state:
        _aider_end_human(builder, state)
    builder.flush()
    return builder.events


def read_all(path: Path, fmt: str | None = None) -> list[Event]:
    """Every event of a whole file, the pending assistant turn included."""
    fmt = fmt or detect_format(path)
    if fmt is None:
        raise ValueError(f"cannot tell the format of {path}")
    result = read_new(path, fmt)
    return result.events + flush(path, fmt, result.state)
