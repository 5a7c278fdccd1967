"""A question asks for what a tool is for; a memory names the tool.

"which package manager?" must find "Use uv, not poetry, for dependency management.", though neither word of
the question is in it; without help the real model scores it under the relevance floor (0.23) and the agent's
hook injects nothing. The index adds, to a memory's lexical row only, the words a question uses for what the
tools it names are for (`names.asked_as`). Real stores, the real embedding model, real FAISS and FTS5.
"""

from __future__ import annotations

import sqlite3

import pytest

from forgemem.config import Config
from forgemem.index.database import lexical_text
from forgemem.names import asked_as
from forgemem.recall.engine import RecallEngine
from forgemem.recall.rank import Query
from forgemem.workspace import Workspace

from .conftest import make_memory, write_memory

FLOOR = Config().recall_floor  # what recall, context and the hooks show
RULES = [
    "Use uv, not poetry, for dependency management.",
    "Run the tests with pytest -x before committing.",
    "The API is deployed to fly.io from the main branch.",
    "Branch names follow feat/<ticket>-<slug>.",
    "Prefer f-strings over .format().",
]


def test_a_tool_brings_the_words_for_what_it_is_for():
    assert "package manager" in asked_as("Use uv, not poetry, for dependency management.")
    assert "deploy" in asked_as("The API is deployed to fly.io from the main branch.").split()
    both = asked_as("We use pytest with ruff.").split()
    assert "testing" in both and "linter" in both and len(both) == len(set(both))


def test_words_that_are_no_tool_bring_nothing():
    assert asked_as("Render the template on the server, then cache nothing.") == ""
    assert asked_as("Caroline went to the support group on Friday.") == ""
    # ordinary words that are also tools' names: not after "to", nor vouched for by each other
    for said in ("I'm off to go swimming with the kids.", "We just hung out, family moments make life awesome.",
                 "Make sure to run the tests.", "yup, what a moment"):
        assert asked_as(said) == "", said
    assert asked_as("Run `make lint` before pushing.") == asked_as("Use make for the build.") == "build system"
    memory = make_memory(body="Branch names follow feat/<ticket>-<slug>.")
    assert lexical_text(memory) == memory.body


def test_the_words_go_into_the_lexical_row_only():
    memory = make_memory(body="Use uv, not poetry, for dependency management.")
    row = lexical_text(memory)
    assert row.startswith(memory.body) and "package manager" in row.splitlines()[-1]


@pytest.fixture
def engine(tmp_path, real_embedder) -> RecallEngine:
    repo = tmp_path / "repo" / ".forge" / "memory"
    for text in RULES:
        write_memory(repo, make_memory(body=text))
    found = RecallEngine(Workspace.open(repo_dir=repo, user_dir=tmp_path / "home" / "m"), embedder=real_embedder)
    found.refresh()
    return found


@pytest.mark.parametrize("question", ["which package manager?", "how do I install packages"])
def test_a_question_about_what_a_tool_is_for_finds_it_above_the_floor(engine, question):
    hits = engine.recall(Query(text=question, k=3, floor=FLOOR)).hits
    assert [h.memory.body for h in hits][:1] == [RULES[0]]


@pytest.mark.parametrize("chatter", ["thanks", "ok", "fix the typo in the readme"])
def test_chatter_still_finds_nothing(engine, chatter):
    assert engine.recall(Query(text=chatter, k=3, floor=FLOOR)).hits == []


def test_a_cache_of_the_previous_format_gets_the_words(engine, tmp_path):
    path = tmp_path / "repo" / ".forge" / "cache" / "repo.sqlite"
    db = sqlite3.connect(path)
    with db:  # as an older forgemem wrote it
        db.execute("UPDATE fts SET text = ? WHERE text LIKE 'Use uv%'", (RULES[0],))
        db.execute("UPDATE meta SET value = '2' WHERE key = 'fts'")
    db.close()
    engine.refresh()
    db = sqlite3.connect(path)
    [(row,)] = db.execute("SELECT text FROM fts WHERE text LIKE 'Use uv%'").fetchall()
    db.close()
    assert "package manager" in row


def test_the_vectors_are_made_without_the_words(engine, real_embedder, tmp_path):
    import numpy as np

    db = sqlite3.connect(tmp_path / "repo" / ".forge" / "cache" / "repo.sqlite")
    [(blob,)] = db.execute("SELECT v.vector FROM vectors v JOIN memories m ON m.rowid = v.rowid "
                           "WHERE json_extract(m.record, '$.body') = ?", (RULES[0],)).fetchall()
    db.close()
    stored = np.frombuffer(blob, dtype=np.float32)
    assert np.allclose(stored, real_embedder.encode([RULES[0]])[0], atol=1e-5)
