"""What every transcript format shares: turns, compactions, a read's result, the text rules, the reader of
complete lines and the builder that turns messages into turns."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from forgemem.store.model import without_controls

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
    skipped: list[str] = field(default_factory=list)  # records passed over, and why (no text of theirs)
    more: bool = False  # reading stopped at its limit: there may be more to read


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

MAX_LINE_BYTES = 16 * 1024 * 1024  # a longer line (a pasted image, a dumped file) is skipped, never held whole
READ_BLOCK = 1024 * 1024  # the file is read in blocks of this size: memory stays flat on any file
MAX_TURN_TEXT = 100_000  # a turn's text stops growing here (the observer keeps far less of it)


class Lines:
    """The complete lines of a file from `offset` on, read in blocks: (byte start, byte end, line) each,
    the line None when it is longer than MAX_LINE_BYTES (skipped without being held in memory).

    A last line without its newline waits for it (`offset` stays at its start), except one already
    too long: its bytes are passed over now (`state["skip_from"]` remembers where it began), so a
    huge line being written is never read twice. With `limit`, reading stops at the first line end
    at or past `offset + limit` (`more` then says there may be more).
    """

    def __init__(self, path: Path, offset: int, state: dict, limit: int | None = None):
        self.path, self.start, self.state, self.limit = path, offset, state, limit
        self.offset = offset  # where the next read starts
        self.more = False

    def __iter__(self) -> Iterator[tuple[int, int, bytes | None]]:
        skip_from = self.state.get("skip_from")
        skipping = isinstance(skip_from, int) and skip_from <= self.start
        line_start: int = skip_from if isinstance(skip_from, int) and skipping else self.start
        buffer = bytearray()
        position = self.start  # of the block read next
        with open(self.path, "rb") as handle:
            handle.seek(self.start)
            while True:
                block = handle.read(READ_BLOCK)
                if not block:
                    break
                at = 0
                while True:
                    newline = block.find(b"\n", at)
                    if newline < 0:
                        if not skipping:
                            buffer += block[at:]
                            if len(buffer) > MAX_LINE_BYTES:
                                skipping, buffer = True, bytearray()
                        break
                    end = position + newline + 1
                    if skipping:
                        line: bytes | None = None
                        skipping = False
                        self.state.pop("skip_from", None)
                    elif buffer:
                        buffer += block[at : newline + 1]
                        line = bytes(buffer) if len(buffer) <= MAX_LINE_BYTES else None
                        buffer = bytearray()
                    else:
                        line = block[at : newline + 1] if newline + 1 - at <= MAX_LINE_BYTES else None
                    yield line_start, end, line
                    self.offset = line_start = end
                    at = newline + 1
                    if self.limit is not None and end - self.start >= self.limit:
                        self.more = True
                        return
                position += len(block)
        if skipping:  # a line too long to keep, not ended yet: pass over what there is of it
            self.state["skip_from"] = line_start
            self.offset = position


def complete_lines(path: Path, offset: int) -> Iterator[tuple[int, int, bytes]]:
    """(byte start, byte end, line) for each complete line from offset on (lines too long are left out)."""
    for start, end, line in Lines(path, offset, {}):
        if line is not None:
            yield start, end, line


def text_of(value) -> str:
    """A text field as a string: anything else (null, a number, a list) is no text."""
    return value if isinstance(value, str) else ""


#: the note for a record read without the bytes of it that are not UTF-8 (read, so not counted as skipped)
NOT_UTF8 = "not UTF-8: read without the bytes that are not"


def decode_record(raw: bytes) -> tuple[object, str | None]:
    """A JSONL line as a value, and what was wrong with it (None: nothing). Never raises: bytes that are
    not UTF-8 are dropped and the rest is read (`NOT_UTF8`); a line that is not JSON, nests deeper than the
    parser goes or holds a number too long to convert is (None, why)."""
    problem = None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:  # what is not UTF-8 is dropped, so no "��" reaches a memory; the rest is read
        text, problem = raw.decode("utf-8", "replace").replace("\ufffd", ""), NOT_UTF8
    if not text.strip():
        return None, None
    try:
        return json.loads(text), problem
    except RecursionError:
        return None, "nested too deeply"
    except ValueError as exc:  # JSONDecodeError, or an integer past Python's digit limit
        return None, "not JSON" if isinstance(exc, json.JSONDecodeError) else "a number too long"


class Builder:
    """Collects events; joins an assistant turn split over several lines."""

    def __init__(self, path: Path, state: dict):
        self.path = str(path)
        self.state = state
        state.setdefault("line", 0)  # lines consumed so far
        state.setdefault("turns", 0)
        self.events: list[Event] = []

    def human(self, text: str, timestamp: str | None, line: int, byte_start: int, byte_end: int) -> None:
        text = without_controls(text).strip() if isinstance(text, str) else ""
        if not text:
            return
        self.flush()
        self._emit(HUMAN, text[:MAX_TURN_TEXT], timestamp, line, line, byte_start, byte_end)

    def assistant(self, text: str, timestamp: str | None, line: int, byte_start: int, byte_end: int) -> None:
        text = without_controls(text).strip() if isinstance(text, str) else ""
        if not text:
            return
        pending = self.state.get("pending")
        if isinstance(pending, dict) and isinstance(pending.get("text"), str):
            if len(pending["text"]) < MAX_TURN_TEXT:  # past it the turn keeps its start
                pending["text"] = (pending["text"] + "\n\n" + text)[:MAX_TURN_TEXT]
            pending["line_end"], pending["byte_end"] = line, byte_end
        else:
            self.state["pending"] = {
                "text": text[:MAX_TURN_TEXT],
                "timestamp": _text_or_none(timestamp),
                "line_start": line,
                "line_end": line,
                "byte_start": byte_start,
                "byte_end": byte_end,
            }

    def compaction(self, timestamp: str | None, line: int) -> None:
        self.flush()
        self.events.append(Compaction(self.session, _text_or_none(timestamp), self.path, line))

    @property
    def session(self) -> str | None:
        session = self.state.get("session")
        return session if isinstance(session, str) else None

    def flush(self) -> None:
        """Emit the pending assistant turn (a human turn or compaction ended it)."""
        pending = self.state.pop("pending", None)
        if isinstance(pending, dict) and isinstance(pending.get("text"), str):
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
                self.session,
                self.state["turns"],
                role,
                text,
                _text_or_none(timestamp),
                self.path,
                line_start,
                line_end,
                byte_start,
                byte_end,
            )
        )
        self.state["turns"] += 1


def _text_or_none(value) -> str | None:
    """A timestamp or session id as a turn keeps it: a string, else nothing."""
    return value if isinstance(value, str) else None


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def storable_state(state: dict, keep_chars: int | None = None) -> dict:
    """A parser state as it may be stored: the text it holds between reads (an assistant
    turn still being written, an aider message being collected) with secrets redacted, and
    cut to its first `keep_chars` characters when the reader of the turns keeps no more."""
    from forgemem.store.redact import redact

    def kept(text: str) -> str:
        return redact(text if keep_chars is None else text[:keep_chars])[0]

    stored = dict(state)
    pending = stored.get("pending")
    if isinstance(pending, dict) and isinstance(pending.get("text"), str):
        stored["pending"] = {**pending, "text": kept(pending["text"])}
    human = stored.get("human")
    if isinstance(human, dict) and isinstance(human.get("lines"), list):
        stored["human"] = {**human, "lines": [kept(line) if isinstance(line, str) else line
                                              for line in human["lines"]]}
    return stored


def skip_note(line: int, byte_start: int, byte_end: int, why: str) -> str:
    return f"line {line} (bytes {byte_start}-{byte_end}): {why}"


def read_jsonl(path: Path, offset: int, state: dict, handle_line, limit: int | None = None) -> ReadResult:
    """Each complete JSON object line from `offset` on, through `handle_line`. A bad record (not JSON,
    too deep, too long, or one the handler cannot take) is skipped and named in `skipped`; never fatal."""
    builder = Builder(path, state)
    lines = Lines(path, offset, state, limit)
    skipped: list[str] = []
    for byte_start, byte_end, raw in lines:
        state["line"] += 1
        if raw is None:
            skipped.append(skip_note(state["line"], byte_start, byte_end, f"longer than {MAX_LINE_BYTES} bytes"))
            continue
        record, problem = decode_record(raw)
        if problem is not None:
            skipped.append(skip_note(state["line"], byte_start, byte_end, problem))
        if not isinstance(record, dict):
            continue
        try:
            handle_line(builder, record, state["line"], byte_start, byte_end)
        except Exception as exc:  # noqa: BLE001 - one odd record never stops a transcript
            skipped.append(skip_note(state["line"], byte_start, byte_end, f"cannot be read ({type(exc).__name__})"))
    return ReadResult(builder.events, lines.offset, state, skipped, lines.more)


def blocks(content) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []
