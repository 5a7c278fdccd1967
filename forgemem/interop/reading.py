"""Reading the files people bring: limits, text checks, where they are, and which ones a repository holds."""

from __future__ import annotations

import os
import re
from pathlib import Path

from forgemem.errors import ForgememError, UsageError

#: An instruction file is a few kilobytes; one over this is not one (and is refused, not parsed).
MAX_INSTRUCTION_BYTES = 1024 * 1024
#: Another tool's export of many memories may be larger.
MAX_EXPORT_BYTES = 32 * 1024 * 1024

#: The instruction files agents read, relative to a repository's root.
REPO_FILES = ("CLAUDE.md", "CLAUDE.local.md", "AGENTS.md", "GEMINI.md", ".cursorrules",
              ".github/copilot-instructions.md")
#: Cursor's rule folder (every `*.mdc` in it but forgemem's own export).
CURSOR_RULES = ".cursor/rules"
#: The file `forgemem export --format cursor-rules` writes: never imported back.
OWN_CURSOR_FILE = "forgemem.mdc"
#: The personal instruction files of each agent, relative to the home folder.
USER_FILES = (".claude/CLAUDE.md", ".codex/AGENTS.md", ".gemini/GEMINI.md")
#: Files a folder is searched for when it holds none of the known ones.
SUFFIXES = (".md", ".mdc", ".markdown")


class InputError(ForgememError):
    """A file that cannot be imported (or exported into): one sentence, nothing written."""


def shown(path: Path) -> str:
    """A path as messages show it: relative to the current folder when that is shorter."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if relative.startswith("..") else relative


def read_text(path: Path, limit: int = MAX_INSTRUCTION_BYTES, what: str = "an instruction file",
              keep_bom: bool = False) -> str:
    """A file's text, or one sentence saying why it is not text forgemem reads (nothing has been written).

    Refused: a folder or a missing file, a file over `limit` bytes (never read whole), a binary file
    (a NUL byte), text that is not UTF-8. A UTF-8 byte-order mark is dropped (kept with `keep_bom`, for
    a file that is written back).
    """
    name = shown(path)
    if not path.exists():
        raise UsageError(f"no such file: {name}")
    if path.is_dir():
        raise UsageError(f"{name} is a folder, not a file")
    try:
        size = path.stat().st_size
        if size > limit:
            raise InputError(f"{name} is {_size(size)}, over the {_size(limit)} forgemem reads as {what}; "
                             "nothing was read from it (split it, or keep only the part that holds the rules)")
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise InputError(f"cannot read {name} ({exc.strerror or exc}); nothing was read from it") from None
    if len(data) > limit:  # it grew while we looked
        raise InputError(f"{name} is over the {_size(limit)} forgemem reads as {what}; nothing was read from it")
    if b"\0" in data:
        raise InputError(f"{name} is a binary file, not text; nothing was read from it")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"{name} is not UTF-8 text (an invalid byte on line {line}); nothing was read from it "
                         "(convert it to UTF-8 first)") from None
    return text if keep_bom else text.removeprefix("\ufeff")


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB" if n >= 1024 * 1024 else f"{n / 1024:.0f} KB"


def file_key(path: Path, root: Path | None) -> str:
    """How provenance names a file: relative to the repository, `~/…` under the home folder, else absolute
    (the file name alone where the user's name would show; see `capture.capturer.provenance_path`)."""
    from forgemem.capture.capturer import provenance_path

    return provenance_path(str(path.absolute()), project=root)


def key_path(key: str, root: Path | None) -> Path:
    """The file a provenance key names (the reverse of `file_key`, as far as it goes)."""
    if key.startswith("~/"):
        return Path.home() / key[2:]
    path = Path(key)
    return path if path.is_absolute() or root is None else root / path


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths are one file (links followed; a file that does not exist is compared by its path)."""
    return os.path.realpath(a) == os.path.realpath(b)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def discover(root: Path, home: bool = False) -> list[Path]:
    """The instruction files a repository (or, with `home`, the home folder) holds, in a stable order.

    A file whose name holds a control character, or a link that leads out of `root`, is passed over:
    what this finds is printed as a command for people to run.
    """
    names = USER_FILES if home else REPO_FILES
    found = [root / name for name in names]
    rules = root / CURSOR_RULES
    if not home and rules.is_dir():
        found += sorted(p for p in rules.glob("*.mdc") if p.name != OWN_CURSOR_FILE)
    real_root = os.path.realpath(root)
    return [p for p in found
            if p.is_file() and not _CONTROL.search(str(p))
            and (home or os.path.realpath(p).startswith(real_root + os.sep))]


def expand(paths: list[Path], root: Path | None) -> list[Path]:
    """Files to import: each file as given; a folder's instruction files, or else its markdown files."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            inside = discover(path) or sorted(p for p in path.iterdir()
                                              if p.is_file() and p.suffix in SUFFIXES and p.name != OWN_CURSOR_FILE)
            if not inside:
                raise UsageError(f"{shown(path)} holds no instruction or markdown files")
            files.extend(inside)
        elif path.exists():
            files.append(path)
        else:
            raise UsageError(f"no such file or folder: {shown(path)}")
    unique: list[Path] = []
    for path in files:
        if not any(same_file(path, seen) for seen in unique):
            unique.append(path)
    return unique


def markdown_files(folder: Path) -> list[Path]:
    """Every markdown file below a folder (a basic-memory project), hidden folders left out."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        found += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(".md")]
    return found
