"""How forgemem runs git itself.

git run by forgemem never starts a program a repository's own config names (a
`.git/config` can arrive inside a tarball): no fsmonitor hook, no external diff, no
pager; where a diff is read, `--no-textconv --no-ext-diff` as well.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from forgemem.errors import ForgememError, UsageError

GIT = ("git", "-c", "core.fsmonitor=false", "-c", "diff.external=", "-c", "core.pager=cat")


def git_argv(*args: str) -> list[str]:
    return [*GIT, *args]


def git(root: Path, *args: str, data: bytes | None = None) -> bytes:
    """Run git in `root`; its output, or a one-line error."""
    try:
        done = subprocess.run(git_argv(*args), cwd=root, input=data, capture_output=True, check=False)
    except FileNotFoundError:
        raise ForgememError("git is not installed") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise UsageError(f"git {' '.join(args[:2])}: {message[-1] if message else 'failed'}")
    return done.stdout
