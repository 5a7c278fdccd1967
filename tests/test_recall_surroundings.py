"""What a memory's surroundings add to recall: the periods a query names, session neighbours, the session's best.

Real files, the real embedding model, real FAISS; the lazy one-shot path (a CLI recall without a server) is
compared with the full snapshot.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

import forgemem.recall.engine as engine_module
import forgemem.recall.surroundings as surroundings
from forgemem.index import links
from forgemem.recall.dates import periods, within
from forgemem.recall.engine import RecallEngine
from forgemem.recall.rank import Query
from forgemem.workspace import Workspace
from tests.conftest import make_memory, write_memory

START = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
TRIP = [  # one capture session, in the order said
    "Which train should we take to Lyon on Friday?",
    "The 3 pm one, it arrives before dinner.",
    "Great, book two seats in the quiet carriage.",
]
OTHERS = [
    "Use ruff for linting and formatting Python code.",
    "Deploy with `make release` from the main branch.",
    "Database migrations are Alembic revisions, one per pull request.",
    "Trains in Switzerland are rarely late.",
    "Our Lyon office is on the third floor.",
    "Book flights through the company travel portal.",
    "Dinner reservations for the team offsite are handled by Sam.",
    "The quarterly report is due on the first Monday of the month.",
    "Prefer small pull requests with a clear description.",
    "The staging server restarts every night at 2 am.",
    "Keep secrets in the vault, never in the repository.",
    "Use type hints on every public function.",
]


@pytest.fixture
def store(tmp_path):
    folder = tmp_path / "repo" / ".forge" / "memory"
    trip = []
    for n, text in enumerate(TRIP):
        when = START + timedelta(minutes=n)
        trip.append(make_memory(text, category="user-facts", created_at=when, updated_at=when, session_id="trip"))
        write_memory(folder, trip[-1])
    for n, text in enumerate(OTHERS):
        when = START - timedelta(days=3 + n)
        write_memory(folder, make_memory(text, created_at=when, updated_at=when, session_id=f"other-{n % 4}"))
    return folder, [m.id for m in trip]


def engine_for(folder, embedder, lazy=False) -> RecallEngine:
    engine = RecallEngine(Workspace.open(repo_dir=folder, user_dir=folder.parent / "user"), embedder=embedder,
                          lazy=lazy)
    engine.refresh()
    return engine


def place(result, memory_id) -> int:
    return [h.id for h in result.hits].index(memory_id) + 1 if memory_id in [h.id for h in result.hits] else 99


QUESTION = "What time is our train to Lyon?"


def test_the_answer_next_to_the_question_is_lent_its_neighbours_score(store, real_embedder, monkeypatch):
    folder, (asked, answer, _after) = store
    engine = engine_for(folder, real_embedder)
    result = engine.recall(Query(QUESTION, k=10, hops=0), refresh=False)
    hit = next(h for h in result.hits if h.id == answer)
    assert hit.lexical_rank is None  # it shares no word with the question
    assert hit.surroundings["neighbour"] > 0 and "next to a match in its session" in hit.why()
    with_neighbours = place(result, answer)

    monkeypatch.setattr(surroundings, "NEIGHBOUR_WEIGHTS", {})
    without = engine.recall(Query(QUESTION, k=10, hops=0), refresh=False)
    assert place(without, asked) == 1
    assert with_neighbours < place(without, answer)
    assert with_neighbours <= 3


LYON = ["Lyon station has a left-luggage office.", "Train tickets are refunded up to a day before.",
        "Our train to Paris left at noon.", "Lyon is two hours from Paris by train.",
        "The night train to Lyon was cancelled last year.", "What time does the Lyon office open?"]


def test_a_neighbour_neither_leg_found_is_fetched_with_its_own_cosine(store, real_embedder, monkeypatch):
    folder, (_asked, answer, _after) = store
    for text in LYON:  # closer to the question, on both legs, than the answer is
        write_memory(folder, make_memory(text, created_at=START, updated_at=START))
    monkeypatch.setattr(engine_module, "CANDIDATES", 1)  # each leg finds max(1, 5 · k) = 5 memories
    engine = engine_for(folder, real_embedder)
    query = Query(QUESTION, k=1, hops=0)
    found, _dense = engine.candidates(query)
    assert answer not in {c.memory.id for c in found}
    scored, _dense = engine.scored(query)
    fetched = next(c for c in scored if c.memory.id == answer)
    assert fetched.lexical_score is None and fetched.dense_rank is None
    assert fetched.dense_score is not None and -1 <= fetched.dense_score <= 1
    assert fetched.surroundings["neighbour"] > 0


def test_memories_outside_any_session_take_no_loan(tmp_path, real_embedder):
    folder = tmp_path / "repo" / ".forge" / "memory"
    for n, text in enumerate(TRIP):
        when = START + timedelta(minutes=n)
        write_memory(folder, make_memory(text, created_at=when, updated_at=when))  # written by hand: no session
    result = engine_for(folder, real_embedder).recall(Query(QUESTION, k=3, hops=0), refresh=False)
    assert all("neighbour" not in h.surroundings for h in result.hits)


def test_a_recall_in_a_process_of_its_own_ranks_as_the_full_snapshot_does(store, real_embedder):
    folder, _ids = store
    full = engine_for(folder, real_embedder).recall(Query(QUESTION, k=8, hops=0), refresh=False)
    lazy = engine_for(folder, real_embedder, lazy=True)
    assert not isinstance(lazy._rows, dict)  # read on demand
    result = lazy.recall(Query(QUESTION, k=8, hops=0), refresh=False)
    assert [(h.id, round(h.score, 9)) for h in result.hits] == [(h.id, round(h.score, 9)) for h in full.hits]


def test_an_older_cache_gets_its_session_index_on_the_next_refresh(store, real_embedder):
    folder, _ids = store
    engine = engine_for(folder, real_embedder)
    db = engine.indexes()["repo"].db
    db.execute("DROP INDEX memories_session")
    assert not links.indexed(db) and links.current(db)
    assert engine.recall(Query(QUESTION, k=3, hops=0), refresh=False).hits  # answered without the index
    engine.refresh()
    assert links.indexed(db) and links.current(db)
    plan = " ".join(str(r) for r in db.execute(
        f"EXPLAIN QUERY PLAN SELECT rowid FROM memories WHERE {links.SESSION} = ?", ("trip",)))
    assert "memories_session" in plan


def test_session_order_is_time_then_file_name_with_numbers_read_as_numbers():
    rows = [(1, "a/turn-10.md", "2026-05-04T09:00:00Z"), (2, "a/turn-2.md", "2026-05-04T09:00:00Z"),
            (3, "a/turn-1.md", "2026-05-04T09:01:00Z"), (4, "b/turn-9.md", "2026-05-04T09:00:00Z")]
    assert surroundings.written_order(rows) == [2, 4, 1, 3]


def test_a_memory_written_in_the_month_asked_about_comes_first(tmp_path, real_embedder):
    folder = tmp_path / "repo" / ".forge" / "memory"
    months = {3: "Retro: the deploy was slow because of the migrations.",
              6: "Retro: the deploy was slow because of the Docker build.",
              9: "Retro: the deploy was slow because of flaky tests."}
    ids = {}
    for month, text in months.items():
        when = datetime(2026, month, 10, tzinfo=UTC)
        memory = make_memory(text, category="architectural-decisions", created_at=when, updated_at=when)
        write_memory(folder, memory)
        ids[month] = memory.id
    engine = engine_for(folder, real_embedder)
    result = engine.recall(Query("What did the retro say about the slow deploy in June?", k=3, hops=0), refresh=False)
    assert result.hits[0].id == ids[6]
    assert [h.surroundings.get("date", 0) for h in result.hits] == [surroundings.DATE_WEIGHT, 0, 0]
    assert "written in the period asked about" in result.hits[0].why()
    undated = engine.recall(Query("What did the retro say about the slow deploy?", k=3, hops=0), refresh=False)
    assert undated.hits[0].id != ids[6]  # without the month, another one is first


NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("text", "inside", "outside"), [
    ("What did Melanie show Caroline on October 13, 2023?", datetime(2023, 10, 15, tzinfo=UTC),
     datetime(2023, 10, 30, tzinfo=UTC)),
    ("what happened on 1 February, 2023", datetime(2023, 1, 31, 12, tzinfo=UTC), datetime(2023, 1, 29, tzinfo=UTC)),
    ("the 2024-01-05 outage", datetime(2024, 1, 5, 8, tzinfo=UTC), datetime(2024, 2, 5, tzinfo=UTC)),
    ("Which class did Maria start in December 2023?", datetime(2024, 1, 10, tzinfo=UTC),
     datetime(2023, 11, 30, tzinfo=UTC)),
    ("When did we go camping in June?", datetime(2025, 6, 20, tzinfo=UTC), datetime(2025, 5, 31, tzinfo=UTC)),
    ("what did we decide last week?", NOW - timedelta(days=9), NOW - timedelta(days=20)),
    ("anything from yesterday", NOW - timedelta(hours=30), NOW - timedelta(days=3)),
])
def test_periods_a_query_names(text, inside, outside):
    spans = periods(text, [2025], now=NOW)
    assert within(inside, spans) and not within(outside, spans)


@pytest.mark.parametrize("text", ["It may rain.", "march on", "What is the plan?", "on February 30, 2023",
                                  "the may release", "june", "on December 30, 9999", "0001-01-01"])
def test_words_that_are_not_periods(text):
    assert periods(text, [2025], now=NOW) == []


def test_a_memory_written_into_a_session_later_becomes_a_neighbour_after_the_refresh(store, real_embedder):
    folder, (asked, answer, _after) = store
    engine = engine_for(folder, real_embedder)
    first = engine.recall(Query(QUESTION, k=10, hops=0), refresh=False)  # remembers the session's order
    assert next(h for h in first.hits if h.id == answer).surroundings.get("neighbour")
    when = START + timedelta(seconds=30)  # between the question and the answer
    late = make_memory("Seats 41 and 42, coach 7.", category="user-facts", created_at=when, updated_at=when,
                       session_id="trip")
    write_memory(folder, late)
    engine.refresh()
    again = engine.recall(Query(QUESTION, k=10, hops=0), refresh=False)
    by_id = {h.id: h for h in again.hits}
    assert by_id[late.id].surroundings["neighbour"] > by_id[answer].surroundings["neighbour"]  # now 1 away, answer 2


def test_explain_shows_what_the_surroundings_added(store, real_embedder, cli):
    folder, (_asked, answer, _after) = store
    engine_for(folder, real_embedder)  # the cache, built once
    shown = cli("--repo-dir", str(folder), "--user-dir", str(folder.parent / "user"), "recall", "--explain", "--all",
                QUESTION)
    hits = re.split(r"^\s*\d+\. ", shown.out, flags=re.MULTILINE)  # one block per hit
    block = next(b for b in hits if b.startswith(answer[4:12]))
    assert "next to a match in its session" in block and "neighbour +" in block and "session +" in block


def test_versions_of_one_memory_lend_nothing_to_each_other(tmp_path, real_embedder):
    folder = tmp_path / "repo" / ".forge" / "memory"
    old = make_memory("Use poetry to manage dependencies.", created_at=START, updated_at=START, session_id="deps")
    later = START + timedelta(minutes=1)
    new = make_memory("Use uv to manage dependencies, not poetry.", created_at=later, updated_at=later,
                      session_id="deps", supersedes=old.id, version=2)
    for memory in (old, new):
        write_memory(folder, memory)
    engine = engine_for(folder, real_embedder)
    scored, _dense = engine.scored(Query("which tool manages our dependencies?", k=5, hops=0))
    assert {c.memory.id for c in scored} == {old.id, new.id}
    assert all("neighbour" not in c.surroundings for c in scored)


def test_a_match_worse_than_none_lends_nothing():
    from forgemem.recall.rank import Candidate

    memories = [make_memory(text, created_at=START + timedelta(minutes=n), updated_at=START + timedelta(minutes=n),
                            session_id="s") for n, text in enumerate(["one", "two"])]
    candidates = [Candidate(m, dense_score=-0.2, combined=-0.2, key=("repo", n)) for n, m in enumerate(memories)]
    scored = surroundings.adjust(candidates, "anything", lambda scope, session: [0, 1], lambda key: None)
    assert all("neighbour" not in c.surroundings for c in scored)
