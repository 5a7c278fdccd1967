"""A recall in a process of its own reads from the cache only what it uses (`forgemem.recall.lazy`), and
answers exactly as the full snapshot does: the same hits, scores, heads, paths over edges and conflicts."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

import pytest

from forgemem.recall.engine import RecallEngine
from forgemem.recall.lazy import LazySnapshot
from forgemem.recall.rank import Query
from forgemem.store.model import new_id
from forgemem.workspace import Workspace

from .conftest import make_memory, write_memory

WORDS = ["deploys", "staging", "database", "ruff", "tests", "migrations", "cache", "release", "review", "docker"]


def _at(days: int) -> dict:
    when = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=days)
    return {"created_at": when, "updated_at": when}


@pytest.fixture
def stores(tmp_path):
    """Both stores, with chains, a fork, contradictions (one resolved), edges across stores, a dangling edge
    and a retracted memory."""
    repo, user = tmp_path / "p/.forge/memory", tmp_path / "home/.forge/memory"
    made = []

    def add(folder, body, days, **fields):
        memory = make_memory(body=body, **_at(days), **fields)
        write_memory(folder, memory)
        made.append(memory)
        return memory

    old = add(repo, "Deploys go through the staging cluster first.", 1)
    v2 = add(repo, "Deploys go through the staging cluster, then canary.", 2, supersedes=old.id, version=2)
    add(repo, "Deploys go through staging and canary, then the release train.", 3, supersedes=v2.id, version=3)
    base = add(repo, "Run the tests with make test before review.", 4)
    fork_a = add(repo, "Run the tests with pytest -x before review.", 5, supersedes=base.id, version=2)
    fork_b = add(repo, "Run the tests with tox before review.", 6, supersedes=base.id, version=2)
    ruff = add(repo, "Use ruff for linting the database code.", 7)
    add(repo, "Use flake8 for linting the database code.", 8, related=[(ruff.id, "contradicts")])
    settled = add(repo, "Migrations run by hand on the staging database.", 9)
    said = add(repo, "Migrations run automatically on the staging database.", 10,
               related=[(settled.id, "contradicts")])
    add(repo, "Migrations run automatically on deploy, never by hand.", 11, supersedes=said.id, version=2)
    add(repo, "The docker cache lives in .cache/docker.", 12, related=[(fork_a.id, "relates-to"), (new_id(), "refines")])
    add(repo, "Release notes are written by the reviewer.", 13, supersedes=new_id(), version=2)
    add(repo, "Review the cache settings after a release.", 14, extra={"status": "retracted"})
    add(user, "I review database migrations myself.", 15, scope="user", category="user-facts",
        related=[(settled.id, "refines")])
    add(user, "I prefer tests with docker over mocks; ruff too.", 16, scope="user", category="coding-preferences",
        related=[(fork_b.id, "contradicts")])
    return repo, user, made


def engines(repo, user, embedder):
    full = RecallEngine(Workspace.open(repo_dir=repo, user_dir=user), embedder=embedder)
    full.refresh()
    lazy = RecallEngine(Workspace.open(repo_dir=repo, user_dir=user), embedder=embedder, lazy=True)
    lazy.refresh()
    return full, lazy


def queries() -> list[str]:
    return [*WORDS, "how do we deploy", "linting", "who reviews migrations", "release train canary"]


def same_answers(full: RecallEngine, lazy: RecallEngine) -> None:
    for text in queries():
        for hops in (0, 1, 2):
            for history in (False, True):
                query = dict(text=text, k=6, hops=hops, history=history)
                want = [h.to_dict() for h in full.recall(Query(**query), refresh=False).hits]
                got = [h.to_dict() for h in lazy.recall(Query(**query), refresh=False).hits]
                assert got == want, query
        for scope, category in (("user", None), (None, "project-conventions")):
            query = dict(text=text, k=6, scope=scope, category=category)
            assert ([h.to_dict() for h in lazy.recall(Query(**query), refresh=False).hits]
                    == [h.to_dict() for h in full.recall(Query(**query), refresh=False).hits])


def test_a_lazy_recall_answers_as_the_full_snapshot_without_loading_it(stores, real_embedder):
    repo, user, made = stores
    full, lazy = engines(repo, user, real_embedder)
    snap = lazy.snapshot
    assert isinstance(snap, LazySnapshot)
    same_answers(full, lazy)
    graph, whole = snap.graph, full.snapshot.graph
    for memory in made:
        i = memory.id
        assert (i in graph, graph.is_head(i), graph.head_of(i), graph.predecessors(i)) == \
               (i in whole, whole.is_head(i), whole.head_of(i), whole.predecessors(i))
        assert graph.superseded_by.get(i) == whole.superseded_by.get(i)
        assert graph.conflicts.get(i) == whole.conflicts.get(i)
        for hops in (1, 2):
            assert graph.neighbours(i, hops) == whole.neighbours(i, hops)
    assert graph.newest_timestamp == whole.newest_timestamp
    assert graph.conflicts and whole.conflicts
    assert snap._view._full is None  # nothing above needed every record
    # what a recall does not ask comes from the full snapshot, loaded then, once
    assert sorted(m.id for m in snap.memories) == sorted(m.id for m in full.snapshot.memories)
    assert len(snap.problems) == len(full.snapshot.problems) > 0  # the dangling edges
    assert graph.forks() == whole.forks() and len(graph) == len(whole)
    assert dict(graph.conflicts) == whole.conflicts
    assert snap._view._full is not None and not isinstance(lazy.snapshot, LazySnapshot)
    same_answers(full, lazy)


def test_after_a_change_the_lazy_engine_reads_the_cache_again(stores, real_embedder):
    repo, user, _ = stores
    full, lazy = engines(repo, user, real_embedder)
    lazy.recall(Query("deploys"), refresh=False)
    newer = make_memory(body="Deploys need a green docker build first.", **_at(30))
    write_memory(repo, newer)
    lazy.refresh()
    full.refresh()
    assert isinstance(lazy.snapshot, LazySnapshot)
    assert newer.id in [h.id for h in lazy.recall(Query("docker build deploys", k=3), refresh=False).hits]
    same_answers(full, lazy)


def test_the_same_id_in_two_files_loads_the_full_snapshot(stores, real_embedder):
    repo, user, made = stores
    twin = made[3]
    write_memory(user, make_memory(body="Run the tests in the user store too.", id=twin.id, scope="user",
                                   category="user-facts", **_at(40)))
    full, lazy = engines(repo, user, real_embedder)
    assert not isinstance(lazy.snapshot, LazySnapshot)  # which file wins is the full load's to say
    same_answers(full, lazy)


def test_a_cache_whose_links_fell_behind_is_filled_again(stores, real_embedder):
    """A forgemem that did not keep the links wrote the cache last: they are made again from the records."""
    repo, user, _ = stores
    full, lazy = engines(repo, user, real_embedder)
    db_path = repo.parent / "cache" / "repo.sqlite"
    db = sqlite3.connect(db_path)
    db.execute("DELETE FROM links")
    db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
    db.commit()
    db.close()
    again = RecallEngine(Workspace.open(repo_dir=repo, user_dir=user), embedder=real_embedder, lazy=True)
    again.refresh()
    assert isinstance(again.snapshot, LazySnapshot)
    assert again.indexes()["repo"].db.execute("SELECT count(*) FROM links").fetchone()[0] > 0
    same_answers(full, again)


def test_a_mapped_vector_index_is_copied_before_it_changes(stores, real_embedder):
    """The FAISS file is memory-mapped when read; a long-lived engine changes a copy of its own in place."""
    repo, user, _ = stores
    full, _ = engines(repo, user, real_embedder)
    full.recall(Query("deploys"), refresh=False)  # wrote the FAISS files
    server = RecallEngine(Workspace.open(repo_dir=repo, user_dir=user), embedder=real_embedder)
    server.refresh()
    server.recall(Query("deploys"), refresh=False)
    vectors = server.indexes()["repo"]._faiss
    assert vectors._mapped
    newer = make_memory(body="Zebra crossings near the office are painted yellow.", **_at(50))
    write_memory(repo, newer)
    server.refresh()
    hits = server.recall(Query("painted road markings", k=2), refresh=False).hits
    assert not vectors._mapped and hits[0].id == newer.id and hits[0].dense_rank == 1
