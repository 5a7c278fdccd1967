"""New versions keep meaning: tags and edges carried forward by `add --supersedes` and `resolve`;
`link` between versions of one memory refused. Through the real CLI, on a real store."""

from __future__ import annotations

import pytest

from forgemem.store.model import Relation
from forgemem.workspace import Workspace


@pytest.fixture
def store(cli, git_repo, monkeypatch):
    monkeypatch.chdir(git_repo)
    assert cli("init").code == 0
    return git_repo


def add(cli, text: str, *args: str) -> str:
    done = cli("add", text, *args)
    assert done.code == 0, done.err
    return done.out.split("\t")[0]


def read(project, memory_id: str):
    return Workspace.open(cwd=project).load(cache=False).get(memory_id)


def test_a_new_version_keeps_tags_and_edges(cli, store):
    other = add(cli, "Releases are cut from main on Tuesdays.", "-c", "project-conventions")
    third = add(cli, "Hotfixes skip the release train.", "-c", "project-conventions")
    old = add(cli, "Deploys go through the release train.", "-c", "project-conventions", "-t", "deploy,release",
              "--relates", f"{other}:refines")
    assert cli("link", old, third, "--rel", "contradicts").code == 0
    new = add(cli, "Deploys go through the release train, twice a week.", "--supersedes", old,
              "-t", "release,cadence", "--relates", f"{other}:refines")
    memory = read(store, new)
    assert list(memory.tags) == ["release", "cadence", "deploy"]  # given first, then carried; no duplicate
    assert memory.related == (Relation(other, "refines"), Relation(third, "contradicts"))
    shown = cli("show", "--json", new).json()
    assert shown["tags"] == ["release", "cadence", "deploy"]


def test_no_carry_keeps_only_what_is_given(cli, store):
    other = add(cli, "Releases are cut from main.", "-c", "project-conventions")
    old = add(cli, "Deploys go through the release train.", "-c", "project-conventions", "-t", "deploy",
              "--relates", f"{other}:relates-to")
    new = add(cli, "Deploys are continuous now.", "--supersedes", old, "--no-carry", "-t", "cd")
    memory = read(store, new)
    assert list(memory.tags) == ["cd"] and memory.related == ()
    plain = add(cli, "Deploys are continuous, from main.", "--supersedes", new, "--no-carry")
    assert not read(store, plain).tags and read(store, plain).related == ()


def test_edges_to_the_superseded_memories_are_dropped(cli, store):
    a = add(cli, "Admin pages are server-rendered with HTMX.", "-c", "architectural-decisions", "-t", "ui")
    b = add(cli, "Admin pages are built in the React app.", "-c", "architectural-decisions", "-t", "ui,react")
    c = add(cli, "The customer app is React.", "-c", "architectural-decisions")
    assert cli("link", b, a, "--rel", "contradicts").code == 0
    assert cli("link", b, c, "--rel", "relates-to").code == 0
    merged = add(cli, "Admin pages use HTMX; React only for the customer app.", "--supersedes", a,
                 "--supersedes", b)
    memory = read(store, merged)
    assert list(memory.tags) == ["ui", "react"]
    assert memory.related == (Relation(c, "relates-to"),)  # the a<->b edge is between the merged versions
    assert cli("validate").code == 0


def test_resolve_keeps_both_sides_tags_and_outside_edges(cli, store):
    a = add(cli, "Integration tests run against SQLite.", "-c", "project-conventions", "-t", "tests")
    b = add(cli, "Integration tests run against Postgres.", "-c", "project-conventions", "-t", "db")
    c = add(cli, "The CI database is Postgres 16.", "-c", "project-conventions")
    assert cli("link", b, a, "--rel", "contradicts").code == 0
    assert cli("link", a, c, "--rel", "relates-to").code == 0
    resolved = cli("resolve", "--json", a, "--text", "Integration tests run against Postgres 16.")
    assert resolved.code == 0, resolved.err
    memory = read(store, resolved.json()["id"])
    assert sorted(memory.supersedes) == sorted([a, b])
    assert sorted(memory.tags) == ["db", "tests"]
    assert memory.related == (Relation(c, "relates-to"),)
    assert cli("conflicts").code == 0


def test_a_retraction_carries_nothing(cli, store):
    other = add(cli, "Releases are cut from main.", "-c", "project-conventions")
    old = add(cli, "Deploys go through the release train.", "-c", "project-conventions", "-t", "deploy",
              "--relates", f"{other}:relates-to")
    gone = cli("forget", "--json", old)
    assert gone.code == 0, gone.err
    retraction = read(store, gone.json()["retraction"])
    assert not retraction.tags and retraction.related == ()


def test_link_within_a_version_chain_is_refused(cli, store):
    v1 = add(cli, "Use black for formatting.", "-c", "coding-preferences")
    v2 = add(cli, "Use ruff format for formatting.", "--supersedes", v1)
    v3 = add(cli, "Use ruff format, line length 120.", "--supersedes", v2)
    before = {m: read(store, m).related for m in (v1, v2, v3)}
    for source, target, word in ((v3, v1, "predecessor"), (v3, v2, "predecessor"), (v1, v3, "successor"),
                                 (v2, v3, "successor")):
        done = cli("link", source, target, "--rel", "relates-to")
        assert done.code != 0
        assert word in done.err and target in done.err and "nothing was written" in done.err
        assert "Traceback" not in done.err
    assert {m: read(store, m).related for m in (v1, v2, v3)} == before
    other = add(cli, "Formatting runs in pre-commit.", "-c", "coding-preferences")
    assert cli("link", v3, other, "--rel", "relates-to").code == 0  # an unrelated memory still links
