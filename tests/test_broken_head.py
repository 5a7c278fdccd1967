"""A newest version that cannot be read does not bring back the version it replaced.

A git merge that leaves conflict markers in the newest version of a memory (or any hand edit that breaks
its YAML) makes that file give no memory. The version it superseded must not become current again: the
user changed their mind, and the stale rule would be recalled and injected into every prompt. The broken
file's raw text still names what it supersedes; that is read (`rawtext.recover_supersedes`), kept in the
cache with the file's problems, and holds the old version back (`MemoryGraph.held_back`) in the full
snapshot and in the lazy recall alike, until the file is mended.

Real stores in temp folders, the real CLI in-process, real caches.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from forgemem.recall.engine import RecallEngine
from forgemem.recall.rank import Query
from forgemem.store.rawtext import recover_supersedes
from forgemem.workspace import Workspace

from .conftest import HashEmbedder

OLD = "mem_2e3a569e-3494-4fa9-b67d-b93868eeca3f"
NEW = "mem_71cced05-87f6-4610-988f-fbb2c0c4d9f3"
OTHER = "mem_0a0a0a0a-3494-4fa9-b67d-b93868eeca3f"


@pytest.fixture
def repo(git_repo, cli, monkeypatch) -> Path:
    monkeypatch.chdir(git_repo)
    assert cli("init").code == 0
    return git_repo / ".forge" / "memory"


def add(cli, text: str, *more: str) -> dict:
    result = cli("add", text, "-c", "project-conventions", "--json", *more)
    assert result.code == 0, result.err
    return result.json()


def conflict_in_supersedes(path: Path, other_side: str) -> None:
    """What `git merge` leaves when both branches wrote a new version of the same memory."""
    text = path.read_text()
    start = text.index("supersedes:")
    end = text.index("\n", start)
    ours = text[start:end]
    path.write_text(text[:start] + f"<<<<<<< HEAD\n{ours}\n=======\n{other_side}\n>>>>>>> feature" + text[end:])


@pytest.fixture
def changed_mind(repo, cli) -> tuple[dict, dict, str]:
    old = add(cli, "Use poetry for dependency management.")
    new = add(cli, "Use uv, not poetry, for dependency management.", "--supersedes", old["id"])
    good = Path(new["path"]).read_text()
    conflict_in_supersedes(Path(new["path"]), f"supersedes: {old['id']}\nversion: 3")
    return old, new, good


# ------------------------------------------------------------------ what the user sees


def test_the_old_version_is_not_recalled_listed_or_injected(changed_mind, cli):
    old, new, _ = changed_mind
    recall = cli("recall", "dependency management", "--lexical-only", "--json").json()
    assert [r["id"] for r in recall["results"]] == []
    assert any("could not be read" in note for note in recall["notes"])
    context = cli("context", "which dependency manager do we use", "--json").json()
    assert "poetry" not in json.dumps(context.get("memories", context))
    assert "poetry" not in cli("list").out
    assert old["id"][4:12] in cli("list", "--all-versions").out  # still there, as an older version


def test_show_says_which_unreadable_file_supersedes_it(changed_mind, cli):
    old, new, _ = changed_mind
    shown = cli("show", old["id"], "--json").json()
    assert shown["head"] is False and shown["superseded_by"] == []
    assert shown["superseded_by_unreadable"] == new["path"]
    text = cli("show", old["id"]).out
    assert "which cannot be read" in text and Path(new["path"]).name in text
    assert "cannot be read" in cli("slash", f"/memory show {old['id'][4:12]}").out


def test_mending_the_file_brings_the_new_version_back(changed_mind, cli):
    old, new, good = changed_mind
    assert cli("recall", "dependency management", "--lexical-only", "--json").json()["results"] == []
    Path(new["path"]).write_text(good)
    ids = [r["id"] for r in cli("recall", "dependency management", "--lexical-only", "--json").json()["results"]]
    assert ids == [new["id"]]
    assert cli("show", old["id"], "--json").json()["superseded_by_unreadable"] is None


def test_superseding_or_forgetting_the_old_version_says_to_mend_the_broken_file(changed_mind, cli, repo):
    old, new, _ = changed_mind
    files = sorted(repo.rglob("*.md"))
    for args in (("add", "Use pdm for dependency management.", "--supersedes", old["id"]), ("forget", old["id"])):
        result = cli(*args)
        assert result.code == 2, result.out
        assert "already superseded by" in result.err and Path(new["path"]).name in result.err
        assert "cannot be read" in result.err and "forgemem validate" in result.err
    assert sorted(repo.rglob("*.md")) == files  # nothing written


def test_a_broken_file_that_supersedes_nothing_holds_nothing_back(repo, cli):
    first = add(cli, "Use poetry for dependency management.")
    other = add(cli, "Deploy on Tuesdays only.")
    path = Path(other["path"])
    path.write_text(path.read_text().replace("category: project-conventions", "category: [project-conventions"))
    ids = [r["id"] for r in cli("recall", "dependency management", "--lexical-only", "--json").json()["results"]]
    assert ids == [first["id"]]


# ------------------------------------------------------------------ both recall paths, and an older cache


def _recall_ids(engine: RecallEngine) -> list[str]:
    return [h.memory.id for h in engine.recall(Query(text="dependency management poetry uv", k=5)).hits]


def test_full_and_lazy_recall_hold_the_old_version_back(changed_mind, repo, tmp_path):
    old, new, _ = changed_mind
    user = tmp_path / "home" / ".forge" / "memory"
    for lazy in (False, True):
        engine = RecallEngine(Workspace.open(repo_dir=repo, user_dir=user), embedder=HashEmbedder(), lazy=lazy)
        engine.refresh()
        assert old["id"] not in _recall_ids(engine)
        assert not engine.snapshot.graph.is_head(old["id"])
        assert engine.snapshot.graph.head_of(old["id"]) == []


def test_a_cache_written_before_the_hint_was_kept_reads_the_broken_file_again(changed_mind, repo, tmp_path):
    old, new, _ = changed_mind
    user = tmp_path / "home" / ".forge" / "memory"

    def engine() -> RecallEngine:
        found = RecallEngine(Workspace.open(repo_dir=repo, user_dir=user), embedder=HashEmbedder(), lazy=True)
        found.refresh()
        return found

    engine()
    db = sqlite3.connect(repo.parent / "cache" / "repo.sqlite")
    with db:  # as an older forgemem wrote it: the problems without `supersedes`, no meta key
        for path, problems in db.execute("SELECT path, problems FROM files WHERE problems IS NOT NULL").fetchall():
            stripped = [{k: v for k, v in p.items() if k != "supersedes"} for p in json.loads(problems)]
            db.execute("UPDATE files SET problems = ? WHERE path = ?", (json.dumps(stripped), path))
        db.execute("DELETE FROM meta WHERE key = 'broken_supersedes'")
    db.close()
    assert old["id"] not in _recall_ids(engine())


# ------------------------------------------------------------------ reading the raw text


@pytest.mark.parametrize("front", [
    f"supersedes: {OLD}",
    f"supersedes: '{OLD}'",
    f"supersedes: [{OLD}, {OTHER}]",
    f"supersedes:\n  - {OLD}\n  - \"{OTHER}\"",
    f"<<<<<<< HEAD\nsupersedes: {OLD}\n=======\nsupersedes: {OTHER}\n>>>>>>> feature",
])
def test_recover_supersedes_reads_every_form(front):
    text = f"---\nid: {NEW}\nversion: 2\n{front}\nrelated: [\n---\nUse uv.\n"
    found = recover_supersedes(text)
    assert OLD in found and set(found) <= {OLD, OTHER}


def test_recover_supersedes_ignores_the_body_the_own_id_and_other_fields():
    text = (f"---\nid: {NEW}\nsupersedes: {NEW}\nrelated:\n  - id: {OTHER}\n    relationship: refines\n"
            f"category: [\n---\nsupersedes: {OLD}\n")
    assert recover_supersedes(text) == ()
    assert recover_supersedes(f"---\r\nid: {NEW}\r\nsupersedes: {OLD}\r\n---\r\n") == (OLD,)
    assert recover_supersedes(b"\xff\xfe garbage") == ()
