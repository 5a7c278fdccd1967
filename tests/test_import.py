"""`forgemem import` on real files in a real git repository: rules in, changed, re-imported; bad input refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from forgemem.interop.markdown import rules_of, strip_emphasis
from forgemem.store import memfile

from .conftest import snapshot_bytes

FIXTURES = Path(__file__).parent / "fixtures" / "interop"


@pytest.fixture
def repo(git_repo, cli, monkeypatch):
    """A repository with a realistic CLAUDE.md, .cursorrules and a Cursor rule, and a repo store."""
    monkeypatch.setenv("FORGEMEM_NO_EMBEDDINGS", "1")  # the patterns heads: fast; the model's path has its own test
    monkeypatch.chdir(git_repo)
    shutil.copy(FIXTURES / "claude_md.md", git_repo / "CLAUDE.md")
    shutil.copy(FIXTURES / "cursorrules", git_repo / ".cursorrules")
    (git_repo / ".cursor" / "rules").mkdir(parents=True)
    shutil.copy(FIXTURES / "api-style.mdc", git_repo / ".cursor" / "rules" / "api-style.mdc")
    assert cli("init").code == 0
    return git_repo


def memories(root: Path) -> dict[str, object]:
    """Every memory file of both stores, by body."""
    found = {}
    for folder in (root / ".forge" / "memory", Path.home() / ".forge" / "memory"):
        for path in sorted(folder.rglob("*.md")) if folder.exists() else []:
            memory = memfile.read_file(path)
            found[memory.body] = memory
    return found


def by_action(report: dict, action: str) -> list[dict]:
    return [i for i in report["items"] if i["action"] == action]


def test_a_repository_is_imported_changed_and_reimported(repo, cli):
    dry = cli("import", "--dry-run", "--json")
    assert dry.code == 0, dry.err
    assert dry.json()["counts"]["new"] == 16 + 5 + 2 and memories(repo) == {}  # nothing written

    first = cli("import", "--json")
    assert first.code == 0, first.err
    assert first.json()["counts"] == {"new": 23, "changed": 0, "unchanged": 0, "duplicate": 0, "removed": 0}
    found = memories(repo)
    assert len(found) == 23
    money = found["Money is an integer number of cents, never a float."]
    assert money.trigger == "import" and money.scope == "repo"
    assert money.extra["source"] == {"file": "CLAUDE.md", "lines": "24", "section": "Code style"}
    # emphasis stripped, code kept; the /init boilerplate and headings are not rules
    assert "Always type-annotate public functions; `mypy --strict` must pass." in found
    assert "Use British spelling in user-facing strings." in found
    assert not any("provides guidance" in body or body in ("Commands", "Architecture") for body in found)
    assert found["I prefer short answers with the diff first, explanation after."].scope == "user"
    paginate = found["Paginate every list endpoint with `limit` and `cursor` query parameters."]
    assert paginate.extra["source"]["file"] == ".cursor/rules/api-style.mdc"
    assert paginate.extra["source"]["globs"] == ["src/shop/api/**/*.py", "tests/api/**/*.py"]
    # a list under `Tests:` takes it as its heading
    regression = found["Every bug fix comes with a regression test in tests/regressions/."]
    assert regression.extra["source"] == {"file": ".cursorrules", "lines": "8", "section": "Tests"}

    before = snapshot_bytes(repo / ".forge" / "memory")
    again = cli("import", "--json").json()
    assert again["counts"]["unchanged"] == 23 and again["counts"]["new"] == 0
    assert snapshot_bytes(repo / ".forge" / "memory") == before  # idempotent: not one byte

    claude = (repo / "CLAUDE.md").read_text()
    claude = claude.replace("- Money is an integer number of cents, never a float.",
                            "- Money is an integer number of cents, never a float; store it as BIGINT.")
    claude = claude.replace("- Branch names: `feat/…`, `fix/…`, `chore/…`.\n", "")
    (repo / "CLAUDE.md").write_text(claude)
    with (repo / ".cursorrules").open("a") as handle:
        handle.write("- Keep pull requests under 400 changed lines.\n")
    changed = cli("import", "--json")
    assert changed.code == 0, changed.err
    report = changed.json()
    assert report["counts"] == {"new": 1, "changed": 1, "unchanged": 21, "duplicate": 0, "removed": 1}
    [change] = by_action(report, "changed")
    assert change["memory"] == money.id and change["lines"] == "24"
    newer = memfile.read_file(Path(change["path"]))
    assert newer.supersedes == (money.id,) and newer.version == 2
    assert (newer.category, newer.scope) == (money.category, money.scope)  # a new version keeps them
    [removed] = by_action(report, "removed")
    assert removed["text"] == "Branch names: `feat/…`, `fix/…`, `chore/…`."
    assert Path(found[removed["text"]].path).exists()  # reported, never deleted
    [new] = by_action(report, "new")
    assert new["text"] == "Keep pull requests under 400 changed lines." and new["file"] == ".cursorrules"

    third = cli("import").out
    assert "CLAUDE.md: 15 unchanged, 1 removed" in third and "no longer in its file" in third
    assert len(cli("list", "--json").json()) == 24  # heads: 23 + 1 new (the changed one replaced)


def test_the_store_keeps_its_own_word_over_the_file(repo, cli):
    cli("import")
    found = memories(repo)
    money = found["Money is an integer number of cents, never a float."]
    edited = cli("add", "Money is integer cents (BIGINT), never a float.", "--supersedes", money.id)
    assert edited.code == 0, edited.err
    squash = found["Squash-merge pull requests; the PR title becomes the commit message."]
    assert cli("forget", squash.id, "--reason", "we merge-commit now").code == 0
    report = cli("import", "--json").json()
    assert report["counts"]["new"] == 0 and report["counts"]["changed"] == 0 and report["counts"]["removed"] == 0
    assert len(memories(repo)) == 23 + 2  # the edit and the retraction; nothing came back


def test_the_same_rule_in_two_files_is_one_memory_and_an_exported_section_is_not_read(repo, cli):
    (repo / "AGENTS.md").write_text(
        "# Agents\n\n- Money is an integer number of cents, never a float\n- Run `make check` before pushing.\n\n"
        "<!-- forgemem:begin -->\n<!-- forgemem:end -->\n")
    first = cli("import", "--json").json()  # every instruction file of the repository, AGENTS.md with them
    assert [i["action"] for i in first["items"] if i["file"] == "AGENTS.md"] == ["duplicate", "new"]
    assert cli("export", "--format", "agents-md").code == 0
    assert "Use British spelling" in (repo / "AGENTS.md").read_text()
    report = cli("import", "AGENTS.md", "--json").json()
    assert [i["action"] for i in report["items"]] == ["duplicate", "unchanged"]  # the section's rules: not read
    assert len(memories(repo)) == 24


def test_other_tools_exports(repo, cli, tmp_path):
    export = tmp_path / "mem0.json"
    shutil.copy(FIXTURES / "mem0_get_all.json", export)
    mem0 = cli("import", "--from", "mem0-json", str(export), "--json")
    assert mem0.code == 0, mem0.err
    found = memories(repo)
    vegetarian = found["Is a vegetarian and allergic to nuts"]
    assert vegetarian.scope == "user" and vegetarian.category == "user-facts"
    assert vegetarian.extra["source"]["id"] == "892db2ae-06d9-49e5-8b3e-585ef9b85b8e"
    assert found["Works as a backend engineer on the payments team"].tags == ["professional_details"]
    # mem0 changed a memory in place (same id): a new version here
    data = json.loads((FIXTURES / "mem0_get_all.json").read_text())
    data["results"][1]["memory"] = "Prefers tabs over spaces in Go and Rust code"
    export.write_text(json.dumps(data))
    report = cli("import", "--from", "mem0-json", str(export), "--json").json()
    assert report["counts"]["changed"] == 1 and report["counts"]["unchanged"] == 2

    mcp = cli("import", "--from", "mcp-memory-json", str(FIXTURES / "mcp_memory.jsonl"), "--json").json()
    texts = [i["text"] for i in mcp["items"]]
    assert texts == ["Prefers pytest over unittest", "Lives in Lisbon", "shop-api: Deploys to Fly.io from the main branch",
                     "shop-api: Uses PostgreSQL 16", "default_user maintains shop-api"]
    graph = tmp_path / "graph.json"  # read_graph's one object
    graph.write_text(json.dumps({"entities": [{"name": "Ada", "entityType": "person", "observations": ["Uses Emacs"]}],
                                 "relations": []}, indent=2))
    assert by_action(cli("import", "--from", "mcp-memory-json", str(graph), "--json").json(), "new")[0]["text"] \
        == "Ada: Uses Emacs"

    notes = cli("import", "--from", "basic-memory", str(FIXTURES / "basic-memory"), "--json")
    assert notes.code == 0, notes.err
    found = memories(repo)
    ruff = found["Use ruff for linting and formatting"]
    assert ruff.scope == "user" and ruff.tags == ["python", "style", "preference", "tooling"]
    assert "Python Style relates to Testing Practices" in found
    assert "Tests run against a real database in a container, never against mocks of it." in found


@pytest.mark.parametrize("payload, words", [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "is a binary file, not text"),
    (b"- caf\xe9 au lait\n", "is not UTF-8 text (an invalid byte on line 1)"),
])
def test_a_bad_file_is_refused_with_one_sentence_and_nothing_is_written(repo, cli, payload, words):
    (repo / "GEMINI.md").write_bytes(payload)
    result = cli("import", "CLAUDE.md", "GEMINI.md")
    assert result.code == 1
    assert words in result.err and result.err.count("\n") == 1 and "Traceback" not in result.err
    assert memories(repo) == {}  # the good file was not imported either


def test_a_ten_megabyte_markdown_file_is_refused_at_once(repo, cli):
    huge = repo / "NOTES.md"
    huge.write_text("- Use tabs, not spaces, in every Makefile of this repository.\n" * 170_000)
    assert huge.stat().st_size > 10_000_000
    result = cli("import", "NOTES.md")  # refused by its size, before it is read
    assert result.code == 1 and "NOTES.md is 10.1 MB, over the 1.0 MB forgemem reads" in result.err
    assert memories(repo) == {}


def test_bad_exports_and_arguments(repo, cli, tmp_path):
    broken = tmp_path / "memory.jsonl"
    broken.write_text('{"type":"entity","name":"a","entityType":"x","observations":["ok"]}\n{"type": "ent\n')
    result = cli("import", "--from", "mcp-memory-json", str(broken))
    assert result.code == 1 and "memory.jsonl:2 is not JSON" in result.err
    wrong = tmp_path / "mem0.json"
    wrong.write_text('{"memories": []}')
    assert "is not a mem0 export" in cli("import", "--from", "mem0-json", str(wrong)).err
    assert cli("import", "--from", "evernote", str(wrong)).code == 2
    assert cli("import", "missing.md").code == 2
    assert memories(repo) == {}


def test_rules_of_a_markdown_file():
    text = (
        "---\ndescription: x\n---\n"
        "# Title\n\nIntro line one\nline two\n\n"
        "- top item\n  continued here\n  - nested one\n  - nested two\n\n"
        "  more of the top item after a blank line\n"
        "- lead-in:\n\n  ```sh\n  make test\n  ```\n"
        "3. numbered **bold** and *em* but not snake_case_name or `*args*`\n"
        "<!-- a comment\n- not a rule\n-->\n"
        "Setext\n======\n\n---\n\n"
        "```\ncode alone\n```\n"
    )
    rules = rules_of(text, "NOTES.md")
    assert [(r.text, r.lines, r.section) for r in rules] == [
        ("Intro line one\nline two", "6-7", "Title"),
        ("top item\ncontinued here\n- nested one\n- nested two\n\nmore of the top item after a blank line", "9-14",
         "Title"),
        ("lead-in:\n\n```sh\nmake test\n```", "15-19", "Title"),
        ("numbered bold and em but not snake_case_name or `*args*`", "20", "Title"),
        ("Setext:\n\n```\ncode alone\n```", "29-31", "Setext"),
    ]
    assert strip_emphasis("__a__ ~~b~~ 2*3*4 `**c**`") == "a b 2*3*4 `**c**`"
    crlf = rules_of("- one\r\n- two\r\n", "X.md")
    assert [r.text for r in crlf] == ["one", "two"]


def test_the_embedding_model_decides_when_it_is_there(git_repo, monkeypatch, real_embedder):
    from forgemem.interop.importer import import_files
    from forgemem.workspace import Workspace, init_forge_dir

    init_forge_dir(git_repo / ".forge")
    shutil.copy(FIXTURES / "claude_md.md", git_repo / "CLAUDE.md")
    workspace = Workspace.open(cwd=git_repo)
    report = import_files(workspace, [git_repo / "CLAUDE.md"], git_repo, embedder=real_embedder)
    assert report.classifier == "dense" and report.count("new") == 16
    scopes = {i.rule.text: i.scope for i in report.items if i.rule is not None}
    assert scopes["Money is an integer number of cents, never a float."] == "repo"
    assert scopes["I prefer short answers with the diff first, explanation after."] == "user"
    assert all(i.category != "corrections" for i in report.items)


def test_a_personal_rule_from_one_repository_is_not_taken_for_another(repo, cli, monkeypatch, tmp_path):
    cli("import", "CLAUDE.md")
    mine = memories(repo)["I prefer short answers with the diff first, explanation after."]
    assert mine.scope == "user" and mine.extra["source"]["file"] == "project/CLAUDE.md"  # /tmp/pytest-of-USER/…
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.chdir(other)
    assert cli("init").code == 0
    (other / "CLAUDE.md").write_text("- I prefer short answers with the explanation first, diff after.\n")
    report = cli("import", "--json").json()
    assert report["counts"] == {"new": 1, "changed": 0, "unchanged": 0, "duplicate": 0, "removed": 0}
    monkeypatch.chdir(repo)
    assert cli("import", "CLAUDE.md", "--json").json()["counts"]["removed"] == 0
    exported = cli("export", "--format", "claude-md", "--scope", "user", "--json").json()
    theirs = [m["id"] for m in cli("list", "--scope", "user", "--json").json()
              if m["source"]["file"] == "other/CLAUDE.md"]
    assert exported["memories"] == theirs and exported["echoed"] >= 1  # its own: not echoed; the other's: in
