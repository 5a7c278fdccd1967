"""`forgemem export`: a generated section in real files, byte-identical around it and on a second run;
bad markers and targets refused; and `init`'s offer to import."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "interop"
HEAD = "# Working here\n\nHand-written notes: keep them.\r\n\n"  # a stray CRLF, kept as it is
TAIL = "\n## Release checklist\n\n1. Bump the version.\n2. Tag it.\n"


@pytest.fixture
def repo(git_repo, cli, monkeypatch):
    monkeypatch.setenv("FORGEMEM_NO_EMBEDDINGS", "1")
    monkeypatch.chdir(git_repo)
    assert cli("init").code == 0
    for text, category in (("Run `make check` before pushing.", "project-conventions"),
                           ("We chose PostgreSQL over MySQL for its JSON support.", "architectural-decisions"),
                           ("Prefer small pure functions.", "coding-preferences")):
        assert cli("add", text, "-c", category, "-t", "team").code == 0
    assert cli("add", "I like answers in British English.", "-c", "user-facts", "-s", "user").code == 0
    return git_repo


def test_a_section_between_hand_written_ones_is_idempotent_and_follows_the_memories(repo, cli):
    agents = repo / "AGENTS.md"
    agents.write_bytes((HEAD + "<!-- forgemem:begin -->\n<!-- forgemem:end -->\n" + TAIL).encode())
    first = cli("export", "--format", "agents-md")
    assert first.code == 0, first.err
    data = agents.read_bytes()
    assert data.startswith(HEAD.encode()) and data.endswith(("<!-- forgemem:end -->\n" + TAIL).encode())
    text = data.decode()
    assert text.index("### Project conventions") < text.index("### Architectural decisions") \
        < text.index("### Coding preferences")
    assert "- Run `make check` before pushing." in text and "British" not in text  # the user's stay out
    assert not re.search(r"\d{4}-\d\d-\d\d|\d\d:\d\d", text.split("forgemem:begin")[1])  # no timestamp in it

    second = cli("export", "--format", "agents-md")
    assert second.code == 0 and "is up to date" in second.out
    assert agents.read_bytes() == data  # identical bytes
    assert cli("export", "--format", "agents-md", "--check").code == 0

    assert cli("add", "Never log request bodies: they hold card numbers.", "-c", "project-conventions").code == 0
    stale = cli("export", "--format", "agents-md", "--check")
    assert stale.code == 1 and "out of date" in stale.out and agents.read_bytes() == data
    assert cli("export", "--format", "agents-md").code == 0
    updated = agents.read_bytes()
    assert b"Never log request bodies" in updated and updated != data
    assert updated.startswith(HEAD.encode()) and updated.endswith(("<!-- forgemem:end -->\n" + TAIL).encode())
    assert cli("export", "--format", "agents-md", "--check").code == 0


def test_a_file_without_markers_gets_the_section_appended_and_crlf_is_kept(repo, cli):
    claude = repo / "CLAUDE.md"
    original = b"# Project\r\n\r\n- Use tabs in Makefiles.\r\n"
    claude.write_bytes(original)
    assert cli("export", "--format", "claude-md").code == 0
    data = claude.read_bytes()
    assert data.startswith(original + b"\r\n<!-- forgemem:begin sha256=")
    assert data.endswith(b"<!-- forgemem:end -->\r\n") and b"\n" not in data.replace(b"\r\n", b"")
    assert cli("export", "--format", "claude-md").code == 0 and claude.read_bytes() == data


def test_rules_imported_from_a_file_are_not_echoed_back_into_it(repo, cli):
    (repo / "AGENTS.md").write_text("# Agents\n\n- Deploy only from the main branch.\n")
    report = cli("import", "AGENTS.md", "--json")
    assert report.code == 0, report.err
    result = cli("export", "--format", "agents-md", "--json").json()
    assert result["echoed"] == 1
    assert (repo / "AGENTS.md").read_text().count("Deploy only from the main branch") == 1
    assert cli("export", "--format", "claude-md").code == 0
    assert "Deploy only from the main branch" in (repo / "CLAUDE.md").read_text()  # into another file: yes


def test_cursor_rules_json_filters_and_budget(repo, cli):
    assert cli("export", "--format", "cursor-rules").code == 0
    mdc = repo / ".cursor" / "rules" / "forgemem.mdc"
    data = mdc.read_bytes()
    assert data.startswith(b"---\ndescription: ") and b"alwaysApply: true\n---\n" in data
    assert cli("export", "--format", "cursor-rules").code == 0 and mdc.read_bytes() == data
    (mdc.parent / "style.mdc").write_text("- Keep handlers thin.\n")
    offered = cli("init").out
    assert ".cursor/rules/style.mdc" in offered and "forgemem.mdc" not in offered  # its own file: never offered

    records = json.loads(cli("export", "--format", "json").out)
    assert len(records) == 4 and {r["scope"] for r in records} == {"repo", "user"}
    lines = cli("export", "--format", "jsonl", "--category", "user-facts").out.splitlines()
    assert [json.loads(line)["content"] for line in lines] == ["I like answers in British English."]
    everyone = cli("export", "--format", "agents-md", "--scope", "all", "--json").json()
    assert len(everyone["memories"]) == 4
    tight = cli("export", "--format", "agents-md", "--max-tokens", "30", "--json").json()
    assert tight["left_out"] >= 1 and tight["tokens"] <= 30
    assert "more in forgemem, left out to stay within 30 tokens" in (repo / "AGENTS.md").read_text()
    assert cli("export", "--format", "json", "--check").code == 2


@pytest.mark.parametrize("body, words", [
    ("<!-- forgemem:begin -->\n- mine\n<!-- forgemem: end -->\n", "AGENTS.md:3: this forgemem marker was changed by hand"),
    ("<!-- forgemem:begin -->\n<!-- forgemem:end -->\n\n<!-- forgemem:begin -->\n<!-- forgemem:end -->\n",
     "AGENTS.md has more than one forgemem section (markers on lines 1, 2, 4, 5)"),
    ("<!-- forgemem:begin -->\n- half a section\n", "AGENTS.md:1 opens a forgemem section that is never closed"),
    ("- x\n<!-- forgemem:end -->\n", "AGENTS.md:2 closes a forgemem section that was never opened"),
    ("<!-- forgemem:begin -->\n- my own words\n<!-- forgemem:end -->\n", "edited by hand"),
])
def test_broken_markers_are_refused_where_they_are(repo, cli, body, words):
    agents = repo / "AGENTS.md"
    agents.write_text(body)
    before = agents.read_bytes()
    result = cli("export", "--format", "agents-md")
    assert result.code == 1 and words in result.err and "nothing was written" in result.err
    assert result.err.count("\n") == 1 and agents.read_bytes() == before


def test_a_section_edited_after_forgemem_wrote_it_is_not_overwritten(repo, cli):
    agents = repo / "AGENTS.md"
    assert cli("export", "--format", "agents-md").code == 0
    agents.write_text(agents.read_text().replace("Prefer small pure functions.", "Prefer small pure functions!!"))
    before = agents.read_bytes()
    result = cli("export", "--format", "agents-md")
    assert result.code == 1 and "was edited by hand since it was written" in result.err
    assert agents.read_bytes() == before
    assert "AGENTS.md:" in result.err  # where


def test_bad_targets_are_refused_and_nothing_is_lost(repo, cli, tmp_path):
    agents = repo / "AGENTS.md"
    agents.write_text("# Agents\n\nmine\n")
    agents.chmod(0o444)
    try:
        result = cli("export", "--format", "agents-md")
        assert result.code == 1 and "AGENTS.md is read-only; nothing was written" in result.err
        assert agents.read_text() == "# Agents\n\nmine\n"
    finally:
        agents.chmod(0o644)
    (repo / "CLAUDE.md").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00")
    assert "is a binary file" in cli("export", "--format", "claude-md").err
    assert (repo / "CLAUDE.md").read_bytes() == b"\x7fELF\x02\x01\x01\x00\x00\x00"
    outside = tmp_path / "elsewhere.md"
    outside.write_text("not yours\n")
    agents.unlink()
    agents.symlink_to(outside)
    linked = cli("export", "--format", "agents-md")
    assert linked.code == 1 and "outside this repository" in linked.err and outside.read_text() == "not yours\n"


def test_init_prints_the_exact_import_command_and_never_asks_without_a_terminal(repo, cli):
    shutil.copy(FIXTURES / "claude_md.md", repo / "CLAUDE.md")
    odd = repo / ".cursor" / "rules" / "it's $(touch pwned).mdc"
    odd.parent.mkdir(parents=True)
    odd.write_text("- Keep handlers thin.\n")
    secret = repo.parent / "id_rsa"  # a repository's link to a file of yours is never offered
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (repo / "GEMINI.md").symlink_to(secret)
    result = cli("init")
    assert result.code == 0 and "GEMINI.md" not in result.out
    [command] = [line.strip() for line in result.out.splitlines() if line.strip().startswith("forgemem import")]
    args = shlex.split(command)
    assert args[2:] == ["CLAUDE.md", ".cursor/rules/it's $(touch pwned).mdc"]
    imported = cli(*args[1:], "--json")
    assert imported.code == 0 and imported.json()["counts"]["new"] == 17
    assert not (repo / "pwned").exists()


def test_init_asks_in_a_terminal_and_imports_when_told_to(repo, tmp_path):
    import pty

    shutil.copy(FIXTURES / "cursorrules", repo / ".cursorrules")
    env = {**os.environ, "FORGEMEM_NO_EMBEDDINGS": "1", "COLUMNS": "200", "TERM": "dumb"}
    primary, secondary = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "forgemem", "init"], cwd=repo, env=env,
                               stdin=secondary, stdout=secondary, stderr=secondary)
    os.close(secondary)
    seen = b""
    while b"Import them now?" not in seen:
        seen += os.read(primary, 4096)
    os.write(primary, b"y\n")
    while True:
        try:
            chunk = os.read(primary, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    assert process.wait(timeout=120) == 0
    os.close(primary)
    assert b"forgemem import .cursorrules" in seen and b".cursorrules: 5 new" in seen
    imported = [p for p in (repo / ".forge" / "memory").rglob("*.md") if "trigger: import" in p.read_text()]
    assert len(imported) == 5
