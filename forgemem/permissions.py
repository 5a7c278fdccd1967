"""File modes: private caches and logs, shared files that follow the umask.

Two kinds of file, two rules:

- **Private** (caches, logs, observer state, the recall server's socket, the
  install records): folders 0700, files 0600, whatever the umask. They may
  hold text from conversations and memories; other local users never read them.
- **Shared** (memory files, `.gitattributes`, an agent's settings): the mode a
  new file would get from the user's umask (0644 with the usual 022), so
  teammates on a shared checkout can read them; a file that exists keeps its mode.

And one check, for anything forgemem is about to trust: a folder is *safe* when
it is owned by this user and not writable by other users (`safe_folder`).
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from pathlib import Path

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
_umask_lock = threading.Lock()


def current_umask() -> int:
    """This process's umask, read without changing it where the system allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _umask_lock:  # elsewhere: set and restore (brief, and under a lock)
        old = os.umask(0o022)
        os.umask(old)
    return old


def shared_mode() -> int:
    """The mode of a new, ordinary file under the current umask (0644 with umask 022)."""
    return 0o666 & ~current_umask()


def private_dir(path: Path) -> Path:
    """Create `path` (and missing parents) as a private folder; tighten it if it exists and is ours."""
    path = Path(path)
    if not path.is_dir():
        path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    try:
        st = path.stat()
        if st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) & 0o077:
            os.chmod(path, PRIVATE_DIR)
    except OSError:
        pass
    return path


def make_private(path: Path) -> None:
    """Set a file of ours to 0600 (nothing happens to a missing file or someone else's)."""
    try:
        st = os.stat(path)
        if st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) != PRIVATE_FILE:
            os.chmod(path, PRIVATE_FILE)
    except OSError:
        pass


def open_private_append(path: Path):
    """Open a private log for appending (created 0600; an existing one is tightened)."""
    private_dir(Path(path).parent)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE_FILE)
    make_private(path)
    return os.fdopen(fd, "a", encoding="utf-8")


def unsafe_reason(path: Path, uid: int | None = None) -> str | None:
    """Why a folder must not be trusted (None: it is owned by this user and not writable by others).

    `uid`: the user it must belong to (default: this process's).
    """
    try:
        st = os.stat(path)
    except (OSError, ValueError) as exc:
        return f"cannot read it ({getattr(exc, 'strerror', None) or exc})"
    return unsafe_stat_reason(st, uid)


def unsafe_stat_reason(st: os.stat_result, uid: int | None = None) -> str | None:
    """`unsafe_reason` for a stat result already at hand."""
    uid = os.getuid() if uid is None else uid
    if st.st_uid != uid:
        return f"it belongs to another user (uid {st.st_uid})"
    if stat.S_IMODE(st.st_mode) & 0o002:
        return "other users can write to it"
    return None


def safe_folder(path: Path) -> bool:
    return unsafe_reason(path) is None


def atomic_write_text(path: Path, text: str, private: bool = False) -> None:
    """Write a file so that a crash leaves the old or the new text, never half of one.

    When it returns, the text is on disk: the file is synced, then renamed over
    `path`, then its folder is synced (and the parent of every folder it had to
    create), so a power cut after it cannot lose the file.

    The mode: 0600 with `private` (caches, records); otherwise an existing
    file keeps its own, and a new one gets what the umask gives (0644 with
    022), so teammates on a shared checkout can read memory files.
    """
    data = text.encode("utf-8")
    created = make_dirs(path.parent)
    if private:
        mode = PRIVATE_FILE
    else:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except OSError:
            mode = shared_mode()
    import tempfile  # here: the recall server's client loads this module and writes nothing

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    sync_dir(path.parent)
    for folder in created:
        sync_dir(folder.parent)


def make_dirs(folder: Path) -> list[Path]:
    """Create `folder` and its missing parents (as `mkdir -p`); the folders created, outermost first."""
    missing = []
    while not folder.is_dir():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    created = []
    for each in reversed(missing):
        try:
            each.mkdir()
        except FileExistsError:
            if not each.is_dir():
                raise
            continue
        created.append(each)
    return created


def sync_dir(folder: Path) -> None:
    """Make a folder's entries durable (a new or renamed file in it); a system that cannot is left alone."""
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):  # folders that cannot be synced; a failing disk raises
            raise
    finally:
        os.close(dir_fd)


def remove_durably(path: Path) -> None:
    """Delete a file and sync its folder, so the deletion survives a crash."""
    path.unlink()
    sync_dir(path.parent)
