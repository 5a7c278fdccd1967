"""Memory in git: review, proposals, the diff driver, branches and merges, checkouts — real repositories."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from forgemem.recall.engine import RecallEngine
from forgemem.recall.rank import Query
from forgemem.store import memfile
from forgemem.workspace import Workspace, init_forge_dir

from .conftest import HashEmbedder, git, make_memory


@pytest.fixture
def repo(git_repo, monkeypatch) -> Path:
    init_forge_dir(git_repo / ".forge")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "forge")
    monkeypatch.chdir(git_repo)
    return git_repo


def add(cli, *args: str) -> str:
    result = cli("add", "--json", *args)
    assert result.code == 0, result.err
    return result.json()["id"]


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def test_review_explains_a_memory_diff(cli, repo, real_embedder):
    tabs = add(cli, "--category", "coding-preferences", "The user prefers tabs for indentation.")
    deploy = add(cli, "--category", "project-conventions", "We deploy on Fridays after the smoke tests.")
    lint = add(cli, "--category", "project-conventions", "We lint with flake8.")
    htmx = add(cli, "--category", "architectural-decisions", "Admin pages are server-rendered with HTMX.")
    commit(repo, "memories")
    # a captured memory, with provenance
    ws = Workspace.open(cwd=repo)
    captured, _ = ws.add("Don't use --no-git in the tests of main.py.", scope="repo", category="corrections",
                         trigger="compaction", session_id="s-1",
                         source={"transcript": "/home/u/.claude/projects/p/s-1.jsonl", "lines": "2792",
                                 "quote": "don't use --no-git in those tests"})
    spaces = add(cli, "--supersedes", tabs, "The user prefers 4 spaces for indentation, not tabs.")
    # a hand edit
    path = next(p for p in (repo / ".forge/memory").rglob("*.md") if deploy[4:12] in p.name)
    path.write_text(path.read_text().replace("on Fridays", "on Thursdays"))
    # an edge and a conflict
    react = add(cli, "--category", "architectural-decisions", "Admin pages are built in the React app.")
    assert cli("link", react, htmx, "--rel", "contradicts").code == 0
    # a deleted file
    next(p for p in (repo / ".forge/memory").rglob("*.md") if lint[4:12] in p.name).unlink()

    result = cli("review")
    assert result.code == 1  # the deleted file
    text = result.out
    assert text.startswith("### forgemem review: HEAD → working tree")
    assert "2 added, 1 new version(s), 1 hand edit(s), 1 deleted" in text
    assert "**1 conflict(s) created**" in text
    assert f"`{captured.id[4:12]}` repo/corrections: Don't use --no-git" in text
    assert "captured on compaction; from s-1.jsonl:2792 “don't use --no-git in those tests”" in text
    assert f"`{spaces[4:12]}` v2 supersedes `{tabs[4:12]}` v1" in text
    assert "prefers ~~tabs~~ **4 spaces**" in text
    assert "changed body" in text and "~~Fridays~~ **Thursdays**" in text
    assert f"- + `{react[4:12]}` contradicts `{htmx[4:12]}`" in text
    assert "**Deleted files** ⚠" in text and "flake8" in text
    data = cli("review", "--json").json()
    assert [m["id"] for m in data["added"]] == sorted([captured.id, react]) or \
        {m["id"] for m in data["added"]} == {captured.id, react}
    assert data["versions"][0]["supersedes"]["id"] == tabs
    assert ["-", "tabs"] in data["versions"][0]["word_diff"] and ["+", "4 spaces"] in data["versions"][0]["word_diff"]
    assert data["edits"][0]["fields"] == ["body"]
    assert data["conflicts_created"] == [sorted([react, htmx])]
    assert data["deleted"][0]["id"] == lint
    # staged and revision ranges
    git(repo, "add", "-A")
    assert cli("review", "--staged", "--json").json()["deleted"][0]["id"] == lint
    git(repo, "commit", "-q", "-m", "changes")
    assert cli("review").out.endswith("No memory changes.\n")
    ranged = cli("review", "--json", "HEAD~1..HEAD").json()
    assert len(ranged["added"]) == 2 and ranged["old"] == "HEAD~1"
    assert cli("review", "--json", "HEAD~1").json()["versions"][0]["memory"]["id"] == spaces
    assert cli("review", "nope..HEAD").code == 2


def test_review_shows_a_memory_written_and_replaced_within_the_range(cli, repo):
    # capture wrote "black", then the user changed their mind in the same session: one commit holds both files
    black = add(cli, "--category", "project-conventions", "Format code with black.")
    ruff = add(cli, "--supersedes", black, "Format code with ruff format, not black.")
    text = cli("review").out
    assert "1 added, 1 new version(s)" in text
    assert (f"`{black[4:12]}` repo/project-conventions: Format code with black. "
            f"(replaced in this range by `{ruff[4:12]}`)") in text
    assert f"`{ruff[4:12]}` v2 supersedes `{black[4:12]}` v1" in text
    data = cli("review", "--json").json()
    assert [v["supersedes"]["id"] for v in data["versions"]] == [black]
    assert data["versions"][0]["supersedes"]["path"] is not None


def test_proposed_memories_wait_for_review(cli, repo, real_embedder):
    from forgemem.capture.capturer import Capturer
    from forgemem.capture.classify import Batch
    from forgemem.capture.transcripts import Turn

    (repo / ".forge/config.yaml").write_text("memory:\n  capture_review: true\n")
    ws = Workspace.open(cwd=repo)
    capturer = Capturer(ws, RecallEngine(ws, embedder=real_embedder))
    turns = [Turn("s", 0, "user", "In this repo we always squash-merge pull requests.", None, "t.jsonl", 1, 1, 0, 0)]
    [memory] = capturer.run(Batch(turns, "cadence", "s", "t.jsonl")).written
    assert memfile.read_file(memory.path).status == "proposed"
    recalled = cli("recall", "how do we merge pull requests?")
    assert "(proposed: not reviewed yet)" in recalled.out
    assert "**proposed**: `forgemem review --accept` or `--reject`" in cli("review").out
    assert cli("review", "--accept", memory.id[4:12]).code == 0
    accepted = memfile.read_file(memory.path)
    assert accepted.status is None and accepted.body == memory.body
    assert cli("review", "--reject", memory.id).code == 2  # no longer proposed
    [second] = capturer.run(Batch([Turn("s", 2, "user", "Never commit generated protobuf files.", None,
                                        "t.jsonl", 3, 3, 0, 0)], "cadence", "s", "t.jsonl")).written
    assert cli("review", "--reject", second.id).code == 0
    assert not second.path.exists()


def test_diff_driver_makes_git_diff_and_log_readable(cli, repo):
    old = add(cli, "--category", "coding-preferences", "Use black for formatting.")
    commit(repo, "one")
    assert cli("install", "git", "--dry-run").code == 0
    assert not (repo / ".gitattributes").exists()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    assert cli("install", "git").code == 0
    assert (repo / ".gitattributes").read_text() == ".forge/memory/**/*.md diff=forgemem merge=forgemem\n"
    assert "diff-driver" in git(repo, "config", "--local", "diff.forgemem.textconv")
    assert "merge-driver" in git(repo, "config", "--local", "merge.forgemem.driver")
    new = add(cli, "--supersedes", old, "Use ruff format for formatting. Black is gone.")
    commit(repo, "two")
    log = subprocess.run(["git", "log", "-p", "-1", "--", ".forge/memory"], cwd=repo, env=env,
                         capture_output=True, text=True, check=True).stdout
    assert f"+memory {new} v2 · repo/coding-preferences" in log
    assert f"+supersedes {old}" in log
    assert "+Use ruff format for formatting." in log and "+Black is gone." in log
    assert "---\nid:" not in log  # not the raw front matter
    assert cli("uninstall", "git").code == 0
    assert not (repo / ".gitattributes").exists()
    assert subprocess.run(["git", "config", "--local", "diff.forgemem.textconv"], cwd=repo).returncode == 1
    assert subprocess.run(["git", "config", "--local", "merge.forgemem.driver"], cwd=repo).returncode == 1


def test_branches_that_supersede_the_same_memory_fork_and_resolve(cli, repo, real_embedder):
    base = add(cli, "--category", "project-conventions", "Integration tests run against SQLite.")
    commit(repo, "base")
    git(repo, "checkout", "-q", "-b", "alice")
    alice = add(cli, "--supersedes", base, "Integration tests run against Postgres in Docker.")
    commit(repo, "alice")
    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-q", "-b", "bob")
    bob = add(cli, "--supersedes", base, "Integration tests run against a shared staging Postgres.")
    commit(repo, "bob")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-edit", "alice")
    git(repo, "merge", "-q", "--no-edit", "bob")  # one file per memory: no textual conflict at all
    validate = cli("validate")
    assert validate.code == 1 and "fork" in validate.out + validate.err
    hits = cli("recall", "--json", "where do integration tests run?").json()["results"]
    by_id = {h["id"]: h for h in hits}
    assert alice in by_id and bob in by_id
    assert by_id[alice]["conflicts"] == [bob] and by_id[bob]["conflicts"] == [alice]
    review = cli("review", "--json", "HEAD~2..HEAD").json()
    assert review["forks_created"] == [{"base": base, "heads": sorted([alice, bob])}]
    resolved = cli("resolve", "--json", base, "--text", "Integration tests run against Postgres in Docker; "
                   "never against staging.")
    assert resolved.code == 0, resolved.err
    data = resolved.json()
    assert sorted(data["supersedes"]) == sorted([alice, bob]) and data["version"] == 3
    assert cli("validate").code == 0
    hits = cli("recall", "--json", "where do integration tests run?").json()["results"]
    assert hits[0]["id"] == data["id"] and hits[0]["conflicts"] == []
    assert cli("resolve", data["id"], "--text", "x").code == 2  # nothing left to resolve


def test_resolve_in_an_editor_and_conflicts(cli, repo, tmp_path, monkeypatch):
    a = add(cli, "--category", "architectural-decisions", "Admin pages are server-rendered with HTMX.")
    b = add(cli, "--category", "architectural-decisions", "Admin pages are built in the React app.")
    assert cli("link", b, a, "--rel", "contradicts").code == 0
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import sys\nfrom pathlib import Path\np = Path(sys.argv[1])\n"
        "text = p.read_text()\nassert 'HTMX' in text and 'React' in text\n"
        "p.write_text('# comments go\\nAdmin pages use HTMX; React only for the customer app.\\n')\n"
    )
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    result = cli("resolve", "--json", a)
    assert result.code == 0, result.err
    memory = Workspace.open(cwd=repo).load().resolve(result.json()["id"])
    assert memory.body == "Admin pages use HTMX; React only for the customer app."
    assert sorted(memory.supersedes) == sorted([a, b])
    assert cli("conflicts").code == 0


def test_both_branches_adding_memories_merge_cleanly(cli, repo):
    git(repo, "checkout", "-q", "-b", "left")
    left = add(cli, "--category", "project-conventions", "Changelog entries go under Unreleased.")
    commit(repo, "left")
    git(repo, "checkout", "-q", "main")
    right = add(cli, "--category", "coding-preferences", "--scope", "repo", "Prefer dataclasses over dicts for records.")
    commit(repo, "right")
    merged = subprocess.run(["git", "merge", "--no-edit", "left"], cwd=repo, capture_output=True, text=True)
    assert merged.returncode == 0 and "CONFLICT" not in merged.stdout
    assert cli("validate").code == 0
    ids = {m["id"] for m in cli("list", "--json").json()}
    assert {left, right} <= ids


def test_recall_at_an_older_commit_reuses_every_vector(cli, repo):
    first = add(cli, "--category", "project-conventions", "Releases are cut on Tuesdays.")
    commit(repo, "v1")
    second = add(cli, "--supersedes", first, "Releases are cut on Thursdays.")
    extra = add(cli, "--category", "project-conventions", "Hotfixes go straight to main.")
    commit(repo, "v2")
    embedder = HashEmbedder()
    ws = Workspace.open(cwd=repo)
    engine = RecallEngine(ws, embedder=embedder)
    engine.refresh()
    assert len(embedder.encoded) == 3
    query = "when are releases cut?"
    heads = lambda e: {h.id for h in e.recall(Query(query, k=5)).hits}  # noqa: E731
    assert heads(engine) == {second, extra}
    git(repo, "checkout", "-q", "HEAD~1")
    reports = engine.refresh()
    assert heads(engine) == {first}  # that commit's memories
    git(repo, "checkout", "-q", "main")
    reports = engine.refresh()
    assert reports["repo"].reused == 2 and reports["repo"].embedded == 0
    assert len([t for t in embedder.encoded if t != query]) == 3  # no memory was embedded twice
    assert heads(engine) == {second, extra}
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout
    assert status == ""  # the cache never dirties the tree


# ------------------------------------------------------------------ consolidation


@pytest.fixture
def samples(tmp_path) -> tuple[str, str]:
    import shutil

    from .conftest import SAMPLES

    shutil.copytree(SAMPLES, tmp_path / "samples", ignore=shutil.ignore_patterns("cache"))
    return str(tmp_path / "samples/repo/.forge/memory"), str(tmp_path / "samples/user/.forge/memory")


def test_consolidate_on_the_sample_store_merges_what_a_person_would(cli, samples, model_cache):
    from .conftest import snapshot_bytes

    repo_dir, user_dir = samples
    before = snapshot_bytes(Path(repo_dir))
    dry = cli("--repo-dir", repo_dir, "--user-dir", user_dir, "consolidate", "--dry-run", "--json")
    assert dry.code == 0, dry.err
    [cluster] = dry.json()["clusters"]  # only the two money conventions, one refining the other
    assert {s["content"][:20] for s in cluster["sources"]} == {"Amounts in Python co", "Money is stored as i"}
    assert cluster["merged"].startswith("Amounts in Python code are `harbor.billing.money.Money` values")
    assert cluster["merged"].endswith("Money is stored as integer cents plus an ISO currency code; never use "
                                      "float for amounts.")
    assert snapshot_bytes(Path(repo_dir)) == before  # a dry run writes nothing
    proposed = cli("--repo-dir", repo_dir, "--user-dir", user_dir, "consolidate", "--json").json()
    assert proposed["written"] == [] and snapshot_bytes(Path(repo_dir)) == before  # proposes; --yes writes
    done = cli("--repo-dir", repo_dir, "--user-dir", user_dir, "consolidate", "--yes", "--json").json()
    [new_id] = done["written"]
    ws = Workspace.open(repo_dir=repo_dir, user_dir=user_dir)
    merged = ws.load().get(new_id)
    assert sorted(merged.supersedes) == sorted(s["id"] for s in cluster["sources"])
    assert merged.tags == ["billing"] and merged.version == 2 and merged.scope == "repo"
    again = cli("--repo-dir", repo_dir, "--user-dir", user_dir, "consolidate", "--yes", "--json").json()
    assert again == {"clusters": [], "held_apart": [], "written": []}


def test_consolidate_never_crosses_scopes_and_never_settles_a_contradiction(cli, tmp_path, model_cache):
    repo_dir, user_dir = tmp_path / "r/.forge/memory", tmp_path / "u/.forge/memory"
    init_forge_dir(repo_dir.parent)
    init_forge_dir(user_dir.parent)
    base = ("--repo-dir", str(repo_dir), "--user-dir", str(user_dir))
    ws = Workspace.open(repo_dir=repo_dir, user_dir=user_dir)
    ws.add("Always run the linter before committing.", scope="repo", category="project-conventions")
    ws.add("Always run the linter before you commit.", scope="user", category="project-conventions")
    a, _ = ws.add("Use tabs for indentation in Makefiles.", scope="repo", category="coding-preferences")
    b, _ = ws.add("Use tabs for indentation in Makefiles!", scope="repo", category="coding-preferences",
                  related=[(a.id, "contradicts")])
    data = cli(*base, "consolidate", "--yes", "--json").json()
    [cluster] = data["clusters"]
    assert cluster["contradictions"] == [sorted([a.id, b.id])] and cluster["merged"] is None
    assert data["written"] == []


def test_consolidate_never_merges_opposites_or_different_values(cli, tmp_path, model_cache):
    repo_dir, user_dir = tmp_path / "r/.forge/memory", tmp_path / "u/.forge/memory"
    init_forge_dir(repo_dir.parent)
    init_forge_dir(user_dir.parent)
    base = ("--repo-dir", str(repo_dir), "--user-dir", str(user_dir))
    ws = Workspace.open(repo_dir=repo_dir, user_dir=user_dir)
    no, _ = ws.add("Do not deploy on Fridays.", scope="repo", category="project-conventions")
    yes, _ = ws.add("Do deploy on Fridays.", scope="repo", category="project-conventions")
    numbers = [ws.add(f"Parallel memory number {n}.", scope="repo", category="corrections")[0] for n in (12, 19, 20)]
    data = cli(*base, "consolidate", "--yes", "--json").json()
    assert data["written"] == [] and data["clusters"] == []
    apart = {frozenset(entry["ids"]): entry["reason"] for entry in data["held_apart"]}
    assert apart[frozenset((no.id, yes.id))] == "one negates what the other says"
    assert apart[frozenset((numbers[0].id, numbers[1].id))] == "different values: 12 / 19"
    text = cli(*base, "consolidate").out
    assert "kept apart" in text and "different values" in text


def test_a_merge_never_drops_a_value_from_a_source():
    from forgemem.curate.consolidate import merged_text

    class Same:  # every sentence looks the same to it: only the words can keep the 19
        def encode(self, texts):
            import numpy as np

            return np.ones((len(texts), 4), dtype=np.float32) / 2

    memories = [make_memory("Run the suite with pytest -n 4 before a release."), make_memory("Run it with -n 19.")]
    assert merged_text(memories, Same()) == "Run the suite with pytest -n 4 before a release. Run it with -n 19."
    assert merged_text(memories[:1] * 2, Same()) == "Run the suite with pytest -n 4 before a release."


# ------------------------------------------------------------------ staleness


def test_doctor_flags_memories_whose_paths_or_symbols_moved_on(cli, repo):
    (repo / "app").mkdir()
    (repo / "app" / "service.py").write_text("def present_function():\n    return 1\n" * 5)
    (repo / "app" / "models.py").write_text("class BookingModel:\n    pass\n")
    (repo / "docs.md").write_text("docs\n")
    git(repo, "add", "-A")
    past = {**os.environ, "GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z"}
    subprocess.run(["git", "commit", "-q", "-m", "code"], cwd=repo, env=past, check=True)
    keep = add(cli, "--category", "project-conventions",
               "Business rules live in `app/service.py`; call `present_function` from views.")
    gone = add(cli, "--category", "project-conventions", "Booking models are in `app/models.py`.")
    churn = add(cli, "--category", "project-conventions", "Docs for the API are kept in `docs.md`.")
    symbol = add(cli, "--category", "corrections", "Use `OldHelperName` to parse dates, not strptime.")
    user_memory = add(cli, "--category", "coding-preferences", "--scope", "user", "I keep notes in `notes/today.md`.")
    commit(repo, "memories")
    (repo / "app" / "models.py").unlink()
    (repo / "docs.md").write_text("".join(f"new line {n}\n" for n in range(40)))
    git(repo, "add", "-A")
    later = {**os.environ, "GIT_AUTHOR_DATE": "2099-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2099-01-01T00:00:00Z"}
    subprocess.run(["git", "commit", "-q", "-m", "refactor"], cwd=repo, env=later, check=True)
    result = cli("doctor", "--json")
    assert result.code == 0, result.err
    stale = {(f["id"], f["kind"], f["name"]) for f in result.json()["stale"]}
    assert stale == {
        (gone, "missing-path", "app/models.py"),
        (churn, "changed-file", "docs.md"),
        (symbol, "missing-symbol", "OldHelperName"),
    }
    assert keep not in {i for i, _, _ in stale} and user_memory not in {i for i, _, _ in stale}
    text = cli("doctor").out
    assert "stale" in text and "`app/models.py` no longer exists" in text


# ------------------------------------------------------------------ use and feedback


def test_access_log_feedback_and_health(cli, repo, model_cache):
    tests = add(cli, "--category", "project-conventions", "Run the tests with make test.")
    pytest_ = add(cli, "--category", "project-conventions", "Run the tests with pytest -x.")
    other = add(cli, "--category", "project-conventions", "--confidence", "0.2", "Releases are cut on Tuesdays.")
    commit(repo, "memories")
    first = cli("recall", "--json", "--all", "-k", "2", "how do I run the tests?").json()["results"]
    assert {h["id"] for h in first} == {tests, pytest_}
    top, second = first[0]["id"], first[1]["id"]
    health = cli("stats", "--json").json()["health"]
    assert health["never_recalled"] == [other]
    assert health["low_confidence"] == [other]
    assert dict((i, n) for i, n in health["most_recalled"]) == {tests: 1, pytest_: 1}
    assert health["growth"][0]["added"] == 3
    for _ in range(3):
        assert cli("feedback", top, "wrong").code == 0
    assert cli("feedback", second[4:12], "useful").code == 0
    after = cli("recall", "--json", "--all", "-k", "2", "how do I run the tests?").json()["results"]
    assert [h["id"] for h in after] == [second, top]  # the wrong one went down
    assert after[1]["explain"]["priors"]["feedback"] < 0 < after[0]["explain"]["priors"]["feedback"]
    assert cli("stats", "--json").json()["health"]["marked_wrong"] == [top]
    assert "never recalled" in cli("stats").out
    assert cli("feedback", top, "meh").code == 2
    # the log lives in the cache: the memory files and the tree are untouched
    assert subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout == ""
