"""A warm `forgemem recall` answered without the CLI framework (forgemem/cli/quick.py).

A real recall server (its own process, real socket, real model) answers; each command line runs as the
console script runs it, in a process of its own, and must print what the full CLI prints.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from forgemem.cli.quick import parse
from tests.conftest import recall_server, silent_server

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_memories"
# Runs the console script's entry point and says on stderr whether typer was imported, and what else.
ENTRY = ("import atexit, sys; atexit.register(lambda: sys.stderr.write('\\nTYPER:' + str('typer' in sys.modules)"
         " + ' ' + ' '.join(m for m in ('rich', 'yaml', 'forgemem.config', 'forgemem.workspace') if m in sys.modules)));"
         "sys.argv = ['forgemem', *sys.argv[1:]]; from forgemem.cli.entry import run; run()")
# The full CLI in a process of its own, as the console script would run it without the fast path.
FULL = "import sys; sys.argv = ['forgemem', *sys.argv[1:]]; from forgemem.cli.main import run; run()"


@pytest.fixture
def served(tmp_path, monkeypatch):
    """A copy of the sample store and a running recall server; yields the `--repo-dir`/`--user-dir` args."""
    shutil.copytree(SAMPLES, tmp_path / "samples", ignore=shutil.ignore_patterns("cache"))
    args = ["--repo-dir", str(tmp_path / "samples/repo/.forge/memory"),
            "--user-dir", str(tmp_path / "samples/user/.forge/memory")]
    socket = tmp_path / "sock" / "s.sock"
    monkeypatch.setenv("FORGEMEM_SERVER", "on")
    monkeypatch.setenv("FORGEMEM_SERVER_SOCKET", str(socket))
    monkeypatch.chdir(tmp_path)
    with recall_server(socket):
        yield args


def forgemem(*args: str, env: dict | None = None, cwd: Path | None = None) -> tuple[int, str, str, bool]:
    """(exit code, stdout, stderr without the marker, whether typer was imported) of one command line."""
    code, out, err, loaded = _run(ENTRY, args, env, cwd)
    return code, out, err, "typer" in loaded


def _run(program: str, args, env: dict | None = None, cwd: Path | None = None) -> tuple[int, str, str, list[str]]:
    done = subprocess.run([sys.executable, "-P", "-c", program, *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, timeout=300)
    err, marked, marker = done.stderr.rpartition("\nTYPER:")
    if not marked:  # a program without the marker
        return done.returncode, done.stdout, done.stderr, []
    loaded = marker.split()
    return done.returncode, done.stdout, err, (["typer"] if loaded[:1] == ["True"] else []) + loaded[1:]


def test_a_warm_recall_prints_what_the_full_cli_prints_without_loading_it(served, cli):
    for options in ([], ["-k", "3", "--all"], ["--scope", "repo", "--hops", "0"], ["-c", "project-conventions"]):
        code, out, err, typer_loaded = forgemem(*served, "recall", *options, "how do I run the tests?")
        assert code == 0 and not typer_loaded, (options, err)
        full = cli(*served, "recall", *options, "how do I run the tests?")
        assert out == full.out, options
    code, out, _err, typer_loaded = forgemem(*served, "recall", "--json", "thanks")
    data = json.loads(out)
    assert code == 0 and not typer_loaded and data["served_by"] is not None
    full = cli(*served, "recall", "--json", "thanks").json()
    assert {**data, "served_by": None} == {**full, "served_by": None}


def test_the_fast_path_loads_neither_the_printing_library_nor_the_configuration(served):
    code, out, err, loaded = _run(ENTRY, [*served, "recall", "how do I run the tests?"])
    assert code == 0 and "make test" in out, err
    assert loaded == [], loaded  # the server printed it: no typer, rich, yaml, config or workspace here


def test_colours_warnings_and_relative_paths_come_out_as_the_full_cli_prints_them(served, tmp_path):
    broken = tmp_path / "samples/repo/.forge/memory/project-conventions/broken.md"
    broken.write_text("---\nid: [unclosed\n---\nbody\n", encoding="utf-8")
    relative = ["--repo-dir", "samples/repo/.forge/memory", "--user-dir", "samples/user/.forge/memory"]
    for env in ({"FORCE_COLOR": "1", "TERM": "xterm-256color", "COLUMNS": "60"}, {"NO_COLOR": "1", "FORCE_COLOR": "1"},
                {"TTY_COMPATIBLE": "1", "TERM": "dumb"}, {}):
        for options in ([], ["--all", "-k", "4"]):
            fast = _run(ENTRY, [*relative, "recall", *options, "how do I run the tests?"], env)
            full = _run(FULL, [*relative, "recall", *options, "how do I run the tests?"], env)
            assert fast[3] == [], (env, fast[2])
            assert fast[:3] == full[:3], env
            assert "1 memory file could not be read" in fast[2]
            if env.get("TERM") == "xterm-256color":
                assert "\x1b[36mrepo" in fast[1]  # the terminal's colours, as the full CLI uses them
            if not env:
                assert "\x1b[" not in fast[1]


def test_a_client_in_another_environment_gets_the_full_cli(served):
    # The server reads the stores and config its environment names; another one (here: no embeddings) is
    # answered by the command itself, which honours it.
    code, out, err, typer_loaded = forgemem(*served, "recall", "--json", "how do I run the tests?",
                                            env={"FORGEMEM_NO_EMBEDDINGS": "1"})
    assert code == 0 and typer_loaded, err
    assert json.loads(out)["lexical_only"] is True


def test_the_server_declines_what_the_command_would_refuse_or_cannot_serve(tmp_path):
    from forgemem.environment import command_environment
    from forgemem.recall.server import Engines, answer_command

    good = {"op": "recall-command", "folder": str(tmp_path), "query": "q", "scope": "all", "tags": [],
            "history": False, "show_all": False, "as_json": False, "terminal": {"environ": {}},
            "environment": command_environment(), "user_dir": str(tmp_path / "not-a-store")}
    (tmp_path / "not-a-store").mkdir()
    engines = Engines()
    for change in ({"folder": "relative"}, {"k": 0}, {"k": True}, {"hops": 6}, {"scope": "both"},
                   {"category": "gossip"}, {"tags": "a"}, {"history": "yes"}, {"cwd": str(tmp_path / "nowhere")},
                   {"terminal": {"environ": {"TERM": 5}}}, {"environment": {**command_environment(), "HOME": "/x"}},
                   {"query": "q" * 20_000}, {"query": ""}, {"query": " \t\n"}, {}):  # the last: a user store that is not a memory folder (not named memory)
        reply = answer_command({**good, **change}, engines)
        assert reply["ok"] is False and reply["error"], change


def test_a_no_server_fallback_and_anything_unusual_go_through_the_full_cli(served, cli, monkeypatch):
    for options in (["--explain"], ["-k", "0"], ["--scope", "nowhere"], ["--lexical-only"], ["-k", "2", "-k", "3"],
                    ["--hops", "6"], ["-c", "nonsense"], ["-k", "1001"]):
        code, out, err, typer_loaded = forgemem(*served, "recall", *options, "how do I run the tests?")
        full = cli(*served, "recall", *options, "how do I run the tests?")
        assert typer_loaded and code == full.code and out == full.out, options
    code, out, err, typer_loaded = forgemem("-C", "/no/such/folder", *served, "recall", "tests")
    assert typer_loaded and code != 0 and "not a folder" in err
    monkeypatch.setenv("FORGEMEM_SERVER", "off")
    code, out, _err, typer_loaded = forgemem(*served, "recall", "how do I run the tests?")
    assert code == 0 and typer_loaded and "make test" in out


def test_an_empty_query_is_a_usage_error_warm_or_not(served, cli):
    said = 'forgemem: error: the query is empty: say what to recall, e.g. forgemem recall "how do we run the tests"'
    for query in ("", "   "):
        code, out, err, typer_loaded = forgemem(*served, "recall", query)
        assert (code, out, err.strip()) == (2, "", said) and typer_loaded, query  # the server declined it
        full = cli(*served, "recall", "--json", query)
        assert (full.code, full.out, full.err.strip()) == (2, "", said)


@pytest.mark.parametrize(("args", "expected"), [
    (["recall", "q"], {"query": "q", "scope": "all", "tag": []}),
    (["--repo-dir", "r", "-C", ".", "recall", "-k", "3", "--tag", "a", "--tag", "b", "--json", "q"],
     {"query": "q", "repo_dir": "r", "cwd": ".", "k": 3, "tag": ["a", "b"], "as_json": True}),
    (["recall", "--hops", "5", "-s", "user", "--history", "--all", "q"],
     {"query": "q", "hops": 5, "scope": "user", "history": True, "show_all": True}),
])
def test_plain_command_lines_are_read(args, expected):
    found = parse(args)
    assert found is not None and {k: found[k] for k in expected} == expected


@pytest.mark.parametrize("args", [
    ["recall"], ["recall", "a", "b"], ["recall", "-k", "x", "q"], ["recall", "--hops", "-1", "q"],
    ["recall", "--explain", "q"], ["recall", "--deep", "q"], ["recall", "--queries", "f"], ["recall", "--", "-q"],
    ["recall", "-k5", "q"], ["--version", "recall", "q"], ["status"], ["recall", "q", "--repo-dir", "x"],
    ["recall", "-k", "1", "--top", "2", "q"], ["recall", "-k", "٣", "q"], ["--repo-dir", "", "recall", "q"],
])
def test_anything_else_is_left_to_the_cli(args):
    assert parse(args) is None


def _run_bytes(program: str, args, env: dict | None = None, shell_suffix: str = "") -> tuple[int, bytes, bytes, bool]:
    """(exit code, stdout, stderr, typer loaded) of one command line, as bytes; `shell_suffix` is added to
    the command as sh runs it (e.g. ">&-": stdout closed before Python starts)."""
    command = [sys.executable, "-P", "-c", program, *args]
    if shell_suffix:
        command = ["sh", "-c", f'"$@" {shell_suffix}', "sh", *command]
    done = subprocess.run(command, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                          timeout=300)
    err, marked, marker = done.stderr.rpartition(b"\nTYPER:")
    if not marked:
        return done.returncode, done.stdout, done.stderr, False
    return done.returncode, done.stdout, err, marker.startswith(b"True")


def test_a_config_changed_since_the_server_read_it_is_the_one_a_warm_recall_uses(served, tmp_path):
    config = tmp_path / "samples/repo/.forge/config.yaml"
    original = config.read_text(encoding="utf-8")
    untrusted = original.replace('classifier_model: ""', 'classifier_model: "some-model"')
    recall = [*served, "recall", "how do I run the tests?"]
    config.write_text(untrusted, encoding="utf-8")
    code, out, err, typer_loaded = forgemem(*recall)
    assert code == 0 and not typer_loaded and "ignoring classifier_model" in err
    config.write_text(original, encoding="utf-8")  # the warning goes with the setting
    code, out, err, typer_loaded = forgemem(*recall)
    assert code == 0 and not typer_loaded and "ignoring classifier_model" not in err, err
    config.write_text(untrusted, encoding="utf-8")  # and comes back with it, in --json's notes too
    code, out, err, typer_loaded = forgemem(*recall[:-1], "--json", recall[-1])
    full = _run(FULL, [*recall[:-1], "--json", recall[-1]], {"FORGEMEM_SERVER": "off"})
    assert not typer_loaded and "ignoring classifier_model" in err and err == full[2]
    assert json.loads(out)["notes"] == json.loads(full[1])["notes"] != []
    # the server's own answers (here `context`, as the hooks ask it) take recall_floor as it is now
    config.write_text(original, encoding="utf-8")
    context = [*served, "context", "how do I run the tests?"]
    assert "make test" in _run(FULL, context)[1]
    config.write_text(original + "  recall_floor: 0.99\n", encoding="utf-8")
    assert _run(FULL, context)[1] == _run(FULL, context, {"FORGEMEM_SERVER": "off"})[1] == ""


def test_text_is_printed_as_the_memory_says_it(served, cli):
    text = "Slice the kestrel rows with rows[0:100:5]; a :x: or :smile: in a log line is literal, [bold] too."
    assert cli(*served, "add", "-c", "project-conventions", text).code == 0
    code, out, err, typer_loaded = forgemem(*served, "recall", "kestrel rows slice")
    assert code == 0 and not typer_loaded, err
    assert text in out and out == cli(*served, "recall", "kestrel rows slice").out


def test_a_query_that_is_not_utf8_is_answered_by_the_server_byte_for_byte(served):
    query = os.fsdecode(b"how do I run the tests? \xff\xfe")  # as the shell hands it over: not UTF-8
    env = {"PYTHONIOENCODING": "utf-8:surrogateescape"}
    code, out, err, typer_loaded = _run_bytes(ENTRY, [*served, "recall", "--json", query], env)
    full = _run_bytes(FULL, [*served, "recall", "--json", query], {**env, "FORGEMEM_SERVER": "off"})
    assert code == 0 and not typer_loaded, err  # the server answered: the command did not run it again
    assert b'"query": "how do I run the tests? \xff\xfe"' in out
    fast_data, full_data = (json.loads(text.decode("utf-8", "surrogateescape")) for text in (out, full[1]))
    assert {**fast_data, "served_by": None} == {**full_data, "served_by": None}


def test_streams_the_client_cannot_write_to_end_as_the_full_cli_ends(served, cli):
    assert cli(*served, "add", "-c", "project-conventions", "The heron deploy needs café—crème ✓ set.").code == 0
    recall = [*served, "recall", "heron deploy"]
    # stdout closed: the printing library drops the text; nothing fails
    for suffix in (">&-", "2>&- >/dev/null"):
        code, out, err, typer_loaded = _run_bytes(ENTRY, recall, shell_suffix=suffix)
        assert (code, err) == (0, b"") and not typer_loaded, (suffix, err)
    # a terminal that cannot show the text: what the full CLI does (the line it printed, then the error)
    fast = _run_bytes(ENTRY, recall, {"PYTHONIOENCODING": "ascii"})
    full = _run_bytes(FULL, recall, {"PYTHONIOENCODING": "ascii", "FORGEMEM_SERVER": "off"})
    assert fast[:3] == full[:3] and fast[0] == 1 and b"internal error: UnicodeEncodeError" in fast[2]
    if Path("/dev/full").exists():  # a full disk: one line, not a traceback
        fast = _run_bytes(ENTRY, recall, shell_suffix=">/dev/full")
        full = _run_bytes(FULL, recall, {"FORGEMEM_SERVER": "off"}, shell_suffix=">/dev/full")
        assert fast[:3] == full[:3] and not fast[3] and fast[0] == 1
        assert fast[2].startswith(b"forgemem: internal error: OSError: [Errno 28]") and b"Traceback" not in fast[2]


def test_a_debugging_or_classifier_variable_does_not_keep_the_fast_path_from_a_client(served):
    # they change nothing about what a recall finds or prints: a server started by a debugging session (or by
    # the hooks of forgemem's own classifier run) still answers everyday calls the fast way, and the other way
    code, out, err, typer_loaded = forgemem(*served, "recall", "how do I run the tests?",
                                            env={"FORGEMEM_DEBUG": "1", "FORGEMEM_CLASSIFIER_RUN": "1"})
    assert code == 0 and not typer_loaded and "make test" in out, err


def test_ctrl_c_while_the_server_answers_ends_in_one_line(tmp_path, monkeypatch):
    import signal
    import time

    with silent_server(tmp_path / "sock") as (path, accepted):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "FORGEMEM_SERVER": "on", "FORGEMEM_SERVER_SOCKET": str(path)}
        client = subprocess.Popen([sys.executable, "-P", "-c", ENTRY, "recall", "which shell"], env=env, cwd=tmp_path,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 60
        while not accepted:
            assert time.monotonic() < deadline and client.poll() is None
            time.sleep(0.05)
        time.sleep(0.2)
        client.send_signal(signal.SIGINT)
        _out, err = client.communicate(timeout=60)
    assert client.returncode == 130
    assert err.startswith("forgemem: interrupted\n") and "Traceback" not in err
