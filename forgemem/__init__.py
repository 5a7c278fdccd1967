"""forgemem: long-term memory for AI coding agents, kept as markdown files in git.

The importable library; the `forgemem` command is a thin layer over it.

    from forgemem import Workspace
    ws = Workspace.open()
    snapshot = ws.load()
"""

__version__ = "0.1.0"

from .errors import ForgememError, Problem, UsageError  # noqa: E402
from .model import Memory, Relation  # noqa: E402
from .workspace import Snapshot, Workspace  # noqa: E402

__all__ = ["ForgememError", "Memory", "Problem", "Relation", "Snapshot", "UsageError", "Workspace", "__version__"]
