"""One small file cannot deny service: YAML is parsed with limits, and the others still load.

Attack (reproduced before the fix): a 1 KiB memory file with a YAML alias bomb made
`list`/`recall`/`context`/`index`/`doctor` grow without bound (1.84 GB after 30 s) and
stalled the shared recall server; 20,000-deep nesting raised RecursionError in every
command; `validate` said "ok" for both.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from forgemem.errors import ConfigError
from forgemem.workspace import Workspace

from ..conftest import make_memory, write_memory

FRONT = """---
id: {id}
created_at: 2026-11-21T10:30:00Z
updated_at: 2026-11-21T10:30:00Z
version: 1
scope: repo
category: project-conventions
supersedes: null
related: []
session_id: null
trigger: manual
"""

ALIAS_BOMB = """tags: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
x1: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
x2: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
x3: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
x4: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
x5: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
x6: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
x7: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
x8: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
source: [*i,*i,*i,*i,*i,*i,*i,*i,*i]
"""

POISONS = {
    "alias-bomb": (ALIAS_BOMB, "anchors and aliases"),
    "one-alias": ("x: &k hello\ntags: [*k]\n", "anchors and aliases"),
    "deep-flow": ("source: " + "[" * 20000 + "]" * 20000 + "\n", "nested more than"),
    "deep-block-sequence": ("source:\n  " + "- " * 20000 + "x\n", "nested more than"),
    "deep-mapping": ("source: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n", "nested more than"),
}


def poison_file(folder: Path, name: str, extra: str) -> Path:
    from forgemem.store.model import new_id

    path = folder / "project-conventions" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FRONT.format(id=new_id()) + extra + "---\nA poisoned memory.\n")
    return path


@pytest.fixture
def poisoned(tmp_path):
    repo = tmp_path / "project" / ".forge" / "memory"
    user = tmp_path / "home" / ".forge" / "memory"
    good = write_memory(repo, make_memory("Run migrations with make migrate."))
    paths = {name: poison_file(repo, name, extra) for name, (extra, _) in POISONS.items()}
    return repo, user, good, paths


def test_every_command_finishes_reports_each_poisoned_file_and_loads_the_rest(poisoned, tmp_path):
    repo, user, good, paths = poisoned
    env = {**os.environ, "FORGEMEM_REPO_DIR": str(repo), "FORGEMEM_USER_DIR": str(user), "FORGEMEM_SERVER": "off"}
    script = Path(sys.executable).parent / "forgemem"
    for args in (["validate"], ["list"], ["recall", "migrations", "--lexical-only"], ["index", "--rebuild",
                 "--lexical-only"], ["doctor"], ["context", "how do we run migrations?"], ["stats"]):
        started = time.monotonic()
        done = subprocess.run([str(script), *args], env=env, capture_output=True, text=True, timeout=120,
                              cwd=tmp_path)
        assert done.returncode in (0, 1), (args, done.stderr)
        assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr, (args, done.stderr)
        assert time.monotonic() - started < 60, args  # generous: it used to grow without bound
        if args == ["validate"]:
            assert done.returncode == 1
            for name, (_, reason) in POISONS.items():
                line = next(line for line in done.stdout.splitlines() if f"{name}.md" in line)
                assert reason in line, (name, line)
        if args[0] in ("list", "recall"):
            assert "migrate" in done.stdout


def test_the_poisoned_files_are_problems_with_path_and_line(poisoned):
    repo, user, good, paths = poisoned
    snap = Workspace.open(repo_dir=repo, user_dir=user).load(cache=False)
    by_path = {p.path: p for p in snap.problems}
    for name, path in paths.items():
        assert path in by_path and POISONS[name][1] in by_path[path].reason
        assert by_path[path].line is not None and by_path[path].line > 1
    assert [m.path for m in snap.memories] == [good]


def test_a_poisoned_store_does_not_stall_the_server_for_another_store(poisoned, tmp_path):
    from forgemem.recall import server

    repo, user, good, paths = poisoned
    clean = tmp_path / "clean" / ".forge" / "memory"
    write_memory(clean, make_memory("Deploy with make deploy."))
    engines = server.Engines()
    for stores in ({"repo": str(repo)}, {"repo": str(clean)}):
        request = {"op": "recall", "stores": stores, "use_embeddings": False,
                   "queries": [{"text": "make", "k": 3}]}
        started = time.monotonic()
        answer = server.handle(request, engines)
        assert answer["ok"] and time.monotonic() - started < 30
        assert answer["results"][0], stores


def test_config_files_refuse_aliases_and_deep_nesting(tmp_path):
    config = tmp_path / ".forge" / "config.yaml"
    (tmp_path / ".forge" / "memory").mkdir(parents=True)
    for text, reason in (("memory: &m {cadence_turns: 3}\nother: *m\n", "anchors and aliases"),
                         ("memory: " + "[" * 5000 + "]" * 5000 + "\n", "nested more than")):
        config.write_text(text)
        with pytest.raises(ConfigError, match=reason):
            Workspace.open(repo_dir=tmp_path / ".forge" / "memory", user_dir=tmp_path / "u")
