"""What the prompt hook already put in each agent session's context, so it is not injected again.

One small JSON file per agent session in the user cache (`~/.forge/cache/sessions/`, private,
named by a hash of the session id, never in the repository): the memories injected (id ->
fingerprint of what was shown, `forgemem.recall.context.fingerprint`) and how far the transcript
was read. A memory is injected again when it changed (another fingerprint), after a compaction
(PreCompact or SessionStart resets the record; a `compact_boundary` line appearing in the
transcript does too, in case a compaction ran without the hook), or in another session (another
id, another file). Files not touched for a week are removed; a record keeps at most MAX_ENTRIES.

Every failure here is silent: a lost or unreadable record only means a memory is injected again.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from forgemem.config import user_cache_dir

FOLDER = "sessions"
KEEP_SECONDS = 7 * 86400
MAX_ENTRIES = 2000
COMPACTION_MARK = b'"compact_boundary"'  # Claude Code's transcript line for a compaction
SCAN_LIMIT = 64 * 1024 * 1024  # transcript bytes read per prompt at most (the rest is skipped)


def folder() -> Path:
    return user_cache_dir() / FOLDER


def record_path(session_id: str) -> Path:
    return folder() / (hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()[:32] + ".json")


@dataclass
class SessionRecord:
    path: Path
    injected: dict[str, str] = field(default_factory=dict)  # memory id -> fingerprint
    transcript_offset: int = 0
    compacted: bool = False  # a compaction was seen in the transcript since the last prompt

    def add(self, hashes: dict[str, str]) -> None:
        self.injected.update(hashes)
        while len(self.injected) > MAX_ENTRIES:  # the oldest entries go first
            self.injected.pop(next(iter(self.injected)))

    def save(self) -> None:
        from forgemem.permissions import atomic_write_text, private_dir

        data = {"injected": self.injected, "transcript_offset": self.transcript_offset, "saved": time.time()}
        try:
            fresh = not self.path.exists()
            private_dir(self.path.parent)
            atomic_write_text(self.path, json.dumps(data), private=True)
            if fresh:
                prune()
        except OSError:
            pass


def load(session_id: object, transcript: object = None) -> SessionRecord | None:
    """The record of `session_id` (None when the event names no usable session); a compaction
    found in `transcript` since the last look empties it."""
    if not isinstance(session_id, str) or not session_id or len(session_id) > 200:
        return None
    path = record_path(session_id)
    record = SessionRecord(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        injected = data.get("injected") if isinstance(data, dict) else None
        if isinstance(injected, dict):
            record.injected = {k: v for k, v in injected.items() if isinstance(k, str) and isinstance(v, str)}
        offset = data.get("transcript_offset")
        record.transcript_offset = offset if isinstance(offset, int) and offset >= 0 else 0
    except (OSError, ValueError, AttributeError):
        pass
    if isinstance(transcript, str) and transcript:
        _scan(record, Path(transcript))
    return record


def _scan(record: SessionRecord, transcript: Path) -> None:
    """Read the transcript from where the last prompt left off; a compaction there resets the record."""
    try:
        size = transcript.stat().st_size
        start = record.transcript_offset
        if size < start:  # rewritten or replaced: whatever was injected is not known to be there
            record.injected, start = {}, 0
            record.compacted = True
        if size > start:
            with transcript.open("rb") as handle:
                handle.seek(max(start, size - SCAN_LIMIT))
                if COMPACTION_MARK in handle.read(SCAN_LIMIT):
                    record.injected = {}
                    record.compacted = True
        record.transcript_offset = size
    except OSError:
        pass


def reset(session_id: object) -> None:
    """Forget what was injected in `session_id` (its context was compacted or restarted)."""
    if isinstance(session_id, str) and session_id and len(session_id) <= 200:
        try:
            record_path(session_id).unlink(missing_ok=True)
        except OSError:
            pass


def prune(now: float | None = None) -> int:
    """Remove the records not touched for KEEP_SECONDS; how many went."""
    cutoff = (time.time() if now is None else now) - KEEP_SECONDS
    gone = 0
    try:
        entries = list(os.scandir(folder()))
    except OSError:
        return 0
    for entry in entries:
        try:
            if entry.name.endswith(".json") and entry.stat().st_mtime < cutoff:
                os.unlink(entry.path)
                gone += 1
        except OSError:
            pass
    return gone
