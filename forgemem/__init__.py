"""forgemem: long-term memory for AI coding agents, kept as markdown files in git.

The importable library; the `forgemem` command is a thin layer over it.

    from forgemem import Workspace
    ws = Workspace.open()
    snapshot = ws.load()
"""

__version__ = "0.1.0"

# Imported on first use, so that `import forgemem` (and the CLI's start-up) stays light.
_EXPORTS = {
    "ForgememError": "errors", "Problem": "errors", "UsageError": "errors",
    "Memory": "store.model", "Relation": "store.model",
    "Snapshot": "workspace", "Workspace": "workspace",
}


def __getattr__(name):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'forgemem' has no attribute {name!r}")


__all__ = ["ForgememError", "Memory", "Problem", "Relation", "Snapshot", "UsageError", "Workspace", "__version__"]
