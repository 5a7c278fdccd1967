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

from forgemem.config import (
    CACHE_DIR,
    CONFIG_NAME,
    FORGE_DIR,
    MEMORY_DIR,
    default_config_text,
    forge_home,
    user_dir_override,
)
from forgemem.errors import Problem
from forgemem.store.model import MAX_FILE_BYTES, SUFFIX, Memory

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

        Plain strings and `os.scandir` throughout: this runs before every recall. A `*.md` entry that
        is no regular file (a folder, a link that leads nowhere, a FIFO) is listed too, with the
        link's or folder's own stat: reading it then says what is wrong, so it is never silently left
        out. (A folder named `*.md` is still walked into.)
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
                    except OSError:  # a link to nowhere, a loop: the link itself is the entry
                        try:
                            st = entry.stat(follow_symlinks=False)
                        except OSError:
                            continue  # gone since the folder was listed
                    found[prefix + name] = (st.st_mtime_ns, st.st_size)
                    if stat.S_ISREG(st.st_mode):
                        continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append((f"{prefix}{name}/", entry.path))
        return found

    def stat_paths(self, names: list[str]) -> dict[str, tuple[int, int]]:
        """As `stat_files`, for the named paths only (those that exist and are memory files)."""
        found: dict[str, tuple[int, int]] = {}
        for name in names:
            if not name.endswith(SUFFIX) or any(part.startswith(".") for part in name.split("/")):
                continue
            path = self.memory_dir / name
            try:
                st = path.stat()
            except OSError:
                try:
                    st = path.lstat()
                except OSError:
                    continue
            found[name] = (st.st_mtime_ns, st.st_size)
        return found

    def read(self, path: Path, data: bytes | None = None) -> tuple[Memory | None, list[Problem]]:
        """Parse one file of this store: the memory (if it parses) and its problems."""
        from forgemem.store.memfile import MemoryFileError, parse_bytes, read_file

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
        for read in self.read_many(sorted(self.stat_files())):
            if read is None:
                continue
            problems.extend(read.problems)
            if read.memory is not None:
                memories.append(read.memory)
        return memories, problems

    def read_many(self, names: list[str]) -> list[FileRead | None]:
        """Read, hash and parse files (paths relative to the store), in order.

        Parsing is CPU-bound (PyYAML), so a large batch is split over worker
        processes, one per core; None stands for a file that could not be read.
        """
        workers = min(os.cpu_count() or 1, 8)
        if len(names) < PARALLEL_FROM or workers < 2:
            return _read_files(self.scope, str(self.memory_dir), names)
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        size = -(-len(names) // workers)
        chunks = [names[i : i + size] for i in range(0, len(names), size)]
        try:
            # spawn, not fork: the caller may be a threaded server
            context = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(len(chunks), mp_context=context) as pool:
                parts = pool.map(_read_files, [self.scope] * len(chunks), [str(self.memory_dir)] * len(chunks), chunks)
                return [read for part in parts for read in part]
        except (OSError, RuntimeError, ImportError):  # no processes here: do it in this one
            return _read_files(self.scope, str(self.memory_dir), names)


#: Below this many files, parsing in this process beats starting workers.
PARALLEL_FROM = 2000


@dataclass(frozen=True)
class FileRead:
    name: str  # relative to the store
    mtime_ns: int
    size: int
    sha256: str
    memory: Memory | None
    problems: list[Problem]


#: `FileRead.sha256` of an entry that could not be read (then ": " and the reason)
UNREADABLE = "unreadable"


def _read_files(scope: str, memory_dir: str, names: list[str]) -> list[FileRead | None]:
    import hashlib

    from forgemem.store.memfile import cannot_read, not_a_file

    store = Store(scope, Path(memory_dir))
    reads: list[FileRead | None] = []
    for name in names:
        path = store.memory_dir / name
        try:
            st, why = os.stat(path), None
        except OSError as exc:
            try:
                st, why = os.lstat(path), cannot_read(exc, path)
            except OSError:
                reads.append(None)  # gone since it was listed
                continue
        if why is None and not stat.S_ISREG(st.st_mode):
            why = not_a_file(st.st_mode)
        data = None
        if why is None and st.st_size <= MAX_FILE_BYTES:
            try:
                data = path.read_bytes()
            except OSError as exc:
                why = cannot_read(exc, path)
        if why is not None:
            problem = Problem(path, why)
            reads.append(FileRead(name, st.st_mtime_ns, st.st_size, f"{UNREADABLE}: {why}", None, [problem]))
            continue
        if data is None:  # too large to read: memfile says so without reading it
            memory, problems = store.read(path)
            sha = f"unread, {st.st_size} bytes"
        else:
            memory, problems = store.read(path, data)
            sha = hashlib.sha256(data).hexdigest()
        reads.append(FileRead(name, st.st_mtime_ns, st.st_size, sha, memory, problems))
    return reads


def user_memory_dir() -> Path:
    override = user_dir_override()
    if override is not None:
        return override
    return forge_home() / MEMORY_DIR


def find_repo_memory_dir(start: Path, exclude: Path | None = None,
                         skipped: list[str] | None = None) -> Path | None:
    """Walk up from `start` for `.forge/memory/`, stopping at the git root.

    Outside a git repository the walk stops below the home folder's parent,
    and wherever it goes a `.forge/` is adopted only if it and its `memory/`
    belong to this user and others cannot write to them: a `.forge/` planted
    in a shared folder (`/tmp`) by another user is never read. What was passed
    over is said in `skipped`.
    """
    from forgemem.permissions import unsafe_reason

    start = start.resolve()
    excluded = exclude.resolve() if exclude else None
    root = find_repo_root(start)
    try:
        home = Path.home().resolve()
    except (OSError, RuntimeError):
        home = None
    for folder in (start, *start.parents):
        if root is None and home is not None and folder in home.parents:
            return None  # above the home folder and in no repository: nothing of this user's
        candidate = folder / FORGE_DIR / MEMORY_DIR
        if candidate.is_dir() and candidate.resolve() != excluded:
            reason = unsafe_reason(folder / FORGE_DIR) or unsafe_reason(candidate)
            if reason is None:
                return candidate
            if skipped is not None:
                skipped.append(f"not using {candidate}: {reason}")
        if folder == root:
            return None
    return None


def find_repo_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` that holds `.git`."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def repository_without_store(start: Path) -> Path | None:
    """The git repository around `start` when it has no `.forge/` of its own (the home folder is none):
    a memory about it has no repo store to go to until `forgemem init` (or capture's first write) makes one."""
    root = find_repo_root(start)
    if root is None or (root / FORGE_DIR).exists() or root == Path.home().resolve():
        return None
    return root


def init_forge_dir(forge_dir: Path, user: bool = False) -> list[Path]:
    """Create `memory/`, `config.yaml` and `.gitignore` in a `.forge` folder; idempotent. `user`: the user's own
    store (`~/.forge`), whose config holds every setting."""
    created = []
    memory_dir = forge_dir / MEMORY_DIR
    if not memory_dir.is_dir():
        memory_dir.mkdir(parents=True)
        created.append(memory_dir)
    keep = memory_dir / ".gitkeep"  # git keeps no empty folder: without it a checkout could drop the store
    if not keep.exists() and not any(memory_dir.iterdir()):
        keep.write_text("", encoding="utf-8")
        created.append(keep)
    for name, text in (("config.yaml", default_config_text(user)), (".gitignore", GITIGNORE_TEXT)):
        path = forge_dir / name
        if not path.exists():
            path.write_text(text, encoding="utf-8")
            created.append(path)
    return created


def default_forge_dir(cwd: Path) -> Path:
    """Where `forgemem init` puts `.forge/`: the git root, else the current folder."""
    return (find_repo_root(cwd) or cwd.resolve()) / FORGE_DIR
