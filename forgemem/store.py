"""A scope's folder of memory files, and finding the folders.

A store is just a folder: every `*.md` file below it (sub-folders included,
hidden names skipped) is one memory. Derived state lives in the cache folder
beside it (`<parent>/cache/`), never inside it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .config import CONFIG_NAME
from .errors import Problem
from .model import SUFFIX, Memory

FORGE_DIR = ".forge"
MEMORY_DIR = "memory"
CACHE_DIR = "cache"
GITIGNORE_TEXT = "# forgemem: derived state, rebuilt from the memory files\ncache/\n"


@dataclass(frozen=True)
class Store:
    scope: str
    memory_dir: Path

    @property
    def forge_dir(self) -> Path:
        """The folder that holds `memory/`, `cache/` and `config.yaml`."""
        return self.memory_dir.parent

    @property
    def cache_dir(self) -> Path:
        return self.forge_dir / CACHE_DIR

    @property
    def config_path(self) -> Path:
        return self.forge_dir / CONFIG_NAME

    def exists(self) -> bool:
        return self.memory_dir.is_dir()

    def files(self) -> list[Path]:
        """Every memory file in the store, sorted, hidden names skipped."""
        return [self.memory_dir / rel for rel in sorted(self.stat_files())]

    def stat_files(self) -> dict[str, tuple[int, int]]:
        """Every memory file's path relative to the store -> (mtime_ns, size).

        Plain strings and `os.scandir` throughout: this runs before every recall.
        """
        found: dict[str, tuple[int, int]] = {}
        if not self.exists():
            return found
        stack = [("", str(self.memory_dir))]
        while stack:
            prefix, folder = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                name = entry.name
                if name[0] == ".":
                    continue
                if name.endswith(SUFFIX):
                    try:
                        st = entry.stat()
                    except OSError:
                        continue
                    if stat.S_ISREG(st.st_mode):
                        found[prefix + name] = (st.st_mtime_ns, st.st_size)
                        continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append((f"{prefix}{name}/", entry.path))
        return found

    def read(self, path: Path, data: bytes | None = None) -> tuple[Memory | None, list[Problem]]:
        """Parse one file of this store: the memory (if it parses) and its problems."""
        from .memfile import MemoryFileError, parse_bytes, read_file

        try:
            memory = read_file(path) if data is None else parse_bytes(data, path)
        except MemoryFileError as exc:
            return None, exc.problems
        problems = []
        if memory.scope != self.scope:
            problems.append(
                Problem(
                    path,
                    f"scope is {memory.scope!r} but the file is in the {self.scope} store",
                    None,
                    memory.id,
                )
            )
        return memory, problems

    def load(self) -> tuple[list[Memory], list[Problem]]:
        """Parse every file; a broken file becomes problems, the rest still load."""
        memories: list[Memory] = []
        problems: list[Problem] = []
        for path in self.files():
            memory, found = self.read(path)
            problems.extend(found)
            if memory is not None:
                memories.append(memory)
        return memories, problems


def user_memory_dir() -> Path:
    override = os.environ.get("FORGEMEM_USER_DIR")
    if override:
        return Path(override).expanduser()
    return Path.home() / FORGE_DIR / MEMORY_DIR


def find_repo_memory_dir(start: Path, exclude: Path | None = None) -> Path | None:
    """Walk up from `start` to the git root (or filesystem root) for `.forge/memory/`."""
    start = start.resolve()
    excluded = exclude.resolve() if exclude else None
    for folder in (start, *start.parents):
        candidate = folder / FORGE_DIR / MEMORY_DIR
        if candidate.is_dir() and candidate.resolve() != excluded:
            return candidate
        if (folder / ".git").exists():
            return None
    return None


def find_repo_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` that holds `.git`."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None
