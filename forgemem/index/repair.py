"""Cache files that are not what they should be: found, moved aside or rebuilt, and said once.

Everything in a cache folder is derived (deleting it loses only time), so a cache file that
cannot be read is rebuilt. Something that is not a regular file where a cache file belongs
(a folder, a FIFO, a link) may hold what someone put there: it is moved aside, renamed
`<name>.corrupt-<UTC time>`, never deleted. Either way the repair is said once, on stderr
(`say`): a repair leaves nothing to repeat it for. A temporary file a killed process left
behind is removed when the process is gone.

`forgemem doctor` (`forgemem.curate.health.check_caches`) runs the same repairs on purpose
and reports them (`said` keeps what this process said).
"""

from __future__ import annotations

import os
import re
import stat
import sys
import time
from pathlib import Path

#: what this process has said about repairs (doctor reports it)
said: list[str] = []
_quiet = [0]


class quietly:
    """`with quietly():` repairs are only collected in `said` (doctor prints its own report)."""

    def __enter__(self):
        _quiet[0] += 1
        return self

    def __exit__(self, *exc) -> None:
        _quiet[0] -= 1


def say(message: str) -> None:
    """Say a repair once: on stderr (never stdout: the MCP server speaks JSON-RPC there)."""
    said.append(message)
    if _quiet[0]:
        return
    try:
        sys.stderr.write(f"forgemem: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def kind(path: Path) -> str | None:
    """What is at `path` when it is not a regular file ("a folder", "a link", …); None for a file or nothing."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISREG(st.st_mode):
        return None
    if stat.S_ISDIR(st.st_mode):
        return "a folder"
    if stat.S_ISLNK(st.st_mode):
        return "a link"
    return "a special file"


def aside_name(path: Path) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 2
    while os.path.lexists(aside):
        aside = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
        n += 1
    return aside


def clear_way(path: Path, want_folder: bool = False) -> str | None:
    """Make room for a cache file (or, `want_folder`, a cache folder) at `path`: what is there instead is
    moved aside and said. Returns what was said (None: nothing was in the way)."""
    found: str | None
    if want_folder:
        if os.path.isdir(path) or not os.path.lexists(path):  # a link to a folder is someone's choice
            return None
        found = kind(path) or "a file"
    else:
        found = kind(path)
        if found is None:
            return None
    aside = aside_name(path)
    try:
        os.rename(path, aside)
    except OSError as exc:
        message = f"{path} is {found}, not a cache {'folder' if want_folder else 'file'}, and cannot be moved " \
                  f"aside ({exc.strerror}); move or delete it"
    else:
        message = f"{path} was {found}, not a cache {'folder' if want_folder else 'file'}; moved it to {aside.name}"
    say(message)
    return message


def remove(path: Path) -> None:
    """Delete a cache file; something else in its place is moved aside (`clear_way`)."""
    if clear_way(path) is None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


_TEMP = re.compile(r"^\..+\.(\d+)\.tmp$")


def clean_temp(folder: Path, prefix: str) -> list[str]:
    """Remove `.<prefix>….<pid>.tmp` files whose process is gone (left by a kill); returns their names."""
    removed: list[str] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        match = _TEMP.match(name)
        if match is None or not name.startswith(f".{prefix}"):
            continue
        pid = int(match.group(1))
        if pid == os.getpid() or _alive(pid):
            continue
        try:
            if kind(folder / name) is None:
                os.unlink(folder / name)
                removed.append(name)
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's: it exists
    return True


def moved_aside(folder: Path) -> list[str]:
    """Names of what was moved aside in `folder` (kept until someone deletes it)."""
    try:
        return sorted(n for n in os.listdir(folder) if ".corrupt-" in n)
    except OSError:
        return []


def _private(path: Path) -> str:
    from forgemem.permissions import make_private

    make_private(path)
    return f"{path}: made private"


def check_store_cache(index, repair: bool = True) -> dict:
    """The files of one store's cache (`StoreIndex`), as `forgemem doctor` reports them: something else
    where a file or the folder belongs (moved aside), a database that fails SQLite's integrity check
    (deleted: the refresh after rebuilds it), temporary files of killed processes, modes others can
    read (tightened), a `.gitignore` that ignores nothing, and what was kept aside earlier. (Whether
    the cache agrees with the files, and each vector index with its vectors, is `StoreIndex.check`.)"""
    import sqlite3

    from forgemem.permissions import PRIVATE_FILE, private_dir

    folder: Path = index.folder
    report: dict = {"folder": str(folder), "problems": [], "repaired": [], "not_repaired": [], "moved_aside": []}

    def found(problem: str, fix=None) -> None:
        report["problems"].append(problem)
        if not repair:
            return
        try:
            done = fix() if fix is not None else None
        except OSError as exc:
            report["not_repaired"].append(f"{problem}: {exc.strerror or exc}")
            return
        report["repaired"].append(done or problem.split(": ")[0])

    if index.in_memory or not os.path.lexists(folder):
        return {**report, "ok": True}
    if not os.path.isdir(folder):
        found(f"{folder} is {kind(folder) or 'a file'}, not a folder", lambda: clear_way(folder, want_folder=True))
        return {**report, "ok": not report["problems"] or bool(report["repaired"])}
    if os.stat(folder).st_mode & 0o077:
        found(f"{folder} can be read by other users", lambda: private_dir(folder) and f"{folder}: made private")
    faiss = sorted(folder.glob(f"{index.scope}-*.faiss"))
    from forgemem.store.writing import LOCK_NAME

    for path in (folder / ".gitignore", *index.db_files(), index.lock_path, folder / LOCK_NAME, *faiss,
                 folder / f"{index.scope}-unreadable.said"):
        what = kind(path)
        if what is not None:
            found(f"{path} is {what}, not a file", lambda path=path: clear_way(path))
        elif os.path.exists(path) and path.name != ".gitignore" and os.stat(path).st_mode & 0o777 != PRIVATE_FILE:
            found(f"{path} can be read by other users", lambda path=path: _private(path))
    ignore = folder / ".gitignore"
    if kind(ignore) is None and os.path.exists(ignore) and "*" not in ignore.read_text(errors="replace").split():
        found(f"{ignore} does not ignore the cache's files",
              lambda: ignore.write_text(index.gitignore_text) and f"{ignore}: written again")
    if index.db_path.is_file():
        try:
            db = sqlite3.connect(f"{index.db_path.absolute().as_uri()}?mode=ro", uri=True, timeout=5)
            try:
                rows = [r[0] for r in db.execute("PRAGMA integrity_check(5)").fetchall()]
            finally:
                db.close()
            bad = None if rows == ["ok"] else "; ".join(str(r) for r in rows)[:300]
        except sqlite3.Error as exc:
            bad = str(exc)
        if bad is not None and "locked" not in bad:
            found(f"{index.db_path} fails SQLite's integrity check ({bad})",
                  lambda: index.destroy() or f"{index.db_path}: deleted, to be rebuilt")
    if repair:
        report["repaired"] += [f"removed {folder / n}, left by a process that was killed"
                               for n in clean_temp(folder, f"{index.scope}-")]
    report["moved_aside"] = moved_aside(folder)
    report["ok"] = not report["not_repaired"] and (not report["problems"] or repair)
    return report
