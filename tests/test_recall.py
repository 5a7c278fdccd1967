"""Hybrid recall with the real embedding model, real FAISS and real files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from forgemem.recall.engine import RecallEngine
from forgemem.recall.rank import Query
from forgemem.workspace import Workspace

from .conftest import SAMPLES, make_memory, write_memory

SAMPLE_DIRS = ["--repo-dir", str(SAMPLES / "repo/.forge/memory"), "--user-dir", str(SAMPLES / "user/.forge/memory")]


@pytest.fixture
def samples(tmp_path):
    """A private copy of the sample store (recall writes caches next to it)."""
    import shutil

    shutil.copytree(SAMPLES, tmp_path / "samples", ignore=shutil.ignore_patterns("cache"))
    return tmp_path / "samples"


@pytest.fixture
def engine(samples, real_embedder):
    ws = Workspace.open(repo_dir=samples / "repo/.forge/memory", user_dir=samples / "user/.forge/memory")
    return RecallEngine(ws, embedder=real_embedder)


@pytest.mark.slow
def test_onnx_vectors_match_sentence_transformers(real_embedder, model_cache):
    from forgemem.index.embedding import PROBE_SENTENCES, SentenceTransformerEmbedder, default_model_dir

    texts = ["How do I run the tests?", "Berth availability is computed live.", *PROBE_SENTENCES]
    onnx = real_embedder.encode(texts)
    reference = SentenceTransformerEmbedder(default_model_dir(), "reference").encode(texts)
    cosines = np.sum(onnx * reference, axis=1)
    assert cosines.min() >= 1 - 1e-4
    assert real_embedder.dim == 384 and real_embedder.id.startswith("all-MiniLM-L6-v2@")
    exports = list(model_cache.glob("*/export.json"))
    assert exports and json.loads(exports[0].read_text())["min_cosine"] >= 1 - 1e-4


def test_semantic_match_without_shared_words(engine):
    # No content word of the query appears in the memory: only the dense leg can find it.
    hits = engine.recall(Query("which package manager should I use for the web frontend", k=3)).hits
    assert "pnpm" in hits[0].memory.body
    assert hits[0].dense_rank == 1


def test_superseded_versions_resolve_to_the_head(engine):
    result = engine.recall(Query("run the test suite with pytest", k=5))
    top = result.hits[0]
    assert top.memory.version == 3 and "make test-all" in top.memory.body
    # the older versions matched, but only the head is returned, saying so
    assert len(top.matched) == 2
    assert all(h.memory.version == 3 or "test suite" not in h.memory.body for h in result.hits)
    old_ids = {m.id for m in engine.snapshot.graph.history(top.id)[:-1]}
    assert not old_ids & {h.id for h in result.hits}
    with_history = engine.recall(Query("run the test suite with pytest", k=5, history=True)).hits
    assert old_ids <= {h.id for h in with_history}
    assert all(h.to_dict()["superseded_by"] for h in with_history if h.id in old_ids)


def test_retracted_memories_are_not_recalled(samples, real_embedder, cli):
    dirs = ["--repo-dir", str(samples / "repo/.forge/memory"), "--user-dir", str(samples / "user/.forge/memory")]
    before = cli(*dirs, "recall", "Stripe webhook idempotent", "-k", "1", "--json").json()["results"][0]
    assert "Stripe" in before["content"]
    assert cli(*dirs, "forget", before["id"]).code == 0
    after = cli(*dirs, "recall", "Stripe webhook idempotent", "-k", "3", "--json").json()["results"]
    assert before["id"] not in {r["id"] for r in after}
    assert all(not r["content"].startswith("Retracted") for r in after)


def test_hops_pull_up_a_linked_memory_and_report_the_path(tmp_path, real_embedder):
    folder = tmp_path / "p/.forge/memory"
    anchor = make_memory(body="Deploys go out through Argo CD after the staging smoke tests pass.")
    linked = make_memory(body="Zebra crossings are painted yellow in this town.", related=[(anchor.id, "refines")])
    two_hops = make_memory(body="Our cat is called Miso.", related=[(linked.id, "relates-to")])
    distractors = [make_memory(body=text) for text in (
        "Prefer early returns over nested ifs.",
        "The staging database is harbor_staging.",
        "Use pathlib instead of os.path.",
    )]
    for m in (anchor, linked, two_hops, *distractors):
        write_memory(folder, m)
    engine = RecallEngine(Workspace.open(repo_dir=folder, user_dir=tmp_path / "u"), embedder=real_embedder)

    def top(hops, k=2):
        return engine.recall(Query("Argo CD deploys", k=k, hops=hops)).hits

    assert [h.id for h in top(0)][0] == anchor.id and linked.id not in [h.id for h in top(0)]
    one = top(1)
    assert [h.id for h in one] == [anchor.id, linked.id]
    assert one[1].score == pytest.approx(one[0].score * 0.5)
    assert [(s.source, s.type, s.target, s.reverse) for s in one[1].via] == [(anchor.id, "refines", linked.id, True)]
    assert one[1].to_dict()["via"] == [{"from": anchor.id, "relationship": "refines", "to": linked.id, "reverse": True}]
    two = top(2, k=3)
    assert [h.id for h in two] == [anchor.id, linked.id, two_hops.id]
    assert [s.type for s in two[2].via] == ["refines", "relates-to"]
    assert two_hops.id not in [h.id for h in top(1, k=3)]


def test_both_scopes_searched_and_labelled(engine):
    hits = engine.recall(Query("git push and commits", k=10)).hits
    scopes = {h.memory.scope for h in hits}
    assert scopes == {"repo", "user"}
    assert all(h.to_dict()["scope"] == h.memory.scope for h in hits)
    only_user = engine.recall(Query("git push and commits", k=10, scope="user")).hits
    assert only_user and {h.memory.scope for h in only_user} == {"user"}


def test_filters_by_category_and_tag(engine):
    hits = engine.recall(Query("database", k=10, category="corrections")).hits
    assert hits and {h.memory.category for h in hits} == {"corrections"}
    tagged = engine.recall(Query("database", k=10, tags=("alembic",), hops=0)).hits
    assert tagged and all("alembic" in h.memory.tags for h in tagged)


def test_unresolved_contradictions_are_flagged_and_both_sides_shown(engine):
    hits = engine.recall(Query("staff admin pages HTMX templates", k=3, hops=0)).hits
    ids = [h.id for h in hits]
    flagged = [h for h in hits if h.conflicts]
    assert len(flagged) >= 2
    a, b = flagged[0], flagged[1]
    assert b.id in a.conflicts and a.id in b.conflicts
    assert abs(ids.index(a.id) - ids.index(b.id)) == 1


def test_lexical_only_fallback_says_so(samples, cli, monkeypatch):
    monkeypatch.setenv("FORGEMEM_NO_EMBEDDINGS", "1")
    dirs = ["--repo-dir", str(samples / "repo/.forge/memory"), "--user-dir", str(samples / "user/.forge/memory")]
    result = cli(*dirs, "recall", "alembic migrations", "--json")
    assert result.code == 0
    data = result.json()
    assert data["lexical_only"] is True
    assert data["notes"] == ["lexical search only: embeddings are switched off (FORGEMEM_NO_EMBEDDINGS is set)"]
    assert result.err.count("lexical search only") == 1
    assert "Alembic" in data["results"][0]["content"]
    assert data["results"][0]["explain"]["dense_rank"] is None


def test_missing_model_folder_falls_back_to_lexical(samples, cli, tmp_path):
    (samples / "user/.forge/config.yaml").write_text(f"memory:\n  embedding_model: {tmp_path / 'no-model'}\n")
    dirs = ["--repo-dir", str(samples / "repo/.forge/memory"), "--user-dir", str(samples / "user/.forge/memory")]
    result = cli(*dirs, "recall", "pnpm", "--json")
    assert result.code == 0
    assert result.json()["lexical_only"] is True
    assert "is not a local sentence-transformers model folder" in result.err


def test_recall_json_fields_and_explain(samples, cli):
    dirs = ["--repo-dir", str(samples / "repo/.forge/memory"), "--user-dir", str(samples / "user/.forge/memory")]
    data = cli(*dirs, "recall", "how do I run the tests?", "-k", "3", "--json").json()
    first = data["results"][0]
    for key in ("id", "score", "scope", "category", "path", "version", "content", "head", "superseded_by", "via", "explain"):
        assert key in first
    assert first["head"] == first["id"] and first["version"] == 3
    text = cli(*dirs, "recall", "how do I run the tests?", "-k", "3", "--explain").out
    assert "why:" in text and "lexical rank" in text and "dense rank" in text


def test_batch_mode_answers_every_query_in_one_process(samples, cli, tmp_path):
    dirs = ["--repo-dir", str(samples / "repo/.forge/memory"), "--user-dir", str(samples / "user/.forge/memory")]
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        json.dumps({"id": "a", "query": "which shell do I use"}) + "\n"
        + json.dumps({"id": 7, "query": "money amounts", "k": 2}) + "\n"
    )
    result = cli(*dirs, "recall", "--queries", str(queries))
    assert result.code == 0, result.err
    lines = [json.loads(line) for line in result.out.splitlines()]
    assert [line["id"] for line in lines] == ["a", 7]
    assert "zsh" in lines[0]["results"][0]["content"]
    assert len(lines[1]["results"]) == 2
    queries.write_text("not json\n")
    bad = cli(*dirs, "recall", "--queries", str(queries))
    assert bad.code == 2 and "q.jsonl:1: not a JSON line" in bad.err


def test_index_status_rebuild_and_doctor(samples, cli):
    dirs = ["--repo-dir", str(samples / "repo/.forge/memory"), "--user-dir", str(samples / "user/.forge/memory")]
    first = cli(*dirs, "index", "--json").json()
    assert first["repo"]["added"] == 39 and first["user"]["embedded"] == 13
    status = cli(*dirs, "index", "--status", "--json").json()
    assert all(s["stale"] == [] for s in status["stores"])
    new = samples / "repo/.forge/memory/corrections/new.md"
    new.write_text(
        "---\nid: mem_11111111-2222-4333-8444-555555555555\ncreated_at: 2026-11-21T10:30:00Z\n"
        "updated_at: 2026-11-21T10:30:00Z\nversion: 1\nscope: repo\ncategory: corrections\nsupersedes: null\n"
        "related: []\nsession_id: null\ntrigger: manual\n---\nHand-written memory.\n"
    )
    stale = cli(*dirs, "index", "--status").out
    assert "new: corrections/new.md" in stale
    assert cli(*dirs, "doctor").code == 0
    rebuilt = cli(*dirs, "index", "--rebuild", "--json").json()
    assert rebuilt["repo"]["added"] == 40
    # damage the cache behind forgemem's back: doctor notices and rebuilds
    import sqlite3

    db = sqlite3.connect(samples / "repo/.forge/cache/repo.sqlite")
    db.execute("DELETE FROM fts WHERE rowid IN (SELECT rowid FROM fts LIMIT 3)")
    db.commit()
    db.close()
    doctor = cli(*dirs, "doctor", "--json")
    assert doctor.code == 0
    report = doctor.json()["repo"]
    assert report["disagreements"] == ["lexical index holds 37 entries for 40 memories"]
    assert report["rebuilt"] and report["ok_after"]
