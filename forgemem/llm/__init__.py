"""Asking a language model: the HTTP endpoints (OpenAI-compatible, Anthropic, Ollama) in `http`, the
user's own agent CLIs (`claude -p`, `codex exec`) in `agent_cli`. Shared by capture's classifier and deep
recall; each caller brings its own prompt, answer schema and checks. Imports only the layer below it and
`store.redact`; knows nothing of memories, stores, caches, recall or capture. Callers hand it text that is
already redacted.
"""

from __future__ import annotations


class ModelUnavailable(Exception):
    """The model could not be reached, or its answer was not usable.

    `notes`: what the attempt still cost (an agent CLI that answered garbage
    may have reported its spend).
    """

    def __init__(self, message: str, notes: list[str] | None = None):
        super().__init__(message)
        self.notes = list(notes or [])
