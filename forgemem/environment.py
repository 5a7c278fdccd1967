"""Where forgemem keeps things on this machine, and the environment variables it reads (read here only).

Standard library only: the fast path of a warm `forgemem recall` (`forgemem.cli.quick`) and the recall
server's client use it without loading the configuration machinery (`forgemem.config` re-exports all of it).
"""

from __future__ import annotations

import os
from pathlib import Path

FORGE_DIR = ".forge"  # in a repository and in the home folder
MEMORY_DIR = "memory"
CACHE_DIR = "cache"


# ------------------------------------------------------------------ where things live


def forge_home() -> Path:
    """`~/.forge`: the user store, the user's config, and forgemem's own machine-wide state."""
    return Path.home() / FORGE_DIR


def server_socket_path() -> Path:
    """Where the recall server listens (`FORGEMEM_SERVER_SOCKET` moves it)."""
    override = os.environ.get("FORGEMEM_SERVER_SOCKET")
    return Path(override) if override else user_cache_dir() / "recall-server.sock"


def server_enabled() -> bool:
    """`FORGEMEM_SERVER=off` (or 0, no, false): never use or start the recall server."""
    return os.environ.get("FORGEMEM_SERVER", "on").lower() not in ("off", "0", "no", "false")


def user_cache_dir() -> Path:
    """`~/.forge/cache`: derived and private state of this machine (the recall server's socket and
    log, the hooks log, install records, exported models, background processes' working folder)."""
    return forge_home() / CACHE_DIR


# ------------------------------------------------------------------ the environment (read here only)


def user_dir_override() -> Path | None:
    """`FORGEMEM_USER_DIR`: the user store somewhere else than `~/.forge/memory`."""
    value = os.environ.get("FORGEMEM_USER_DIR")
    return Path(value).expanduser() if value else None


def repo_dir_override() -> Path | None:
    """`FORGEMEM_REPO_DIR`: the repo store named outright instead of found by walking up."""
    value = os.environ.get("FORGEMEM_REPO_DIR")
    return Path(value).expanduser() if value else None


def model_cache_override() -> Path | None:
    """`FORGEMEM_MODEL_CACHE`: where exported models live, instead of `~/.forge/cache/models`."""
    value = os.environ.get("FORGEMEM_MODEL_CACHE")
    return Path(value).expanduser() if value else None


def embeddings_disabled() -> bool:
    """`FORGEMEM_NO_EMBEDDINGS`: lexical search only, no model loaded."""
    return bool(os.environ.get("FORGEMEM_NO_EMBEDDINGS"))


def classifier_run() -> bool:
    """`FORGEMEM_CLASSIFIER_RUN`: this process is forgemem's own agent-CLI run (capture's classifier,
    `recall --deep`); its hooks must do nothing (it must never capture itself)."""
    return bool(os.environ.get("FORGEMEM_CLASSIFIER_RUN"))


def debug() -> bool:
    """`FORGEMEM_DEBUG`: print the traceback of an unexpected error."""
    return bool(os.environ.get("FORGEMEM_DEBUG"))


#: environment variables that change nothing about what a recall finds or prints (the server switches; the
#: traceback of an unexpected error, which the full command shows when the server declines; the hooks' own)
_NOT_SHAPING = ("FORGEMEM_SERVER", "FORGEMEM_SERVER_SOCKET", "FORGEMEM_DEBUG", "FORGEMEM_CLASSIFIER_RUN")


def command_environment() -> dict[str, str]:
    """The environment that shapes what a command reads and prints: HOME (the user store and config) and
    every `FORGEMEM_*` variable but the server switches. The recall server answers a command line for a
    client only when its own is the same (`forgemem.recall.command`)."""
    return {key: value for key, value in os.environ.items()
            if key == "HOME" or key.startswith("FORGEMEM_") and key not in _NOT_SHAPING}
