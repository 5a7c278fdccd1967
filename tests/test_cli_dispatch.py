"""The console script loads only the module of the command it runs (`forgemem.cli.dispatch`)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from forgemem.cli.dispatch import MODULES, module_for


def registered(app) -> dict[str, str]:
    return {(c.name or c.callback.__name__.rstrip("_").replace("_", "-")): c.callback.__module__.rsplit(".", 1)[1]
            for c in app.registered_commands}


def test_the_table_names_the_module_of_every_command():
    from forgemem.cli.main import app

    assert registered(app) == MODULES


@pytest.mark.parametrize("module", sorted(set(MODULES.values())))
def test_each_module_alone_registers_its_commands(module):
    code = ("import importlib, json, forgemem.cli.app as a; "
            f"importlib.import_module('forgemem.cli.{module}'); "
            "print(json.dumps([c.name or c.callback.__name__.rstrip('_').replace('_', '-') "
            "for c in a.app.registered_commands]))")
    done = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True)
    assert {name for name, m in MODULES.items() if m == module} <= set(json.loads(done.stdout))


@pytest.mark.parametrize(("args", "module"), [
    (["recall", "how do I run the tests?"], "recall"),
    (["--repo-dir", "x/.forge/memory", "--user-dir", "u", "context", "-"], "recall"),
    (["--repo-dir=x", "-C", "somewhere", "list", "--json"], "memories"),
    (["hook", "codex"], "agents"),
    (["--help"], None), (["-h", "recall"], None), (["--version"], None), ([], None),
    (["recal", "x"], None), (["-C"], None),
])
def test_the_command_is_found_past_the_global_options(args, module):
    assert module_for(args) == module


def test_a_run_loads_only_its_command_and_still_works(tmp_path):
    code = ("import sys; sys.argv = ['forgemem', *sys.argv[1:]]\n"
            "from forgemem.cli.entry import run\n"
            "try:\n    run()\nexcept SystemExit as exc:\n    code = exc.code\n"
            "print('LOADED', ' '.join(m for m in ('forgemem.cli.agents', 'forgemem.cli.git', 'forgemem.cli.tidy') "
            "if m in sys.modules), 'CODE', code)")
    args = ["--repo-dir", str(tmp_path / "r/.forge/memory"), "--user-dir", str(tmp_path / "u"), "recall", "tests"]
    done = subprocess.run([sys.executable, "-P", "-c", code, *args], capture_output=True, text=True)
    assert "no matching memories" in done.stdout and done.stdout.strip().endswith("LOADED  CODE 0"), done
    done = subprocess.run([sys.executable, "-P", "-c", code, "--help"], capture_output=True, text=True)
    assert "tidy" in done.stdout and "forgemem.cli.agents" in done.stdout, done  # help lists every command
