"""Every cache file corrupted in every way, then real processes: recall, context and the Claude Code hook
still answer (lexical-only with a notice at worst), with no traceback and no temporary file left, and
`doctor` repairs it (the next recall answers without a notice of damage).

Files: the sqlite index, its -wal, the FAISS file, the usage store, the observer state, the model export.
Ways: truncated, garbage, zero bytes, replaced by a directory, unreadable (skipped as root: root reads all).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from .killing import CATEGORY, FORGEMEM, TEMP, _exchange

pytestmark = pytest.mark.slow

TARGETS = {  # name -> where to find the file below (project, home, models)
    "index": ("project", ".forge/cache/repo.sqlite"),
    "index-wal": ("project", ".forge/cache/repo.sqlite-wal"),
    "faiss": ("project", ".forge/cache/repo-*.faiss"),
    "usage": ("home", ".forge/usage/repo-*.sqlite"),
    "observer": ("project", ".forge/cache/observer.sqlite"),
    "model": ("models", "*/model.onnx"),
}
WAYS = ["truncated", "garbage", "zero bytes", "directory", "unreadable"]
#: cases that fail today (strict xfails, so a fix is noticed): none since the model export is checked and redone
KNOWN: dict[tuple[str, str], str] = {}


@pytest.fixture(scope="module")
def template(tmp_path_factory, model_cache):
    """A project with memories, an index with vectors, feedback, an observer state and a model export."""
    base = tmp_path_factory.mktemp("corruption-template")
    project, home = base / "project", base / "home"
    project.mkdir()
    home.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True)
    env = environment(project, home, model_cache)
    run = lambda *args: subprocess.run([*FORGEMEM, *args], cwd=project, env=env, capture_output=True, text=True,
                                       timeout=300)
    assert run("init").returncode == 0
    ids = []
    for text in ("Run the tests with make test.", "The build cache lives in .cache/build.",
                 "Deploys go through the release train.", "Use ruff, not flake8."):
        done = run("add", text, "-c", CATEGORY)
        assert done.returncode == 0, done.stderr
        ids.append(done.stdout.split("\t")[0])
    assert run("index", "--rebuild").returncode == 0
    assert run("recall", "make test").returncode == 0
    assert run("feedback", ids[0], "useful").returncode == 0
    transcript = home / "session.jsonl"
    transcript.write_text(_exchange(1), encoding="utf-8")
    assert run("observe", "--once", str(transcript)).returncode == 0
    for name, (where, pattern) in TARGETS.items():  # every file is there to corrupt (a -wal may be checkpointed)
        assert name == "index-wal" or list({"project": project, "home": home, "models": model_cache}[where]
                                            .glob(pattern)), name
    return base


def environment(project: Path, home: Path, models: Path) -> dict:
    env = {**os.environ, "HOME": str(home), "FORGEMEM_USER_DIR": str(home / ".forge" / "memory"),
           "FORGEMEM_SERVER": "off", "FORGEMEM_MODEL_CACHE": str(models)}
    env.pop("FORGEMEM_REPO_DIR", None)
    return env


def corrupt(path: Path, way: str, rng: random.Random) -> None:
    data = path.read_bytes() if path.is_file() else b"SQLite format 3\x00" + bytes(4096)
    if way == "truncated":
        path.write_bytes(data[: max(1, len(data) // 2)])
    elif way == "garbage":
        path.write_bytes(bytes(rng.randrange(256) for _ in range(max(len(data), 4096))))
    elif way == "zero bytes":
        path.write_bytes(b"")
    elif way == "directory":
        path.unlink(missing_ok=True)
        path.mkdir()
        (path / "inside").write_text("not a cache file")
    elif way == "unreadable":
        if not path.exists():
            path.write_bytes(data)
        path.chmod(0)


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("target", list(TARGETS))
def test_a_corrupt_cache_file_still_answers_and_doctor_repairs_it(tmp_path, template, model_cache, target, way,
                                                                   request):
    if way == "unreadable" and os.geteuid() == 0:
        pytest.skip("root reads a file whatever its permissions")
    if (target, way) in KNOWN:
        request.applymarker(pytest.mark.xfail(reason=KNOWN[(target, way)], strict=True))
    base = tmp_path / "case"
    shutil.copytree(template, base, symlinks=True)
    project, home = base / "project", base / "home"
    models = model_cache
    if target == "model":  # a private copy: the session's model cache is shared by every test
        models = base / "models"
        shutil.copytree(model_cache, models)
    env = environment(project, home, models)
    where, pattern = TARGETS[target]
    root = {"project": project, "home": home, "models": models}[where]
    found = sorted(root.glob(pattern))
    path = found[0] if found else root / pattern  # a -wal checkpointed away: the corrupt one is new
    corrupt(path, way, random.Random(f"{target}/{way}"))

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        done = subprocess.run([*FORGEMEM, *args], cwd=project, env=env, capture_output=True, text=True,
                              input=stdin, timeout=300)
        assert "Traceback" not in done.stderr + done.stdout, (args, done.stderr[-3000:])
        return done

    try:
        recall = run("recall", "--json", "how do I run the tests")
        assert recall.returncode == 0, recall.stderr
        assert "make test" in recall.stdout
        context = run("context", "how do I run the tests with make?")
        assert context.returncode == 0 and "make test" in context.stdout, context.stderr
        event = json.dumps({"session_id": "s-corrupt", "transcript_path": str(home / "session.jsonl"),
                            "cwd": str(project), "permission_mode": "default",
                            "hook_event_name": "UserPromptSubmit", "prompt": "how do I run the tests with make?"})
        hook = run("hook", "claude-code", stdin=event)
        assert hook.returncode == 0 and "make test" in hook.stdout, hook.stderr
        doctor = run("doctor", "--json")
        assert doctor.returncode == 0, doctor.stdout[-3000:] + doctor.stderr[-3000:]
        again = run("doctor", "--json")
        assert again.returncode == 0, again.stdout[-3000:]
        after = run("recall", "--json", "how do I run the tests")
        assert after.returncode == 0 and "make test" in after.stdout
        assert "lexical" not in after.stderr.lower(), after.stderr  # repaired: vectors are back
        leftovers = [os.path.join(d, f) for top in (project / ".forge", home / ".forge", models)
                     for d, _, files in os.walk(top) for f in files if TEMP.match(f)]
        assert leftovers == []
    finally:
        for p in [path, *path.rglob("*")] if path.exists() else []:
            p.chmod(0o700)
