"""The everyday commands, run in-process against real files."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from forgemem.store import memfile

from .conftest import SAMPLES, snapshot_bytes


@pytest.fixture
def repo(tmp_path, cli):
    """An initialised repo store at tmp/project/.forge/memory, used via --repo-dir."""
    memory_dir = tmp_path / "project/.forge/memory"
    assert cli("--repo-dir", str(memory_dir), "init").code == 0
    os.environ["FORGEMEM_REPO_DIR"] = str(memory_dir)
    yield memory_dir
    os.environ.pop("FORGEMEM_REPO_DIR", None)


def add(cli, text, *args):
    result = cli("add", text, *args, "--json")
    assert result.code == 0, result.err
    return result.json()


def test_add_writes_a_valid_file_and_prints_id_and_path(repo, cli):
    result = cli("add", "Use ruff, not flake8.", "-c", "coding-preferences", "-t", "lint, style")
    assert result.code == 0, result.err
    memory_id, path = result.out.strip().split("\t")
    path = Path(path)
    assert path.parent == repo / "coding-preferences"
    assert path.name == f"use-ruff-not-flake8-{memory_id[4:12]}.md"
    memory = memfile.read_file(path)
    assert (memory.id, memory.scope, memory.version, memory.tags, memory.trigger) == (
        memory_id, "repo", 1, ["lint", "style"], "manual"
    )


def test_add_reads_stdin_and_redacts_secrets(repo, cli):
    text = "Deploy with DEPLOY_TOKEN=ghp_" + "A" * 36 + " and password: hunter22secret\n"
    result = cli("add", "-", "-c", "corrections", "--json", stdin=text)
    assert result.code == 0
    assert "redacted 2 secret(s)" in result.err
    body = Path(result.json()["path"]).read_text()
    assert "ghp_" not in body and "hunter22secret" not in body
    assert "[REDACTED:github-token]" in body


def test_add_errors_are_one_sentence_with_exit_code_2(repo, cli):
    for args, message in [
        (["add", "x"], "choose a category with --category"),
        (["add", "x", "-c", "misc"], "unknown category 'misc'"),
        (["add", "x", "-c", "corrections", "-s", "team"], "unknown scope 'team'"),
        (["add", "   ", "-c", "corrections"], "the memory text is empty"),
        (["add", "x", "-c", "corrections", "--relates", "nope"], "--relates takes ID:relationship"),
        (["add", "x", "-c", "corrections", "--supersedes", "mem_ffff"], "no memory has an id starting with 'mem_ffff'"),
    ]:
        result = cli(*args)
        assert result.code == 2, (args, result.err)
        assert message in result.err
        assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err
    assert list(repo.rglob("*.md")) == []


def test_supersede_writes_a_new_version_and_leaves_the_old_file(repo, cli):
    v1 = add(cli, "Run tests with pytest.", "-c", "project-conventions")
    before = Path(v1["path"]).read_bytes()
    v2 = add(cli, "Run tests with make test.", "--supersedes", v1["id"][:12])
    assert v2["version"] == 2
    assert Path(v1["path"]).read_bytes() == before
    new = memfile.read_file(Path(v2["path"]))
    assert new.supersedes == (v1["id"],) and new.category == "project-conventions"
    # superseding an old version again would fork the chain: refused
    again = cli("add", "Run tests with tox.", "--supersedes", v1["id"])
    assert again.code == 2 and "already superseded by" in again.err
    listed = cli("list", "--json").json()
    assert [m["id"] for m in listed] == [v2["id"]]
    everything = cli("list", "--all-versions", "--json").json()
    assert {m["id"] for m in everything} == {v1["id"], v2["id"]}
    old = next(m for m in everything if m["id"] == v1["id"])
    assert old["head"] is False and old["superseded_by"] == [v2["id"]]
    history = cli("history", v2["id"], "--json").json()
    assert [m["version"] for m in history] == [1, 2]
    text = cli("history", v1["id"][:10]).out
    assert text.index("v1") < text.index("v2 head")


def test_merge_of_several_memories(repo, cli):
    a = add(cli, "Logs use structlog.", "-c", "project-conventions")
    b = add(cli, "Logs are JSON in production.", "-c", "project-conventions")
    m = add(cli, "structlog everywhere, JSON in production.", "--supersedes", a["id"], "--supersedes", b["id"])
    assert m["version"] == 2
    assert cli("validate").code == 0


def test_list_filters_and_scopes(repo, cli):
    add(cli, "Repo convention one.", "-c", "project-conventions", "-t", "db")
    add(cli, "Repo decision.", "-c", "architectural-decisions")
    add(cli, "I am on macOS.", "-c", "user-facts", "-s", "user")
    assert len(cli("list", "--json").json()) == 3
    assert [m["content"] for m in cli("list", "--scope", "user", "--json").json()] == ["I am on macOS."]
    assert [m["content"] for m in cli("list", "-c", "architectural-decisions", "--json").json()] == ["Repo decision."]
    assert [m["content"] for m in cli("list", "--tag", "db", "--json").json()] == ["Repo convention one."]
    table = cli("list").out
    assert "repo" in table and "user" in table and "3 memories" in table
    assert cli("list", "--scope", "team").code == 2


def test_show_by_prefix_and_ambiguity(repo, cli):
    created = [add(cli, f"Memory number {i}.", "-c", "corrections") for i in range(40)]
    target = created[0]
    shown = cli("show", target["id"][4:14], "--json").json()
    assert shown["id"] == target["id"] and shown["content"] == "Memory number 0."
    assert "Memory number 0." in cli("show", target["id"]).out
    # some one-character prefix is shared by several of 40 random ids
    firsts = [c["id"][4] for c in created]
    shared = next(ch for ch in firsts if firsts.count(ch) > 1)
    result = cli("show", shared)
    assert result.code == 2
    assert f"'{shared}' matches {firsts.count(shared)} memories" in result.err
    missing = cli("show", "mem_zzz")
    assert missing.code == 2 and "no memory has an id starting with 'mem_zzz'" in missing.err
    for bare in ("mem_", "mem", "m", ""):  # every id starts so: a usage error asking for more, not "no memory"
        result = cli("show", bare)
        assert result.code == 2 and result.err.strip() == (
            f"forgemem: error: {bare!r} is too short: give the first characters of the id after mem_ "
            "(`forgemem list`)"), bare


def test_link_adds_a_typed_edge_and_rejects_bad_ones(repo, cli):
    a = add(cli, "Money is integer cents.", "-c", "project-conventions")
    b = add(cli, "Use the Money type.", "-c", "project-conventions")
    result = cli("link", b["id"], a["id"], "--rel", "refines")
    assert result.code == 0, result.err
    assert memfile.read_file(Path(b["path"])).related[0].relationship == "refines"
    again = cli("link", b["id"], a["id"], "--rel", "refines")
    assert again.code == 0
    assert len(memfile.read_file(Path(b["path"])).related) == 1
    assert cli("link", a["id"], a["id"], "--rel", "refines").code == 2
    bad = cli("link", a["id"], b["id"], "--rel", "blocks")
    assert bad.code == 2 and "unknown relationship 'blocks'" in bad.err
    graph = cli("graph", a["id"], "--format", "json").json()
    assert {"source": b["id"], "target": a["id"], "type": "refines"} in graph["edges"]


def test_link_never_overwrites_a_file_it_cannot_parse(repo, cli):
    a = add(cli, "First.", "-c", "corrections")
    b = add(cli, "Second.", "-c", "corrections")
    path = Path(b["path"])
    # A broken file cannot be loaded, so it cannot be the target of a rewrite either.
    path.write_text(path.read_text().replace("trigger: manual", "trigger: [oops"))
    before = path.read_bytes()
    result = cli("link", b["id"], a["id"], "--rel", "relates-to")
    assert result.code == 2
    assert path.read_bytes() == before


def test_forget_retracts_with_a_new_version_and_purge_deletes(repo, cli):
    a = add(cli, "Deploy on Fridays.", "-c", "project-conventions")
    result = cli("forget", a["id"], "--reason", "we stopped that")
    assert result.code == 0, result.err
    retraction_id = result.out.split("\t")[0]
    assert Path(a["path"]).exists()
    retraction = memfile.read_file(Path(result.out.strip().split("\t")[1]))
    assert retraction.id == retraction_id and retraction.status == "retracted"
    assert retraction.supersedes == (a["id"],) and retraction.version == 2
    assert "Reason: we stopped that" in retraction.body
    assert cli("list", "--json").json() == []
    assert cli("forget", a["id"]).code == 2  # already superseded
    secret = add(cli, "The staging password is in Vault.", "-c", "corrections")
    purged = cli("forget", secret["id"], "--purge")
    assert purged.code == 0 and not Path(secret["path"]).exists()


def test_edit_replaces_the_file_only_when_the_edit_validates(repo, cli, tmp_path, monkeypatch):
    a = add(cli, "Use pnpm.", "-c", "project-conventions")
    path = Path(a["path"])
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/Use pnpm./Use pnpm, never npm./' \"$1\"\n")
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    result = cli("edit", a["id"])
    assert result.code == 0, result.err
    edited = memfile.read_file(path)
    assert edited.body == "Use pnpm, never npm."
    assert edited.updated_at >= edited.created_at
    before = path.read_bytes()
    editor.write_text("#!/bin/sh\nsed -i 's/^category: .*/category: misc/' \"$1\"\n")
    result = cli("edit", a["id"])
    assert result.code == 1
    assert "unknown category 'misc'" in result.err
    assert path.read_bytes() == before
    editor.write_text("#!/bin/sh\ntrue\n")
    assert "no changes" in cli("edit", a["id"]).out


def test_graph_formats(repo, cli):
    a = add(cli, "Admin uses HTMX.", "-c", "architectural-decisions")
    b = add(cli, "Admin uses React.", "-c", "architectural-decisions", "--relates", f"{a['id']}:contradicts")
    dot = cli("graph", "--format", "dot").out
    assert dot.startswith("digraph forgemem {") and f'"{b["id"]}" -> "{a["id"]}" [label="contradicts"' in dot
    tree = cli("graph").out
    assert "-contradicts->" in tree and "architectural-decisions" in tree
    assert cli("graph", "--format", "svg").code == 2


def test_graph_never_draws_a_retracted_memory_as_current(repo, cli):
    gone = add(cli, "Use poetry for dependencies.", "-c", "project-conventions")
    kept = add(cli, "Lint with ruff.", "-c", "project-conventions")
    assert cli("forget", gone["id"], "--reason", "we moved to uv").code == 0
    nodes = {n["title"]: n for n in cli("graph", "--format", "json").json()["nodes"]}
    assert nodes["Lint with ruff."]["current"] is True
    assert not any(n["current"] for title, n in nodes.items() if "poetry" in title)
    retraction = next(n for title, n in nodes.items() if "poetry" in title and n["head"])
    assert retraction["status"] == "retracted"
    tree = cli("graph").out
    assert "project-conventions (retracted)" in tree
    assert tree.index(kept["id"][4:12]) < tree.index("project-conventions (retracted)")
    dot = cli("graph", "--format", "dot").out
    assert f'"{retraction["id"]}" [label=' in dot and "style=dashed, color=gray" in dot


def test_stats_counts_and_reports_conflicts(cli):
    result = cli(
        "--repo-dir", str(SAMPLES / "repo/.forge/memory"),
        "--user-dir", str(SAMPLES / "user/.forge/memory"),
        "stats", "--json",
    )
    data = result.json()
    assert data["files"] == 52 and data["current"] == 43
    assert data["chains"] == 7 and data["longest_chain"] == 3
    assert len(data["conflicts"]) == 1 and data["problems"] == 0
    assert set(data["by_scope_and_category"]["repo"]) | set(data["by_scope_and_category"]["user"]) == {
        "coding-preferences", "project-conventions", "architectural-decisions", "user-facts", "corrections"
    }


def test_commands_never_modify_the_sample_store(cli):
    before = snapshot_bytes(SAMPLES)
    base = ["--repo-dir", str(SAMPLES / "repo/.forge/memory"), "--user-dir", str(SAMPLES / "user/.forge/memory")]
    for args in (["list"], ["list", "--all-versions", "--json"], ["show", "9f7ab1bf"], ["history", "f08fe8e8"],
                 ["graph"], ["graph", "9f7ab1bf", "--format", "json"], ["validate"], ["stats"]):
        result = cli(*base, *args)
        assert result.code == 0, (args, result.err)
    assert snapshot_bytes(SAMPLES) == before


def test_json_outputs_are_valid_json(cli):
    base = ["--repo-dir", str(SAMPLES / "repo/.forge/memory"), "--user-dir", str(SAMPLES / "user/.forge/memory")]
    for args in (["list", "--json"], ["show", "9f7ab1bf", "--json"], ["history", "9f7ab1bf", "--json"],
                 ["graph", "--format", "json"], ["validate", "--json"], ["stats", "--json"]):
        json.loads(cli(*base, *args).out)


def test_a_mistyped_command_gets_one_suggestion(cli):
    result = cli("recal", "how do we deploy")
    assert result.code == 2
    assert result.err.count("Did you mean 'recall'?") == 1


def test_show_says_where_a_memory_came_from_on_one_line(cli):
    base = ["--repo-dir", str(SAMPLES / "repo/.forge/memory"), "--user-dir", str(SAMPLES / "user/.forge/memory")]
    shown = " ".join(cli(*base, "show", "9f7ab1bf").out.split())
    assert "source: ~/.claude/projects/harbor/8c1d2e3f.jsonl:412-430 — “integration tests only run with make " \
        "test-all now”" in shown
    assert "{'transcript'" not in shown


def test_every_listing_shows_a_memory_on_one_line(repo, cli):
    from forgemem.store.model import one_line, short

    text = ("Deploys go through the staging cluster first.\n\nThen prod, once the smoke tests pass on staging"
            + " and the on-call engineer signs off" * 3 + ".")
    memory = add(cli, text, "-c", "project-conventions")
    flat = " ".join(text.split())
    listed = [line for line in cli("list").out.splitlines() if short(memory["id"]) in line]
    assert len(listed) == 1 and listed[0].endswith(flat)  # piped: the whole text, on its one line
    assert f"    {flat}" in cli("history", memory["id"]).out.splitlines()
    label = one_line(text, 70)
    assert len(label) == 70 and label.endswith("…") and "\n" not in label
    assert f'[project-conventions] {label}"' in cli("graph", "--format", "dot").out  # UTF-8, not \u2026


def test_one_line_joins_lines_and_cuts_with_an_ellipsis():
    from forgemem.store.model import one_line

    from .conftest import make_memory

    assert one_line("a\n\n  b\tc ") == "a b c"
    assert one_line(make_memory(body="first line\nsecond line"), 12) == "first line…"  # no blank before "…"
    assert one_line("exactly ten", 11) == "exactly ten" and one_line("exactly ten", 10) == "exactly t…"


def test_help_names_the_agents_install_accepts_and_that_add_needs_a_category(cli):
    from forgemem.agents.registry import AGENTS

    for command in ("install", "uninstall"):
        result = cli(command, "--help")
        assert result.code == 0 and f"AGENT: one of {', '.join(AGENTS)}." in result.out, command
    assert {"claude-code", "codex", "git"} <= set(AGENTS)
    text = " ".join(cli("add", "--help").out.split())
    assert "-c, --category TEXT Required (with --supersedes: the old version's by default)." in text


def test_one_memory_is_counted_in_the_singular(repo, cli):
    from forgemem.agents import slash
    from forgemem.workspace import Workspace

    add(cli, "Repo convention one.", "-c", "project-conventions")
    assert cli("list").out.splitlines()[-1] == "1 memory"
    listed = slash.run("/memory list", Workspace.open())
    assert listed.splitlines()[0] == "**1 memory**:"


def test_the_top_level_help_groups_every_command_once(cli):
    from forgemem.cli.app import HELP_SECTIONS
    from forgemem.cli.main import app

    names = [name for _, section in HELP_SECTIONS for name in section]
    registered = {c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands}
    assert sorted(names) == sorted(registered) and len(names) == len(set(names))
    text = cli("--help").out
    assert "Other:" not in text
    assert text.index("Start:") < text.index("  init ") < text.index("  add ") < text.index("Memories:") \
        < text.index("Run by agents and git:") < text.index("  merge-driver ")
