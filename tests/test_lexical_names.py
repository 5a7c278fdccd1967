"""Names in code are searchable by their words: `GitTemporaryDirectory` is found by "temporary directory".

Real files, the real SQLite FTS5 index (lexical search only: vectors do not matter here).
"""

from __future__ import annotations

from forgemem.index.database import FTS_FORMAT, fts_current, get_meta, lexical_text, set_meta
from forgemem.recall.engine import RecallEngine
from forgemem.recall.rank import Query
from forgemem.workspace import Workspace
from tests.conftest import make_memory, write_memory

NAMES = "Do not use `IgnorantTemporaryDirectory` in tests; use `GitTemporaryDirectory`."
OTHERS = ["Run the tests with `make test`.", "Keep a changelog entry for every pull request.",
          "Use snake_case for module names."]


def lexical_engine(tmp_path):
    folder = tmp_path / "repo" / ".forge" / "memory"
    ids = {}
    for text in [NAMES, *OTHERS]:
        memory = make_memory(text)
        write_memory(folder, memory)
        ids[text] = memory.id
    engine = RecallEngine(Workspace.open(repo_dir=folder, user_dir=tmp_path / "user"), use_embeddings=False)
    engine.refresh()
    return engine, ids


def lexical_hit(engine, text: str):
    return [h.id for h in engine.recall(Query(text, k=5, hops=0), refresh=False).hits if h.lexical_rank is not None]


def test_the_words_inside_a_camel_case_name_find_it(tmp_path):
    engine, ids = lexical_engine(tmp_path)
    assert lexical_hit(engine, "which temporary directory class?") == [ids[NAMES]]
    assert lexical_hit(engine, "GitTemporaryDirectory")[:1] == [ids[NAMES]]  # the whole name still matches


def test_a_cache_written_before_the_split_gets_its_lexical_rows_again(tmp_path):
    engine, ids = lexical_engine(tmp_path)
    db = engine.indexes()["repo"].db
    db.execute("DELETE FROM fts")  # as an older forgemem wrote them: the text alone
    db.execute("INSERT INTO fts(rowid, text) SELECT rowid, json_extract(record, '$.body') FROM memories")
    set_meta(db, "fts", "1")
    assert lexical_hit(engine, "temporary directory") == []
    engine.refresh()
    assert fts_current(db) and get_meta(db, "fts") == FTS_FORMAT
    assert lexical_hit(engine, "temporary directory") == [ids[NAMES]]


def test_which_names_are_split():
    text = lexical_text(make_memory("Use HTTPServer and parseJSONBody, not NASA or snake_case or README.md."))
    assert text.endswith("\nHTTP Server parse JSON Body")
    assert lexical_text(make_memory("Plain words only.")) == "Plain words only."
