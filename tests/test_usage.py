"""Usage data (recalls, feedback) is the user's: it survives every rebuild of the cache."""

from __future__ import annotations

import sqlite3

from forgemem import usage as usage_module
from forgemem.store.folder import Store
from forgemem.usage import Usage
from forgemem.workspace import Workspace

from .conftest import make_memory, write_memory


def test_the_access_log_stays_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(usage_module, "ACCESS_KEEP", 50)
    monkeypatch.setattr(usage_module, "ACCESS_PRUNE_EVERY", 20)
    folder = tmp_path / ".forge" / "memory"
    folder.mkdir(parents=True)
    usage = Usage(Store("repo", folder))
    usage.log(["mem_a"], "useful")
    for n in range(40):
        usage.log([f"mem_{n}", "mem_x", "mem_y"], "recalled")
    rows = usage.db.execute("SELECT count(*) FROM access WHERE event = 'recalled'").fetchone()[0]
    assert rows <= 50 + 20 * 3
    assert usage.feedback() == {"mem_a": (1, 0)}  # feedback is never pruned
    assert usage.access_counts()["mem_39"]["recalled"] == 1  # the newest are kept


def test_feedback_and_recall_counts_survive_a_cache_rebuild(cli, tmp_path, isolated_home):
    """The bug: `index --rebuild` (doctor's repair, corrupt-cache recovery) deleted the feedback marks."""
    repo = tmp_path / "project" / ".forge" / "memory"
    kept = write_memory(repo, make_memory("Run the tests with make test."))
    write_memory(repo, make_memory("Deploy with make deploy."))
    base = ("--repo-dir", str(repo))
    memory_id = cli(*base, "list", "--json").json()[0]["id"]
    assert cli(*base, "recall", "make test", "--lexical-only").code == 0
    assert cli(*base, "feedback", memory_id[:12], "wrong").code == 0
    before = cli(*base, "stats", "--json").json()
    assert memory_id in before["health"]["marked_wrong"]
    assert cli(*base, "index", "--rebuild", "--lexical-only").code == 0
    (repo.parent / "cache").joinpath("repo.sqlite").unlink()  # and the cache deleted outright
    after = cli(*base, "stats", "--json").json()
    assert after["health"]["marked_wrong"] == before["health"]["marked_wrong"]
    assert after["health"]["never_recalled"] == before["health"]["never_recalled"]
    assert kept.exists()
    # nothing of it is in the store or the cache: the user's own folder, private
    [path] = (isolated_home / ".forge" / "usage").glob("repo-*.sqlite")
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_usage_an_older_forgemem_kept_in_the_cache_is_adopted_once(tmp_path):
    folder = tmp_path / ".forge" / "memory"
    folder.mkdir(parents=True)
    cache = tmp_path / ".forge" / "cache"
    cache.mkdir()
    old = sqlite3.connect(cache / "repo.sqlite")
    old.executescript("CREATE TABLE access(memory_id TEXT, at REAL, event TEXT);"
                      "CREATE TABLE feedback(memory_id TEXT PRIMARY KEY, useful INTEGER, wrong INTEGER);"
                      "INSERT INTO access VALUES ('mem_a', 1.0, 'recalled');"
                      "INSERT INTO feedback VALUES ('mem_a', 2, 1);")
    old.commit()
    old.close()
    usage = Usage(Store("repo", folder))
    assert usage.feedback() == {"mem_a": (2, 1)}
    assert usage.access_counts()["mem_a"]["recalled"] == 1
    usage.close()
    again = Usage(Store("repo", folder))
    assert again.feedback() == {"mem_a": (2, 1)}  # not adopted twice


def test_the_workspace_records_feedback_on_the_current_version(tmp_path):
    repo = tmp_path / ".forge" / "memory"
    ws = Workspace.open(repo_dir=repo, user_dir=tmp_path / "u")
    repo.mkdir(parents=True)
    old, _ = ws.add("Use poetry.", scope="repo", category="project-conventions")
    new, _ = ws.add("Use uv.", supersedes=[old.id])
    target = ws.feedback(old.id[:12], "useful")
    assert target.id == new.id and ws.usage()["repo"].feedback() == {new.id: (1, 0)}
