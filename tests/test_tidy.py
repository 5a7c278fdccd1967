"""A store that stays clean: `add` warns about near-duplicates and likely contradictions, `forgemem tidy`
walks through them (and conflicts, stale and long-unused memories) one decision at a time, and `review`
flags memories citing what no longer exists. Real stores in real git repositories, the real embedding model,
real usage data; interactive answers through typer's CliRunner."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from forgemem.cli.main import app
from forgemem.curate import nearby
from forgemem.curate import tidy as tidy_module
from forgemem.store.model import short
from forgemem.workspace import Workspace, init_forge_dir

from .conftest import git, make_memory, snapshot_bytes, write_memory

CATEGORY = "project-conventions"


@pytest.fixture
def repo(empty_store_repo, monkeypatch, real_embedder) -> Path:
    """A git project with an empty repo store, as the current folder (the model exported once per session)."""
    monkeypatch.chdir(empty_store_repo)
    return empty_store_repo


def add(cli, text: str, *args: str) -> dict:
    result = cli("add", text, "-c", CATEGORY, *args, "--json")
    assert result.code == 0, result.err
    return result.json()


def invoke(*args: str, input: str | None = None):
    """`forgemem ARGS` through typer's CliRunner; `input` is what the person types."""
    result = CliRunner().invoke(app, list(args), input=input)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def memory_files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in (root / ".forge" / "memory").rglob("*.md")}


def heads(root: Path) -> dict[str, str]:
    """Current memories' id -> text."""
    return {m.id: m.body for m in Workspace.open(cwd=root).load().heads()}


# ------------------------------------------------------------------ what counts as near (the real model)


@pytest.mark.parametrize(("a", "b", "kind"), [
    ("Do not deploy on Fridays.", "Never deploy on a Friday.", "duplicate"),
    ("Run the test suite with make test.", "Run the test suite with `make test`.", "duplicate"),
    ("Retry failed uploads 3 times.", "Retry failed uploads 5 times.", "contradiction"),
    ("Do not deploy on Fridays.", "Deploy on Fridays.", "contradiction"),
    ("Always write type hints for new functions.", "Never write type hints; we keep the code untyped.",
     "contradiction"),
    ("Never push directly to main.", "Push directly to main for small fixes.", "contradiction"),
    ("We squash-merge pull requests.", "Never squash-merge pull requests; keep the commits.", "contradiction"),
    # a negation aimed at a name the other does not mention is no contradiction
    ("Use ruff for linting.", "Use ruff, not flake8, for linting.", None),
    # the same subject, far apart in meaning: neither
    ("Use pytest for tests.", "Do not use unittest for tests.", None),
    ("Log with structlog.", "Do not log secrets.", None),
    ("Use pytest for tests.", "Deploy with helm charts.", None),
])
def test_near_pairs_judged_with_the_real_model(real_embedder, a, b, kind):
    first, second = make_memory(a), make_memory(b)
    found = nearby.near_pairs([first, second], real_embedder.encode([a, b]))
    assert [pair[3] for pair in found] == ([kind] if kind else [])


# ------------------------------------------------------------------ add


def test_add_warns_about_a_near_duplicate_and_still_writes_it(cli, repo):
    old = add(cli, "Do not deploy on Fridays.")
    result = cli("add", "Never deploy on a Friday.", "-c", CATEGORY)
    assert result.code == 0, result.err
    new_id, path = result.out.strip().split("\t")
    assert Path(path).is_file() and new_id in heads(repo)
    warning = (f"forgemem: Similar to {short(old['id'])} (0.8" in result.err
               or f"forgemem: Similar to {short(old['id'])} (0.9" in result.err)
    assert warning, result.err
    command = f'forgemem add "NEW TEXT" --supersedes {short(old["id"])} --supersedes {short(new_id)}'
    assert f"Do not deploy on Fridays. If this replaces it: {command} (one version in place of both)" \
        in result.err
    assert "…" not in result.err.split("If this replaces it:")[1]  # copied as printed, nothing becomes the text

    # following the advice leaves one current memory, and both old files in place
    again = add(cli, "Never deploy on a Friday.", "--supersedes", short(old["id"]), "--supersedes", short(new_id))
    assert list(heads(repo)) == [again["id"]] and again["near_duplicates"] == []
    assert len(memory_files(repo)) == 3


def test_add_json_lists_near_duplicates_and_likely_contradictions(cli, repo):
    typed = add(cli, "Always write type hints for new functions.")
    fridays = add(cli, "Do not deploy on Fridays.")
    assert typed["near_duplicates"] == typed["likely_contradictions"] == []
    data = add(cli, "Never write type hints; we keep the code untyped.")
    assert data["near_duplicates"] == []
    [found] = data["likely_contradictions"]
    assert found["id"] == typed["id"] and found["text"] == "Always write type hints for new functions."
    assert found["why"] == "one says the opposite of the other" and 0.7 <= found["score"] < 0.85
    same = add(cli, "Never deploy on a Friday.")
    [near] = same["near_duplicates"]
    assert near["id"] == fridays["id"] and near["score"] >= nearby.NEAR_AT
    assert set(near) == {"id", "score", "text", "scope", "category"}


def test_add_says_nothing_of_unrelated_memories_or_of_what_it_supersedes(cli, repo):
    first = add(cli, "Run database migrations with make migrate.")
    result = cli("add", "Tag releases as vX.Y.Z on the main branch.", "-c", CATEGORY)
    assert result.code == 0 and result.err == ""
    version = add(cli, "Run database migrations with make db-migrate.", "--supersedes", first["id"])
    assert version["near_duplicates"] == [] and version["likely_contradictions"] == []


def test_add_names_a_near_duplicate_in_the_other_store(cli, repo):
    init_forge_dir(Path.home() / ".forge")
    mine = add(cli, "Use ruff for linting Python code.", "-s", "user")
    result = cli("add", "Use ruff to lint the Python code.", "-c", CATEGORY, "-s", "repo")
    assert result.code == 0
    assert f"Similar to {short(mine['id'])} in the user store" in result.err
    assert f"If one of them is enough: forgemem forget {short(mine['id'])}" in result.err
    assert "--supersedes" not in result.err  # a version never crosses stores


def test_add_without_the_model_writes_and_stays_quiet(cli, repo, monkeypatch):
    add(cli, "Do not deploy on Fridays.")
    monkeypatch.setenv("FORGEMEM_NO_EMBEDDINGS", "1")
    data = add(cli, "Never deploy on a Friday.")
    assert data["near_duplicates"] == [] and data["id"] in heads(repo)


# ------------------------------------------------------------------ tidy


def stale_and_pair(cli, repo: Path) -> dict[str, str]:
    """A near-duplicate pair, a memory citing a file that is then deleted, and one that still holds."""
    (repo / "src").mkdir()
    (repo / "src" / "old.py").write_text("def handler():\n    pass\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "code")
    ids = {
        "older": add(cli, "Do not deploy on Fridays.")["id"],
        "newer": add(cli, "Never deploy on a Friday.")["id"],
        "stale": add(cli, "Request handlers live in `src/old.py`.")["id"],
        "fine": add(cli, "Tag releases as vX.Y.Z on the main branch.")["id"],
    }
    git(repo, "rm", "-q", "src/old.py")
    return ids


def test_tidy_asks_one_decision_at_a_time_and_writes_through_versions(cli, repo):
    ids = stale_and_pair(cli, repo)
    before = memory_files(repo)
    result = invoke("tidy", input="n\nf\n")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "[1/2] near-duplicates" in out and "[2/2] stale" in out
    assert "cites `src/old.py`, which no longer exists" in out
    assert "→ wrote" in out and "→ retracted" in out and "2 changed, 0 kept, 0 skipped" in out
    current = heads(repo)
    assert ids["older"] not in current and ids["newer"] not in current and ids["stale"] not in current
    assert ids["fine"] in current
    assert "Never deploy on a Friday." in current.values() and "Do not deploy on Fridays." not in current.values()
    snap = Workspace.open(cwd=repo).load()
    [merged] = [m for m in snap.heads() if m.body == "Never deploy on a Friday."]
    assert set(merged.supersedes) == {ids["older"], ids["newer"]}
    [retraction] = snap.graph.superseded_by[ids["stale"]]
    assert "cites `src/old.py`, which no longer exists" in snap.get(retraction).body
    after = memory_files(repo)
    assert before < after and len(after - before) == 2  # nothing deleted: a version and a retraction


def test_tidy_dry_run_lists_and_changes_nothing(cli, repo):
    stale_and_pair(cli, repo)
    files = snapshot_bytes(repo / ".forge" / "memory")
    result = cli("tidy", "--dry-run")
    assert result.code == 0, result.err
    assert "[1/2] near-duplicates: cosine 0.8" in result.out and "[2/2] stale" in result.out
    assert "n newer: keep the newer text" in result.out and "2 question(s); nothing was changed" in result.out
    data = cli("tidy", "--dry-run", "--json").json()
    assert [q["kind"] for q in data["questions"]] == ["duplicate", "stale"]
    assert [q["default"] for q in data["questions"]] == ["newer", "skip"] and data["actions"] == []
    assert snapshot_bytes(repo / ".forge" / "memory") == files


def test_tidy_yes_merges_duplicates_and_leaves_contradictions_and_what_is_still_used(cli, repo):
    ids = stale_and_pair(cli, repo)
    contra = [add(cli, "Always write type hints for new functions.")["id"],
              add(cli, "Never write type hints; we keep the code untyped.")["id"]]
    result = cli("tidy", "--yes", "--json")
    assert result.code == 0, result.err
    data = result.json()
    assert [a["done"] for a in data["actions"]] == ["superseded", "skipped", "skipped"]
    assert [q["kind"] for q in data["questions"]] == ["duplicate", "contradiction", "stale"]
    current = heads(repo)
    assert all(i in current for i in (*contra, ids["stale"], ids["fine"]))
    assert ids["older"] not in current and ids["newer"] not in current
    again = cli("tidy", "--yes", "--json").json()
    assert [q["kind"] for q in again["questions"]] == ["contradiction", "stale"]  # the pair is settled


def age(repo: Path, text: str, days: int) -> str:
    """A memory written `days` ago (a file as an older forgemem would have left it)."""
    when = datetime.now(UTC) - timedelta(days=days)
    memory = make_memory(text, created_at=when, updated_at=when)
    write_memory(repo / ".forge" / "memory", memory)
    return memory.id


def recalled(repo: Path, memory_id: str, days_ago: float) -> None:
    """A recall in the store's own usage data, `days_ago` days back."""
    usage = Workspace.open(cwd=repo).usage()["repo"]
    with usage.db:
        usage.db.execute("INSERT INTO access(memory_id, at, event) VALUES (?, ?, 'recalled')",
                         (memory_id, time.time() - days_ago * 86400))


def test_tidy_yes_retracts_only_what_is_both_stale_and_long_unused(cli, repo):
    (repo / "tools").mkdir()
    (repo / "tools" / "gen.py").write_text("print('gen')\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "tools")
    gone_idle = age(repo, "Generate the client with `tools/gen.py` first.", 200)
    gone_used = age(repo, "Run `tools/gen.py` after every schema change.", 200)
    idle = age(repo, "Ask the platform team before adding a new queue.", 200)
    young = age(repo, "Keep the changelog entries short.", 10)
    git(repo, "rm", "-q", "tools/gen.py")
    recalled(repo, gone_used, 3)
    recalled(repo, "mem_00000000-0000-4000-8000-000000000000", 150)  # the access log reaches back past the window
    data = cli("tidy", "--yes", "--json").json()
    asked = {(q["kind"], q["ids"][0]): q for q in data["questions"]}
    assert set(asked) == {("stale", gone_idle), ("stale", gone_used), ("unused", idle)}
    assert asked[("stale", gone_idle)]["default"] == "forget"
    assert "not recalled or injected in 90 days" in asked[("stale", gone_idle)]["detail"]
    assert asked[("stale", gone_used)]["default"] == asked[("unused", idle)]["default"] == "skip"
    current = heads(repo)
    assert gone_idle not in current and all(i in current for i in (gone_used, idle, young))
    # a longer window: nothing is old enough, and the log does not reach back that far
    wider = cli("tidy", "--dry-run", "--json", "--unused-days", "365").json()
    assert [q["kind"] for q in wider["questions"]] == ["stale"]
    assert any("does not reach back 365 days" in note for note in wider["notes"])


def test_unused_is_not_judged_until_the_access_log_reaches_back(cli, repo):
    idle = age(repo, "Ask the platform team before adding a new queue.", 200)
    recalled(repo, idle, 5)
    data = cli("tidy", "--dry-run", "--json").json()
    assert data["questions"] == []
    assert data["notes"] == ["long-unused memories not judged in the repo store(s): the access log does not reach "
                             "back 90 days yet"]


def test_keeping_is_remembered_and_skipping_is_not(cli, repo):
    ids = stale_and_pair(cli, repo)
    result = invoke("tidy", input="b\ns\n")
    assert result.exit_code == 0 and "0 changed, 1 kept, 1 skipped" in result.output, result.output
    later = cli("tidy", "--dry-run", "--json").json()
    assert [(q["kind"], q["ids"]) for q in later["questions"]] == [("stale", [ids["stale"]])]
    assert invoke("tidy", input="k\n").exit_code == 0
    assert cli("tidy", "--dry-run", "--json").json()["questions"] == []
    assert ids["older"] in heads(repo) and ids["newer"] in heads(repo)


def test_quit_leaves_the_rest_and_full_words_are_answers(cli, repo):
    ids = stale_and_pair(cli, repo)
    result = invoke("tidy", input="older\nq\n")
    assert result.exit_code == 0, result.output
    assert "1 changed, 0 kept, 0 skipped, 1 not asked" in result.output
    current = heads(repo)
    assert "Do not deploy on Fridays." in current.values() and ids["stale"] in current


def test_a_conflict_is_resolved_with_the_text_chosen(cli, repo):
    a = add(cli, "Deploy from the release branch.")["id"]
    b = add(cli, "Deploy from main; the release branch is gone.", "--relates", f"{a}:contradicts")["id"]
    data = cli("tidy", "--dry-run", "--json").json()
    [question] = [q for q in data["questions"] if q["kind"] == "conflict"]
    assert set(question["ids"]) == {a, b} and question["default"] == "skip"
    second = question["ids"].index(b) + 1
    result = invoke("tidy", input=f"{second}\n" + "s\n" * 5)
    assert result.exit_code == 0, result.output
    current = heads(repo)
    assert a not in current and b not in current
    assert "Deploy from main; the release branch is gone." in current.values()
    assert cli("conflicts").code == 0


def test_a_fork_is_settled_with_one_version_over_both_heads(cli, repo):
    folder = repo / ".forge" / "memory"
    base = make_memory("Deploy with the old script.")
    write_memory(folder, base)
    ours = make_memory("Deploy with `make deploy`; the old script is gone.", supersedes=base.id, version=2)
    theirs = make_memory("Deploy through the CI pipeline only.", supersedes=base.id, version=2)
    write_memory(folder, ours)
    write_memory(folder, theirs)
    [question] = cli("tidy", "--dry-run", "--json").json()["questions"]
    assert question["kind"] == "conflict" and set(question["ids"]) == {ours.id, theirs.id}
    assert question["detail"] == "fork: newest versions of one memory"
    pick = question["ids"].index(theirs.id) + 1
    assert invoke("tidy", input=f"{pick}\n").exit_code == 0
    snap = Workspace.open(cwd=repo).load()
    [head] = snap.heads()
    assert head.body == "Deploy through the CI pipeline only." and set(head.supersedes) == {ours.id, theirs.id}
    assert head.version == 3 and snap.graph.forks() == {}


def test_near_duplicates_across_stores_retract_one_side(cli, repo):
    init_forge_dir(Path.home() / ".forge")
    mine = add(cli, "Use ruff for linting Python code.", "-s", "user")["id"]
    ours = add(cli, "Use ruff to lint the Python code.", "-s", "repo")["id"]
    data = cli("tidy", "--yes", "--json").json()
    [question] = data["questions"]
    assert set(question["choices"]) == {"repo", "user", "both", "skip"} and data["actions"][0]["done"] == "skipped"
    assert invoke("tidy", input="r\n").exit_code == 0
    current = heads(repo)
    assert ours in current and mine not in current


def test_an_answer_to_a_memory_changed_meanwhile_is_skipped(cli, repo, real_embedder):
    ids = stale_and_pair(cli, repo)
    workspace = Workspace.open(cwd=repo)
    report = tidy_module.find(workspace, embedder=real_embedder)
    [pair] = [q for q in report.questions if q.kind == "duplicate"]
    workspace.forget(ids["older"], reason="settled elsewhere")
    action = tidy_module.apply(Workspace.open(cwd=repo), pair, "newer")
    assert action["done"] == "skipped" and "is no longer current" in action["why"]
    assert ids["newer"] in heads(repo)


def test_tidy_without_answers_is_a_clear_error(cli, repo):
    ids = stale_and_pair(cli, repo)
    files = snapshot_bytes(repo / ".forge" / "memory")
    result = cli("tidy", stdin="")
    assert result.code == 2
    assert "tidy asks one question at a time and stdin is not interactive" in result.err
    assert "--yes" in result.err and "--dry-run" in result.err
    assert snapshot_bytes(repo / ".forge" / "memory") == files and ids["older"] in heads(repo)
    done = subprocess.run([sys.executable, "-m", "forgemem", "tidy"], cwd=repo, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "stdin is not interactive" in done.stderr and done.stdout == ""
    assert cli("tidy", "--yes", "--dry-run").code == 2
    assert "--unused-days must be at least 1" in cli("tidy", "--yes", "--unused-days", "0").err


# ------------------------------------------------------------------ review


def test_review_flags_memories_citing_what_no_longer_exists(cli, repo):
    (repo / "src").mkdir()
    (repo / "src" / "old.py").write_text("class LegacyRouter:\n    pass\n")
    (repo / "src" / "keep.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "code")
    cites = add(cli, "Routes are registered in `src/old.py` by `LegacyRouter`.")["id"]
    always = add(cli, "The old `src/never.py` module was removed long ago.")["id"]
    fine = add(cli, "Settings live in `src/keep.py`.")["id"]
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "memories")
    assert "Cites what no longer exists" not in cli("review").out  # nothing gone yet

    git(repo, "rm", "-q", "src/old.py")
    result = cli("review")
    assert result.code == 0, result.out + result.err
    assert "No memory changes." in result.out
    assert (f"- `{short(cites)}` cites `src/old.py`, which no longer exists (gone since this change): "
            "Routes are registered in `src/old.py` by `LegacyRouter`.") in result.out
    assert f"`{short(cites)}` cites `LegacyRouter`, which appears nowhere in the repository" in result.out
    assert short(always) not in result.out and short(fine) not in result.out  # stale before: not this diff's
    stale = cli("review", "--json").json()["stale"]
    assert [(s["id"], s["name"], s["changed"]) for s in stale] == [(cites, "src/old.py", False),
                                                                    (cites, "LegacyRouter", False)]

    git(repo, "commit", "-q", "-m", "drop old.py")
    new = add(cli, "Background jobs start in `src/jobs.py`.")["id"]
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a memory citing a file that is not there")
    ranged = cli("review", "HEAD~2..HEAD", "--json").json()["stale"]
    assert {(s["id"], s["name"], s["changed"]) for s in ranged} == {
        (cites, "src/old.py", False), (cites, "LegacyRouter", False), (new, "src/jobs.py", True)}
    text = cli("review", "HEAD~1..HEAD").out
    assert f"`{short(new)}` cites `src/jobs.py`, which no longer exists (written in this change)" in text
    assert short(cites) not in text.split("Cites what no longer exists")[1]  # that was the earlier commit's
