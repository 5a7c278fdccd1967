"""Deciding what in a batch of conversation turns is worth remembering.

A classifier takes a `Batch` (recent turns of one transcript) and a
`Neighbours` lookup (the nearest existing memories) and returns `Proposal`s:
the memory text, its category and scope, and how it relates to the nearest
existing memory. Proposals are data only: `forgemem.capture` checks every
field, generates ids and file names, and writes through the store.

Two classifiers: `offline.OfflineClassifier` (no network, the default) and
`llm.LLMClassifier` (an OpenAI-compatible or Anthropic API, falling back to
the offline one when the model is unreachable or answers garbage).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from forgemem.capture.transcripts import Turn
from forgemem.store.model import Memory

#: How a proposal relates to its nearest existing memory.
RELATIONS = ("new", "supersedes", "refines", "contradicts", "relates-to", "duplicate")


@dataclass
class Batch:
    turns: list[Turn]
    trigger: str  # cadence | compaction
    session_id: str | None = None
    path: str = ""
    context: list[Turn] = field(default_factory=list)  # earlier turns, already classified

    def human_turns(self) -> list[Turn]:
        return [t for t in self.turns if t.role == "user"]


@dataclass
class Neighbour:
    memory: Memory
    similarity: float  # cosine of the embeddings (token overlap without a model)


#: text -> nearest existing head memories, most similar first
Neighbours = Callable[[str], list[Neighbour]]


@dataclass
class Proposal:
    text: str
    category: str
    scope: str
    relation: str = "new"
    target: str | None = None  # the related memory's id (for every relation but new)
    quote: str = ""  # short verbatim words from the transcript
    turn: Turn | None = None  # where it was said
    confidence: float = 0.6
    reason: str = ""  # why the classifier wrote it (for --status and benchmarks)


@dataclass
class Classification:
    proposals: list[Proposal]
    classifier: str  # which classifier decided ("offline", "openai:model", …)
    chars_sent: int = 0  # characters sent to a model or an agent CLI (0 offline: nothing leaves the machine)
    notes: list[str] = field(default_factory=list)  # fall-backs, dropped answers


class Classifier(Protocol):
    name: str

    def classify(self, batch: Batch, neighbours: Neighbours) -> Classification: ...
