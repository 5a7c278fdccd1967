"""Caches that are not what they should be: every cache file replaced by a folder, garbage or nothing.

A run never crashes, never leaks a temporary file, repairs (moves aside what is not a file,
rebuilds what cannot be read) and says so once. The exported model is checked too: one of
the wrong size, or one ONNX Runtime cannot load, is exported again; `doctor` checks every
checksum. Real stores, real SQLite and FAISS files, the real CLI and the real model.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from forgemem.index import repair
from forgemem.recall.engine import RecallEngine
from forgemem.recall.rank import Query
from forgemem.store.folder import Store
from forgemem.workspace import Workspace

from .conftest import HashEmbedder, make_memory, write_memory

TEXTS = ["Use ruff for linting, not flake8.", "Run ruff before every commit."]
CACHE_FILES = ["repo.sqlite", "repo.sqlite-wal", "repo.sqlite-shm", "repo.lock", ".gitignore", "faiss"]


@pytest.fixture
def store(tmp_path) -> Store:
    folder = tmp_path / "project" / ".forge" / "memory"
    folder.mkdir(parents=True)
    for text in TEXTS:
        write_memory(folder, make_memory(body=text))
    return Store("repo", folder)


def recall(store: Store) -> list[str]:
    """One run as a command makes it: a fresh workspace and engine (real FAISS, a small embedder)."""
    engine = RecallEngine(Workspace({"repo": store}), embedder=HashEmbedder())
    try:
        engine.refresh()
        hits = engine.recall(Query("ruff", k=5), refresh=False).hits
        assert engine.indexes()["repo"].vector_index().ntotal == len(TEXTS)
        return sorted(h.memory.body for h in hits)
    finally:
        for index in engine.indexes().values():
            index.close()


def corrupt(path: Path, how: str) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()
    if how == "folder":
        path.mkdir()
        (path / "something").write_text("kept")
    elif how == "garbage":
        path.write_bytes(os.urandom(3000))
    else:
        path.write_bytes(b"")


def temp_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.parametrize("how", ["folder", "garbage", "empty"])
@pytest.mark.parametrize("name", CACHE_FILES)
def test_every_cache_file_replaced_is_repaired_and_said_once(store, name, how, capsys):
    assert recall(store) == sorted(TEXTS)
    cache = store.cache_dir
    if name == "faiss":
        [path] = cache.glob("repo-*.faiss")
    else:
        path = cache / name
    corrupt(path, how)
    capsys.readouterr()
    for run in range(3):
        assert recall(store) == sorted(TEXTS), (run, capsys.readouterr().err)
        said = capsys.readouterr().err
        if run == 0:
            expected = how == "folder" or (how in ("garbage", "empty") and name == "faiss") or (
                how == "garbage" and name == "repo.sqlite")
            assert bool(said) == expected, said
            if how == "folder":
                assert f"{path} was a folder, not a cache file; moved it to {path.name}.corrupt-" in said
        else:
            assert said == "", said  # once
        assert temp_files(cache) == []
    if how == "folder":
        [aside] = cache.glob(f"{path.name}.corrupt-*")
        assert (aside / "something").read_text() == "kept"  # moved, never deleted


def test_a_file_where_the_cache_folder_belongs_is_moved_aside(store, capsys):
    store.cache_dir.write_text("someone's notes")
    assert recall(store) == sorted(TEXTS)
    assert "was a file, not a cache folder" in capsys.readouterr().err
    [aside] = store.forge_dir.glob("cache.corrupt-*")
    assert aside.read_text() == "someone's notes"
    assert recall(store) == sorted(TEXTS) and capsys.readouterr().err == ""


def test_a_faiss_index_of_another_size_is_rebuilt(store, capsys):
    assert recall(store) == sorted(TEXTS)
    write_memory(store.memory_dir, make_memory(body="Format with ruff format."))
    engine = RecallEngine(Workspace({"repo": store}), embedder=HashEmbedder())
    engine.refresh()
    [path] = store.cache_dir.glob("repo-*.faiss")
    generation = engine.indexes()["repo"].generation()
    # an index of this generation's name holding the wrong vectors (a copy from elsewhere, a bad write)
    path.rename(store.cache_dir / f"repo-{generation}.faiss")
    engine.indexes()["repo"].close()
    capsys.readouterr()
    engine = RecallEngine(Workspace({"repo": store}), embedder=HashEmbedder())
    engine.refresh()
    assert engine.indexes()["repo"].vector_index().ntotal == 3
    assert "could not be used (it holds 2 vectors of 16 dimensions, not 3 of 16); rebuilt it" in capsys.readouterr().err


def test_temporary_files_of_killed_processes_are_removed(store, capsys):
    assert recall(store) == sorted(TEXTS)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    leaked = store.cache_dir / f".repo-1.faiss.{dead.stdout.strip()}.tmp"
    leaked.write_bytes(b"x" * 1000)
    [path] = store.cache_dir.glob("repo-*.faiss")
    path.unlink()  # the next run writes the index again, and cleans up on the way
    assert recall(store) == sorted(TEXTS)
    assert temp_files(store.cache_dir) == []
    assert "left by a process that was killed" in capsys.readouterr().err


# ------------------------------------------------------------------ the real CLI


def run(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "FORGEMEM_SERVER": "off"}
    return subprocess.run([sys.executable, "-m", "forgemem", *args], cwd=project, env=env, capture_output=True,
                          text=True, timeout=120)


def test_the_cli_survives_a_faiss_folder_without_leaking(git_repo, cli, monkeypatch):
    """The measured bug: a folder named repo-1.faiss crashed every run and leaked a temporary file each time."""
    monkeypatch.chdir(git_repo)
    assert cli("init").code == 0
    assert cli("add", "Use ruff for linting.", "-c", "coding-preferences").code == 0
    assert cli("recall", "ruff").code == 0
    cache = git_repo / ".forge" / "cache"
    [index] = cache.glob("repo-*.faiss")
    index.unlink()
    index.mkdir()
    for n in range(3):
        done = run(git_repo, "recall", "ruff", "--json")
        assert done.returncode == 0, done.stderr
        assert [r["content"] for r in json.loads(done.stdout)["results"]] == ["Use ruff for linting."]
        assert ("was a folder, not a cache file" in done.stderr) == (n == 0), done.stderr
        assert temp_files(cache) == []
    added = run(git_repo, "add", "Run ruff in CI.", "-c", "corrections")  # a new generation, old files removed
    assert added.returncode == 0 and run(git_repo, "recall", "ruff").returncode == 0
    assert temp_files(cache) == [] and len(list(cache.glob("repo-*.faiss"))) == 1


def test_doctor_checks_every_cache_file_and_repairs_what_it_can(git_repo, cli, monkeypatch):
    monkeypatch.chdir(git_repo)
    assert cli("init").code == 0
    assert cli("add", "Use ruff for linting.", "-c", "coding-preferences").code == 0
    assert cli("recall", "ruff").code == 0
    cache = git_repo / ".forge" / "cache"
    os.chmod(cache / "repo.sqlite", 0o644)
    (cache / "repo.lock").unlink()
    (cache / "repo.lock").mkdir()
    (cache / ".gitignore").write_text("# nothing ignored\n")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (cache / f".repo-9.faiss.{dead.stdout.strip()}.tmp").write_bytes(b"x")
    report = cli("doctor", "--json")
    assert report.code == 0, report.out
    files = report.json()["repo"]["cache_files"]
    assert sorted(files["problems"]) == sorted([
        f"{cache / 'repo.sqlite'} can be read by other users",
        f"{cache / 'repo.lock'} is a folder, not a file",
        f"{cache / '.gitignore'} does not ignore the cache's files",
    ])
    assert any("left by a process that was killed" in line for line in files["repaired"])
    assert files["not_repaired"] == [] and len(files["moved_aside"]) == 1
    assert os.stat(cache / "repo.sqlite").st_mode & 0o777 == 0o600
    assert (cache / "repo.lock").is_file() or not (cache / "repo.lock").exists()
    assert "*" in (cache / ".gitignore").read_text().split()
    again = cli("doctor", "--json").json()["repo"]["cache_files"]
    assert again["problems"] == [] and again["repaired"] == []


def test_doctor_rebuilds_a_database_that_fails_its_integrity_check(git_repo, cli, monkeypatch):
    monkeypatch.chdir(git_repo)
    assert cli("init").code == 0
    for n in range(30):
        assert cli("add", f"Memory number {n} about the deploy of service {n}.", "-c", "corrections").code == 0
    assert cli("index").code == 0
    db = git_repo / ".forge" / "cache" / "repo.sqlite"
    import sqlite3

    connection = sqlite3.connect(db)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the file itself
    pages = connection.execute("PRAGMA page_count").fetchone()[0]
    connection.close()
    assert pages > 8
    with open(db, "r+b") as handle:  # garbage over some pages past the header: opens fine, fails the check
        handle.seek(4096 * 3)
        handle.write(os.urandom(4096 * 2))
    report = cli("doctor", "--json")
    assert report.code == 0, report.out
    files = report.json()["repo"]["cache_files"]
    assert any("fails SQLite's integrity check" in p for p in files["problems"]), files
    assert cli("doctor", "--json").json()["repo"]["cache_files"]["problems"] == []
    assert len(cli("recall", "deploy", "-k", "30", "--all", "--json").json()["results"]) == 30


# ------------------------------------------------------------------ the exported model


@pytest.fixture
def own_model_cache(model_cache, tmp_path, monkeypatch, real_embedder) -> Path:
    """A copy of the session's exported model, to break."""
    folder = tmp_path / "models"
    shutil.copytree(model_cache, folder, ignore=shutil.ignore_patterns("*.lock"))
    monkeypatch.setenv("FORGEMEM_MODEL_CACHE", str(folder))
    [onnx] = folder.glob("*/model.onnx")
    return onnx


def test_a_truncated_model_is_exported_again(own_model_cache, capsys):
    from forgemem.index.embedding import load_embedder

    size = own_model_cache.stat().st_size
    os.truncate(own_model_cache, 100_000)
    embedder = load_embedder("")
    assert embedder.encode(["ruff"]).shape == (1, 384)
    assert own_model_cache.stat().st_size == size
    said = capsys.readouterr().err
    assert f"{own_model_cache} is 100000 bytes, not the {size} it was exported with; exporting it again" in said
    record = json.loads((own_model_cache.parent / "export.json").read_text())
    assert record["size"] == size and len(record["sha256"]) == 64
    load_embedder("")
    assert capsys.readouterr().err == ""  # once
    assert temp_files(own_model_cache.parent) == []


@pytest.mark.slow
def test_a_model_that_cannot_be_loaded_or_is_a_folder_is_exported_again(own_model_cache, capsys):
    from forgemem.index.embedding import load_embedder

    (own_model_cache.parent / "export.json").unlink()  # an export from before sizes were recorded
    own_model_cache.write_bytes(os.urandom(5000))
    assert load_embedder("").encode(["ruff"]).shape == (1, 384)
    assert "cannot be loaded (" in capsys.readouterr().err
    own_model_cache.unlink()
    own_model_cache.mkdir()
    assert load_embedder("").encode(["ruff"]).shape == (1, 384)
    assert "was a folder, not a cache file" in capsys.readouterr().err
    assert len(list(own_model_cache.parent.glob("model.onnx.corrupt-*"))) == 1


@pytest.mark.slow
def test_doctor_finds_a_model_whose_checksum_changed_and_exports_it_again(own_model_cache, git_repo, cli, monkeypatch):
    monkeypatch.chdir(git_repo)
    assert cli("init").code == 0
    assert cli("add", "Use ruff for linting.", "-c", "coding-preferences").code == 0
    with open(own_model_cache, "r+b") as handle:  # same size, different weights: loads, gives wrong vectors
        handle.seek(own_model_cache.stat().st_size // 2)
        handle.write(b"\x7f" * 64)
    report = cli("doctor", "--json")
    assert report.code == 0, report.out
    model = report.json()["model"]
    assert model["problems"] == [f"{own_model_cache} does not match the checksum recorded when it was exported"]
    assert model["repaired"] == [f"{own_model_cache}: exported again"]
    assert report.json()["repo"]["rebuilt"]  # the vectors the broken model made are made again
    assert cli("doctor", "--json").json()["model"]["problems"] == []


def test_repairs_are_said_on_stderr_never_stdout(capsys):
    repair.say("a test repair")
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "forgemem: a test repair\n"
