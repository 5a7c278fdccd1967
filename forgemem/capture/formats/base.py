"""What every transcript format shares: turns, compactions, a read's result, the text rules, the reader of
complete lines and the builder that turns messages into turns."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

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
INJECTED_PREFIXES = (
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
    if _OUTPUT_TAGS.match(text) or text.startswith(INJECTED_PREFIXES):
        return None
    return text


# ---------------------------------------------------------------- reading lines

def complete_lines(path: Path, offset: int) -> Iterator[tuple[int, int, bytes]]:
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


class Builder:
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


def digest(text: str) -> str:
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


def read_jsonl(path: Path, offset: int, state: dict, handle_line) -> ReadResult:
    builder = Builder(path, state)
    for byte_start, byte_end, raw in complete_lines(path, offset):
        state["line"] += 1
        offset = byte_end
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue  # a damaged line is skipped, never fatal
        if isinstance(record, dict):
            handle_line(builder, record, state["line"], byte_start, byte_end)
    return ReadResult(builder.events, offset, state)


def blocks(content) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []
