"""Text cannot drive the terminal: escape sequences in a memory never reach it.

Attack (reproduced before the fix): a memory file in a cloned repository whose body held
`ESC ] 0 ; … BEL` (set the window title) or `ESC ] 52 ; c ; …` (write the clipboard) was
printed raw by `forgemem list`, `show`, `recall` and `review`; and a transcript turn with
pasted colour codes was written into a memory file with its escape bytes.

Now forgemem writes no control character into a new memory (tab and newline stay), and it
prints a control character it did not write as `\\xNN`.
"""

from __future__ import annotations

import json
import re

from forgemem.recall import context
from forgemem.store.model import visible_controls, without_controls
from forgemem.workspace import Workspace

from ..conftest import git, make_memory, write_memory

TITLE = "\x1b]0;owned\x07"
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x1b\\"
COLOUR = "\x1b[31m"
HOSTILE = f"Run the tests with make test.{TITLE}{CLIPBOARD} {COLOUR}always\x1b[0m\x08\x9b2J"
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_a_new_memory_keeps_the_words_and_loses_the_escape_sequences():
    assert without_controls(HOSTILE) == "Run the tests with make test. always2J"
    assert without_controls("a\tb\nc\r\nd\re") == "a\tb\nc\nd\ne"
    assert without_controls("plain text, `code` and ünïcödé") == "plain text, `code` and ünïcödé"


def test_printed_text_shows_each_control_character():
    shown = visible_controls(HOSTILE)
    assert not RAW_CONTROL.search(shown)
    assert "\\x1b]0;owned\\x07" in shown and "\\x9b2J" in shown
    assert visible_controls("tab\tand\nnewline stay") == "tab\tand\nnewline stay"


def hostile_repo(git_repo):
    from forgemem.workspace import init_forge_dir

    init_forge_dir(git_repo / ".forge")
    memory = make_memory(HOSTILE, category="project-conventions")
    write_memory(git_repo / ".forge" / "memory", memory)
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "a stranger's memories")
    return git_repo, memory.id


def test_no_command_prints_a_cloned_memorys_escape_sequence(cli, git_repo, monkeypatch):
    repo, memory_id = hostile_repo(git_repo)
    monkeypatch.chdir(repo)
    runs = {
        "list": cli("list"),
        "show": cli("show", memory_id),
        "recall": cli("recall", "make test"),
        "review": cli("review", "HEAD~1..HEAD"),
        "context": cli("context", "how do I run the tests"),
    }
    for name, result in runs.items():
        assert result.code == 0, (name, result.err)
        printed = result.out + result.err
        assert "make test" in printed, (name, printed)
        assert not RAW_CONTROL.search(printed), (name, printed)
    assert "\\x1b]0;owned" in runs["list"].out


def test_json_output_escapes_them_and_the_file_is_left_as_written(cli, git_repo, monkeypatch):
    repo, _ = hostile_repo(git_repo)
    monkeypatch.chdir(repo)
    result = cli("list", "--json")
    assert result.code == 0 and not RAW_CONTROL.search(result.out)
    assert any(HOSTILE in json.dumps(item, ensure_ascii=False) or item.get("content") == HOSTILE
               or HOSTILE in str(item) for item in json.loads(result.out))
    (path,) = (repo / ".forge" / "memory").rglob("*.md")
    assert TITLE in path.read_text()  # a hand-made file is never rewritten to clean it


def test_the_agents_context_block_shows_them(tmp_path):
    hit = {"id": "mem_00000001-0000-4000-8000-000000000000", "category": "corrections", "scope": "repo",
           "content": HOSTILE, "conflicts": [], "score": 0.9, "explain": {"dense_score": 0.9, "lexical_score": 5.0}}
    block = context.render([hit], lexical_only=False, budget=5000)
    assert "make test" in block.text and not RAW_CONTROL.search(block.text)


def test_add_writes_no_control_character(cli, git_repo, monkeypatch):
    monkeypatch.chdir(git_repo)
    assert cli("init").code == 0
    assert cli("add", HOSTILE, "--category", "project-conventions", "--scope", "repo").code == 0
    (path,) = (git_repo / ".forge" / "memory").rglob("*.md")
    text = path.read_text()
    assert "Run the tests with make test. always2J" in text and not RAW_CONTROL.search(text)


def user_line(text: str) -> str:
    return json.dumps({"type": "user", "sessionId": "s-ctl", "message": {"role": "user", "content": text}}) + "\n"


def assistant_line(text: str, msg: str) -> str:
    return json.dumps({"type": "assistant", "sessionId": "s-ctl",
                       "message": {"id": msg, "role": "assistant", "content": [{"type": "text", "text": text}]}}) + "\n"


def test_capture_writes_pasted_terminal_output_without_its_escape_bytes(cli, git_repo, monkeypatch, real_embedder):
    monkeypatch.chdir(git_repo)
    assert cli("init").code == 0
    said = (f"{COLOUR}FAILED\x1b[0m tests/test_api.py::test_login {TITLE}\n"
            "in this repo we always run the tests with \x1b[1m`make test`\x1b[0m, never plain pytest")
    transcript = git_repo.parent / "session.jsonl"
    transcript.write_text(user_line(said) + assistant_line("Understood, I'll use `make test`.", "m1"))
    result = cli("observe", "--once", str(transcript), "--json")
    assert result.code == 0, result.err
    files = list((git_repo / ".forge" / "memory").rglob("*.md"))
    assert files, "the rule was not captured"
    for path in files:
        assert not RAW_CONTROL.search(path.read_text()), path.read_text()
    memories = Workspace.open(cwd=git_repo).load().memories
    assert any("make test" in m.body for m in memories)


def test_gits_diff_of_a_memory_file_and_an_export_show_them(cli, git_repo, monkeypatch, tmp_path):
    """Found by a new-user trial: `forgemem diff-driver` (so `git log -p`) and `export` passed them through."""
    from forgemem.git.drivers import textconv

    repo, _ = hostile_repo(git_repo)
    monkeypatch.chdir(repo)
    (path,) = (repo / ".forge" / "memory").rglob("*.md")
    shown = textconv(path.read_bytes(), str(path))
    assert "make test" in shown and not RAW_CONTROL.search(shown)
    raw = textconv(b"not a memory file \x1b]0;owned\x07\r\n", "x.md")
    assert not RAW_CONTROL.search(raw)
    target = tmp_path / "AGENTS.md"
    assert cli("export", "--format", "agents-md", "-o", str(target)).code == 0
    exported = target.read_text()
    assert "make test" in exported and not RAW_CONTROL.search(exported)
