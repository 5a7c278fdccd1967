"""Starting forgemem processes safely.

forgemem runs in every repository a user opens, strangers' clones included,
so a process it starts must never import code from the folder it runs in:

- background processes (the recall server, capture passes after a hook) run
  `python -P -m forgemem …` (`-P`: the working folder is not put on
  `sys.path`), with `PYTHONSAFEPATH=1` in their environment (so anything *they*
  start, such as multiprocessing's spawned workers, is safe too), in a private
  folder of forgemem's own rather than the project; the project they work for
  is named with `-C DIR`, never found from the working folder;
- commands written into an agent's or git's settings name the console script
  by its absolute path (a console script puts only its own folder on
  `sys.path`), or, when there is none, `python -P -m forgemem`.

`enter_safe_mode()` (called by the console script) sets `PYTHONSAFEPATH=1`
for every Python process forgemem starts from then on.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from forgemem.environment import user_cache_dir

if TYPE_CHECKING:
    import subprocess


def enter_safe_mode() -> None:
    """Make every Python child of this process start without the working folder on `sys.path`."""
    os.environ["PYTHONSAFEPATH"] = "1"


def module_argv() -> list[str]:
    """`python -P -m forgemem`: this interpreter, the working folder kept off `sys.path`."""
    return [sys.executable, "-P", "-m", "forgemem"]


def console_script() -> Path | None:
    """The `forgemem` console script installed beside this interpreter, if there is one."""
    candidate = Path(sys.executable).parent / ("forgemem.exe" if os.name == "nt" else "forgemem")
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return candidate.absolute()
    return None


def command_argv() -> list[str]:
    """How an agent or git should start forgemem: the console script's absolute path, else `python -P -m`."""
    script = console_script()
    return [str(script)] if script is not None else module_argv()


def private_workdir() -> Path:
    """A folder of forgemem's own to run background processes in (never the project)."""
    from forgemem.permissions import private_dir

    folder = user_cache_dir() / "run"
    try:
        return private_dir(folder)
    except OSError:
        return Path("/")


def safe_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONSAFEPATH"] = "1"
    return env


def start_detached(args: list[str], log_path: Path | None = None) -> subprocess.Popen:
    """Start `python -P -m forgemem ARGS…` in the background, detached, in a private folder.

    Its output goes to `log_path` (a private file) or nowhere. Raises OSError
    when it cannot be started.
    """
    import subprocess  # here: every command loads this module (`enter_safe_mode`), few start a process

    from forgemem.permissions import open_private_append

    log = open_private_append(log_path) if log_path is not None else None
    try:
        return subprocess.Popen(  # noqa: S603 - our own interpreter and module, arguments as a list
            [*module_argv(), *args],
            cwd=private_workdir(),
            env=safe_env(),
            stdin=subprocess.DEVNULL,
            stdout=log or subprocess.DEVNULL,
            stderr=log or subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    finally:
        if log is not None:
            log.close()
