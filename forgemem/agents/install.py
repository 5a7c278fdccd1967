"""What every `forgemem install|uninstall AGENT` shares: the plan of file changes, how forgemem is started.

Each agent's own settings are in its module (`claude_code`, `codex`, `git_diff`;
`registry` lists them). Install is idempotent, `--dry-run` shows the diff, and
uninstall removes exactly what install added: a file is put back byte for byte when
nothing else changed in it since, files and folders install created are removed.
Commands written into an agent's settings name forgemem's console script by its
absolute path, quoted for the host that runs them.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from forgemem.config import forge_home, user_cache_dir


def forgemem_argv() -> list[str]:
    """How agents and git should start forgemem: the console script by its absolute path
    (never a name looked up on PATH from the project folder), else `python -P -m forgemem`."""
    from forgemem.spawn import command_argv

    return command_argv()


def forgemem_command() -> str:
    """`forgemem_argv` as one POSIX shell command line (every word quoted as needed)."""
    return shlex.join(forgemem_argv())


def toml_string(value: str) -> str:
    """A TOML basic string: any text (non-ASCII kept as is; quotes, backslashes and controls escaped)."""
    escaped = []
    for ch in value:
        if ch in ('"', "\\"):
            escaped.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            escaped.append({"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}.get(ch, f"\\u{ord(ch):04X}"))
        else:
            escaped.append(ch)
    return '"' + "".join(escaped) + '"'


def toml_array(values: list[str]) -> str:
    return "[" + ", ".join(toml_string(v) for v in values) + "]"


@dataclass
class Change:
    """One file install/uninstall writes: its text before and after (None: absent)."""

    path: Path
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                (self.before or "").splitlines(keepends=True),
                (self.after or "").splitlines(keepends=True),
                fromfile=str(self.path) if self.before is not None else "/dev/null",
                tofile=str(self.path) if self.after is not None else "/dev/null",
            )
        )


@dataclass
class Plan:
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    record: dict | None = None  # what uninstall needs, kept in ~/.forge/install/
    record_path: Path | None = None
    remove_record: bool = False
    remove_dirs: list[Path] = field(default_factory=list)
    commands: list[tuple[Path, list[str]]] = field(default_factory=list)  # (cwd, argv) run after the files

    def apply(self) -> None:
        from forgemem.permissions import atomic_write_text

        for change in self.changes:
            if not change.changed:
                continue
            if change.after is None:
                change.path.unlink(missing_ok=True)
            else:
                change.path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_text(change.path, change.after)
        for cwd, argv in self.commands:
            import subprocess

            subprocess.run(argv, cwd=cwd, check=False, capture_output=True)
        for folder in self.remove_dirs:
            try:
                folder.rmdir()  # only when empty
            except OSError:
                pass
        if self.record_path is not None:
            if self.remove_record:
                self.record_path.unlink(missing_ok=True)
                _legacy_record_path(self.record_path).unlink(missing_ok=True)
            elif self.record is not None:
                from forgemem.permissions import private_dir

                private_dir(self.record_path.parent)
                atomic_write_text(self.record_path, json.dumps(self.record, indent=2) + "\n", private=True)
                _legacy_record_path(self.record_path).unlink(missing_ok=True)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _record_path(kind: str, target: Path) -> Path:
    """Where install records what it added to `target`: `~/.forge/install/` (private). Not the
    cache: deleting the cache must lose only time, and this record is what lets uninstall
    take out exactly what install put in."""
    digest = hashlib.sha256(str(target.absolute()).encode()).hexdigest()[:16]
    return forge_home() / "install" / f"{kind}-{digest}.json"


def _legacy_record_path(path: Path) -> Path:
    """Where earlier forgemem kept the same record (in the cache): read, then moved."""
    return user_cache_dir() / "install" / path.name


def _load_record(path: Path) -> dict | None:
    for candidate in (path, _legacy_record_path(path)):
        try:
            data = json.loads(candidate.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(data, dict):
            return data
    return None

