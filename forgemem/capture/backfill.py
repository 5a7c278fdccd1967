"""Backfill: capture a repository's past agent sessions, oldest first, and resume where it stopped.

Where each agent keeps a project's sessions (`discover`):

- Claude Code: `~/.claude/projects/<the repository's path, every character but
  letters and digits as ->/` (subagent files included);
- Codex: `$CODEX_HOME/sessions/**/rollout-*.jsonl` (and `archived_sessions/`)
  whose `session_meta` names a working folder inside the repository;
- Gemini CLI: `~/.gemini/tmp/<project>/chats/*.json`, where `<project>` is the
  SHA-256 of the project's absolute path (older releases), or the short name
  `~/.gemini/projects.json` maps the path to (newer ones, which also leave a
  `.project_root` file naming the path in that folder);
- aider: `.aider.chat.history.md` at the repository root.

Each transcript is captured with the observer (`forgemem.capture.observer`):
read to its end as a finished session (`final`), then its passes run, one
transcript after the other, oldest (by modification time) first.

Resuming needs nothing of its own: the observer's state already keeps, per
transcript, how far it was read (committed every chunk) and every pass until
it has run (a pass left running by a killed process is run again, and a memory
it wrote before the kill is recognised as captured before). A transcript is
done when its state says it was read to its current end as a finished session
and none of its passes waits; a run that finds it so skips it, and one that
finds it half done carries on from there. A transcript that grew since (a
session resumed later) is read from where it was left.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from forgemem.capture.observer import Observer, claude_code_folder

if TYPE_CHECKING:
    from forgemem.capture.capturer import PassResult
    from forgemem.workspace import Workspace

SUFFIXES = (".jsonl", ".json", ".md")
META_LINES = 5  # lines of a Codex rollout searched for its session_meta
META_LINE_BYTES = 8 * 1024 * 1024  # a session_meta line longer than this is not read


@dataclass(frozen=True)
class Found:
    """A transcript to capture, the agent that wrote it (None: named by the user, format detected), and the
    folder it was found in (its name is shown relative to it)."""

    path: Path
    agent: str | None = None
    base: Path | None = None

    @property
    def name(self) -> str:
        if self.base is not None and self.base in self.path.parents:
            return self.path.relative_to(self.base).as_posix()
        return self.path.name


# ------------------------------------------------------------------ where agents keep sessions


def _files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*") if p.suffix in SUFFIXES and p.is_file())


def _inside(path: str, root: Path) -> bool:
    """Is `path` (a working folder an agent recorded) the repository or a folder in it?"""
    candidates = {Path(path)}
    try:
        candidates.add(Path(path).resolve())
    except (OSError, RuntimeError):
        pass
    roots = {root, root.resolve()}
    return any(c == r or r in c.parents for c in candidates for r in roots)


def codex_cwd(path: Path) -> str | None:
    """The working folder a Codex rollout's `session_meta` records (None when it records none)."""
    try:
        with open(path, "rb") as handle:
            for _ in range(META_LINES):
                line = handle.readline(META_LINE_BYTES)
                if not line:
                    return None
                try:
                    record = json.loads(line)
                except (ValueError, RecursionError):
                    continue
                if isinstance(record, dict) and record.get("type") == "session_meta":
                    payload = record.get("payload")
                    cwd = payload.get("cwd") if isinstance(payload, dict) else None
                    return cwd if isinstance(cwd, str) and cwd else None
    except OSError:
        return None
    return None


def codex_home(home: Path) -> Path:
    override = os.environ.get("CODEX_HOME")
    return Path(override) if override else home / ".codex"


def codex_sessions(root: Path, home: Path) -> list[Path]:
    """This repository's Codex rollouts: those whose session_meta `cwd` is inside it."""
    base = codex_home(home)
    found = []
    for folder in (base / "sessions", base / "archived_sessions"):
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("rollout-*.jsonl")):
            cwd = codex_cwd(path)
            if cwd is not None and _inside(cwd, root):
                found.append(path)
    return found


def gemini_folders(root: Path, home: Path) -> list[Path]:
    """Gemini CLI's folders for this project under `~/.gemini/tmp/`: by path hash, by projects.json, by .project_root."""
    tmp = home / ".gemini" / "tmp"
    if not tmp.is_dir():
        return []
    paths = {str(root), str(root.resolve())}
    names = {hashlib.sha256(p.encode()).hexdigest() for p in paths}
    try:
        registry = json.loads((home / ".gemini" / "projects.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        registry = None
    projects = registry.get("projects") if isinstance(registry, dict) else None
    if isinstance(projects, dict):
        names.update(v for k, v in projects.items() if k in paths and isinstance(v, str) and "/" not in v and v)
    folders = [tmp / name for name in sorted(names) if name not in (".", "..") and (tmp / name).is_dir()]
    for marker in sorted(tmp.glob("*/.project_root")):
        try:
            named = marker.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if named in paths and marker.parent not in folders:
            folders.append(marker.parent)
    return folders


def discover(root: Path, home: Path | None = None) -> list[Found]:
    """Every transcript of this repository's past sessions the agents kept (not yet filtered by format)."""
    home = home or Path.home()
    root = root.absolute()
    claude = claude_code_folder(root, home)
    found = [Found(p, "claude-code", claude) for p in _files(claude)]
    found += [Found(p, "codex", codex_home(home)) for p in codex_sessions(root, home)]
    for folder in gemini_folders(root, home):
        found += [Found(p, "gemini", folder) for p in _files(folder)]
    aider = root / ".aider.chat.history.md"
    if aider.is_file():
        found.append(Found(aider, "aider", root))
    unique = {f.path: f for f in found}
    return list(unique.values())


def under(path: Path) -> list[Found]:
    """The transcripts named by PATH: the file itself, or every candidate file below the folder."""
    path = path.expanduser().absolute()
    return [Found(p, base=path) for p in _files(path)] if path.is_dir() else [Found(path, base=path.parent)]


def oldest_first(found: list[Found]) -> list[Found]:
    def key(f: Found) -> tuple[int, str]:
        try:
            return os.stat(f.path).st_mtime_ns, str(f.path)
        except OSError:
            return 0, str(f.path)

    return sorted(found, key=key)


# ------------------------------------------------------------------ capturing


@dataclass
class TranscriptResult:
    path: str
    agent: str | None
    format: str | None
    name: str = ""  # the path as shown: within the folder the agent keeps sessions in
    status: str = "captured"  # captured | done before | failed | busy (left for another process, or a later run)
    turns: int = 0
    passes: int = 0
    written: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class Summary:
    """What one backfill run did."""

    transcripts: list[TranscriptResult] = field(default_factory=list)
    written: list[dict] = field(default_factory=list)  # id, scope, category, supersedes, related, status
    skipped: int = 0  # proposals not written (duplicates, captured before, ...)
    failed_passes: int = 0
    proposed: bool = False  # capture_review: what was written waits for `forgemem review`
    notices: list[str] = field(default_factory=list)
    ignored: int = 0  # files where transcripts are kept that are none of a known format (Gemini's logs.json)

    def count(self, status: str) -> int:
        return sum(1 for t in self.transcripts if t.status == status)

    @property
    def supersessions(self) -> int:
        return sum(1 for w in self.written if w["supersedes"])

    def by_scope_and_category(self) -> dict[str, dict[str, int]]:
        counts: dict[str, dict[str, int]] = {}
        for w in self.written:
            counts.setdefault(w["scope"], {}).setdefault(w["category"], 0)
            counts[w["scope"]][w["category"]] += 1
        return counts

    def to_dict(self) -> dict:
        return {
            "found": len(self.transcripts),
            "captured": self.count("captured"),
            "done_before": self.count("done before"),
            "failed": self.count("failed"),
            "busy": self.count("busy"),
            "ignored": self.ignored,
            "written": self.written,
            "by_scope_and_category": self.by_scope_and_category(),
            "supersessions": self.supersessions,
            "skipped": self.skipped,
            "failed_passes": self.failed_passes,
            "proposed": self.proposed,
            "transcripts": [t.to_dict() for t in self.transcripts],
            "notices": self.notices,
        }


#: (transcript number from 1, how many, its result so far, the summary so far, whether the transcript is
#: finished): called after each pass and after each transcript
Progress = Callable[[int, int, TranscriptResult, Summary, bool], None]


def is_done(observer: Observer, path: Path) -> bool:
    """Read to its current end as a finished session, and no pass of it waiting or running."""
    state = observer.state
    row = state.transcript(str(path))
    if row is None:
        return False
    try:
        stat = os.stat(path)
    except OSError:
        return False
    if (row["size"], row["mtime_ns"]) != (stat.st_size, stat.st_mtime_ns) or row["humans"] != row["humans_at_pass"]:
        return False
    waiting = state.connection.execute(
        "SELECT COUNT(*) FROM passes WHERE path = ? AND status IN ('pending', 'running')", (str(path),)).fetchone()[0]
    return waiting == 0


def places(root: Path, home: Path | None = None) -> list[str]:
    """Where `discover` looks, for a message when it finds nothing."""
    home = home or Path.home()
    return [str(claude_code_folder(root, home)), str(codex_home(home) / "sessions"),
            str(home / ".gemini" / "tmp" / "<project>" / "chats"), str(root / ".aider.chat.history.md")]


def run(workspace: Workspace, root: Path, path: Path | None = None, fmt: str | None = None,
        cadence: int | None = None, on_progress: Progress | None = None,
        on_notice: Callable[[str], None] | None = None) -> Summary:
    """`forgemem observe --backfill [PATH]`: this repository's past sessions (or PATH's transcripts), captured."""
    from forgemem.capture.capturer import Capturer
    from forgemem.errors import UsageError

    if workspace.pending_repo is not None:  # its state must live where every later run finds it
        raise UsageError("this repository has no memory store yet: run `forgemem init` first "
                         "(the backfill writes its memories there)")
    found = under(path) if path is not None else discover(root)
    capturer = Capturer(workspace) if found else None  # a bad classifier setting fails here, not in every pass
    observer = Observer(workspace, fmt=fmt, cadence=cadence, capturer=capturer, on_notice=on_notice)
    return backfill(observer, found, on_progress)


def backfill(observer: Observer, transcripts: list[Found], on_progress: Progress | None = None) -> Summary:
    """Capture each transcript (oldest first) as a finished session; skip those done before."""
    summary = Summary(proposed=observer.workspace.config.capture_review)
    observer.state.reclaim_dead()  # a pass a killed run left "running" is run again
    formats = {f.path: observer.format_of(f.path) for f in transcripts}
    ordered = oldest_first([f for f in transcripts if formats[f.path] is not None])
    summary.ignored = len(transcripts) - len(ordered)
    for number, found in enumerate(ordered, start=1):
        result = TranscriptResult(str(found.path), found.agent, formats[found.path], found.name)
        summary.transcripts.append(result)
        if is_done(observer, found.path):
            result.status = "done before"
            result.failed = observer.state.connection.execute(
                "SELECT COUNT(*) FROM passes WHERE path = ? AND status = 'failed'", (str(found.path),)).fetchone()[0]
        else:
            def after_pass(number: int = number, result: TranscriptResult = result) -> None:
                if on_progress is not None:
                    on_progress(number, len(ordered), result, summary, False)

            _capture(observer, found.path, result, summary, after_pass)
        if on_progress is not None:
            on_progress(number, len(ordered), result, summary, True)
    summary.notices = list(observer.notices)
    return summary


def _capture(observer: Observer, path: Path, result: TranscriptResult, summary: Summary,
             after_pass: Callable[[], None]) -> None:
    """Read what is left of one transcript as a finished session, then run its passes in order."""
    said = len(observer.notices)
    result.turns = observer.poll_safely(path, final=True)
    result.errors += [n for n in observer.notices[said:] if "reading failed" in n]
    state = observer.state
    while True:
        rows = state.connection.execute(
            "SELECT * FROM passes WHERE path = ? AND status = 'pending' ORDER BY id", (str(path),)).fetchall()
        if not rows:
            break
        ran = False
        for row in rows:
            if not state.claim(row["id"]):
                continue  # another process runs it (a hook's capture): it is theirs to finish
            ran = True
            passed = observer.run_pass(row)
            result.passes += 1
            _count(state, row["id"], passed, result, summary)
            after_pass()
        if not ran:
            break
    if result.failed or result.errors:
        result.status = "failed"
    elif not is_done(observer, path):  # another process holds its passes, or held the state too long
        result.status = "busy"


def _count(state, pass_id: int, passed: PassResult | None, result: TranscriptResult, summary: Summary) -> None:
    if passed is None:
        row = state.connection.execute("SELECT error FROM passes WHERE id = ?", (pass_id,)).fetchone()
        result.failed += 1
        summary.failed_passes += 1
        result.errors.append(f"pass {pass_id}: {row['error'] if row else 'failed'}")
        return
    result.written += len(passed.written)
    summary.skipped += len(passed.skipped)
    for memory in passed.written:
        summary.written.append({
            "id": memory.id, "scope": memory.scope, "category": memory.category,
            "supersedes": list(memory.supersedes),
            "related": [{"id": r.id, "relationship": r.relationship} for r in memory.related],
            "status": memory.status,
        })
