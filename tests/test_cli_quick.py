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
from tests.conftest import recall_server

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_memories"
# Runs the console script's entry point and says on stderr whether typer was imported.
ENTRY = ("import atexit, sys; atexit.register(lambda: sys.stderr.write('\\nTYPER:' + str('typer' in sys.modules)));"
         "sys.argv = ['forgemem', *sys.argv[1:]]; from forgemem.cli.entry import run; run()")


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


def forgemem(*args: str) -> tuple[int, str, str, bool]:
    """(exit code, stdout, stderr without the marker, whether typer was imported) of one command line."""
    done = subprocess.run([sys.executable, "-P", "-c", ENTRY, *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    err, _, marker = done.stderr.rpartition("\nTYPER:")
    return done.returncode, done.stdout, err, marker == "True"


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


def test_a_no_server_fallback_and_anything_unusual_go_through_the_full_cli(served, cli, monkeypatch):
    for options in (["--explain"], ["-k", "0"], ["--scope", "nowhere"], ["--lexical-only"], ["-k", "2", "-k", "3"]):
        code, out, err, typer_loaded = forgemem(*served, "recall", *options, "how do I run the tests?")
        full = cli(*served, "recall", *options, "how do I run the tests?")
        assert typer_loaded and code == full.code and out == full.out, options
    monkeypatch.setenv("FORGEMEM_SERVER", "off")
    code, out, _err, typer_loaded = forgemem(*served, "recall", "how do I run the tests?")
    assert code == 0 and typer_loaded and "make test" in out


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
    ["recall"], ["recall", "a", "b"], ["recall", "-k", "x", "q"], ["recall", "-k", "0", "q"], ["recall", "--hops", "6", "q"],
    ["recall", "--scope", "both", "q"], ["recall", "-c", "nonsense", "q"], ["recall", "--explain", "q"],
    ["recall", "--deep", "q"], ["recall", "--queries", "f"], ["recall", "--", "-q"], ["recall", "-k5", "q"],
    ["--version", "recall", "q"], ["status"], ["recall", "q", "--repo-dir", "x"], ["-C", "/no/such/folder", "recall", "q"],
    ["recall", "-k", "1", "--top", "2", "q"], ["recall", "-k", "٣", "q"],
])
def test_anything_else_is_left_to_the_cli(args):
    assert parse(args) is None
