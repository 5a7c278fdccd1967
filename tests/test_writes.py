"""Writes that cannot lose or fork: parallel real CLI processes, killed writers, retried adds, stale reads."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from filelock import FileLock, Timeout

from forgemem.errors import ForgememError
from forgemem.store import memfile
from forgemem.store.folder import Store
from forgemem.store.writing import TEMP_FILE, fingerprint, lock_path
from forgemem.workspace import Workspace

from .conftest import git

FORGEMEM = [sys.executable, "-m", "forgemem"]


def run(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*FORGEMEM, *args], cwd=project, capture_output=True, text=True, env=dict(os.environ),
                          timeout=300)


def add(project: Path, text: str, *args: str) -> str:
    done = run(project, "add", text, "-c", "project-conventions", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\t")[0]


def parallel(project: Path, commands: list[list[str]]) -> list[subprocess.CompletedProcess]:
    """Start every command at once (real processes), then wait for all of them."""
    procs = [subprocess.Popen([*FORGEMEM, *c], cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=dict(os.environ)) for c in commands]
    results = []
    for proc, command in zip(procs, commands, strict=True):
        out, err = proc.communicate(timeout=300)
        results.append(subprocess.CompletedProcess(command, proc.returncode, out, err))
    return results


@pytest.fixture
def store(git_repo):
    assert run(git_repo, "init").returncode == 0
    return git_repo


def memory_dir(project: Path) -> Path:
    return project / ".forge" / "memory"


def files(project: Path) -> list[Path]:
    return sorted(p for p in memory_dir(project).rglob("*.md"))


def temp_files(project: Path) -> list[Path]:
    return [p for p in memory_dir(project).rglob("*") if TEMP_FILE.match(p.name)]


def read(project: Path, memory_id: str):
    workspace = Workspace.open(cwd=project)
    return workspace.load(cache=False).get(memory_id)


# ------------------------------------------------------------------ parallel writers


def test_ten_parallel_links_save_ten_edges(store):
    a = add(store, "Deploys go through the release train.")
    others = [add(store, f"Release train rule number {n} about tagging.") for n in range(10)]
    results = parallel(store, [["link", a, b, "--rel", "relates-to"] for b in others])
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    memory = read(store, a)
    assert sorted(r.id for r in memory.related) == sorted(others)
    assert run(store, "validate").returncode == 0
    assert not temp_files(store)


def test_ten_parallel_supersedes_give_one_new_version_and_nine_clear_refusals(store):
    base = add(store, "The staging database is reset every night.")
    results = parallel(store, [["add", f"The staging database is reset every {day}.", "--supersedes", base]
                               for day in ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
                                           "Sunday", "weekday", "weekend", "morning")])
    won = [r for r in results if r.returncode == 0]
    refused = [r for r in results if r.returncode != 0]
    assert len(won) == 1 and len(refused) == 9, [r.stderr for r in results]
    winner = won[0].stdout.split("\t")[0]
    for r in refused:
        assert r.returncode == 2
        assert f"{base} is already superseded by {winner}" in r.stderr, r.stderr
        assert "nothing was written" in r.stderr
    snap = Workspace.open(cwd=store).load(cache=False)
    assert snap.graph.superseded_by[base] == [winner]  # no fork
    assert len(files(store)) == 2
    assert "fork" not in run(store, "conflicts").stdout.lower()


def test_parallel_adds_of_different_kinds_all_land(store):
    base = add(store, "Feature flags live in config/flags.yaml.")
    other = add(store, "Flags are reviewed every quarter.")
    commands = [["add", f"Independent memory {n} about caching.", "-c", "project-conventions"] for n in range(6)]
    commands += [["link", other, base, "--rel", "refines"], ["forget", other, "--reason", "stale"]]
    results = parallel(store, commands)
    for r in results[:6]:
        assert r.returncode == 0, r.stderr
    link, forget = results[6], results[7]
    assert forget.returncode == 0, forget.stderr
    # the link either landed before the retraction, or was written on top of a fresh read: never lost silently
    assert link.returncode == 0, link.stderr
    assert any(r.id == base for r in read(store, other).related)
    assert len(files(store)) == 2 + 6 + 1
    assert run(store, "validate").returncode == 0


# ------------------------------------------------------------------ killed writers and the lock


HOLDER = textwrap.dedent("""
    import sys, tempfile, time
    from pathlib import Path
    from forgemem.workspace import Workspace
    ws = Workspace.open(cwd=Path(sys.argv[1]))
    with ws.writing():
        folder = ws.stores["repo"].memory_dir / "project-conventions"
        folder.mkdir(exist_ok=True)
        # what atomic_write_text leaves when it is killed between writing its temporary file and the rename
        fd, tmp = tempfile.mkstemp(prefix=".half-written-abcdef12.md.", suffix=".tmp", dir=folder)
        with open(fd, "w") as handle:
            handle.write("---\\nid: mem_half")
        print(tmp, flush=True)
        time.sleep(600)
""")


def test_a_writer_killed_while_holding_the_lock_blocks_nobody_and_its_temp_file_is_cleaned(store):
    repo_store = Store("repo", memory_dir(store))
    lock = lock_path(repo_store)
    assert lock.parent == store / ".forge" / "cache"  # beside the cache, never in the tracked files
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(store)], stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ))
    try:
        tmp = Path(holder.stdout.readline().strip())
        assert tmp.exists() and TEMP_FILE.match(tmp.name)
        with pytest.raises(Timeout):  # while it lives, it holds the lock
            FileLock(str(lock)).acquire(timeout=0)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    probe = FileLock(str(lock))
    probe.acquire(timeout=0)  # the kernel dropped the dead process's lock at once
    probe.release()
    done = run(store, "add", "Builds are cached per branch.", "-c", "project-conventions")
    assert done.returncode == 0, done.stderr
    assert "removed 1 unfinished write" in done.stderr and tmp.name in done.stderr
    assert not tmp.exists() and not temp_files(store)
    again = run(store, "add", "Artifacts are kept for 30 days.", "-c", "project-conventions")
    assert again.returncode == 0 and "unfinished" not in again.stderr  # reported once, when it was cleaned
    assert ".forge/cache" not in git(store, "status", "--porcelain", "--untracked-files=all")  # dirties nothing
    assert git(store, "check-ignore", str(lock)).strip()  # it is ignored with the cache


@pytest.mark.slow
def test_adds_killed_at_random_moments_then_retried_leave_each_memory_once_and_nothing_half_written(store):
    rng = random.Random(14)
    texts = [f"Killed-write memory number {n} about the build cache." for n in range(25)]
    kills = 0
    for text in texts:
        proc = subprocess.Popen([*FORGEMEM, "add", text, "-c", "project-conventions"], cwd=store,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
        try:
            proc.wait(rng.uniform(0.05, 1.2))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.communicate()
        retried = add(store, text)  # the retry: returns the memory if the killed one had written it
        assert read(store, retried).body == text
    bodies = [memfile.read_file(p).body for p in files(store)]
    assert sorted(bodies) == sorted(texts)  # each exactly once: nothing lost, nothing duplicated
    assert kills > 0
    add(store, "One more write cleans whatever the kills left.")
    assert not temp_files(store)
    assert run(store, "validate").returncode == 0


# ------------------------------------------------------------------ retried adds


def test_a_retried_identical_add_returns_the_memory_already_written(store):
    first = run(store, "add", "Use pnpm, not npm.", "-c", "coding-preferences", "-t", "js")
    again = run(store, "add", "Use pnpm, not npm.", "-c", "coding-preferences", "-t", "js", "--json")
    assert first.returncode == 0 and again.returncode == 0, again.stderr
    memory_id = first.stdout.split("\t")[0]
    assert '"existing": true' in again.stdout and memory_id in again.stdout
    assert "the same memory was added at" in again.stderr and "nothing new was written" in again.stderr
    assert len(files(store)) == 1
    # a different tag, category or scope is a different memory
    assert add(store, "Use pnpm, not npm.", "-t", "node") != memory_id
    assert len(files(store)) == 2


def test_a_retried_supersede_returns_the_new_version_instead_of_a_fork(store):
    base = add(store, "Tests run with pytest -x.")
    first = add(store, "Tests run with pytest -x -q.", "--supersedes", base)
    assert add(store, "Tests run with pytest -x -q.", "--supersedes", base) == first
    refused = run(store, "add", "Tests run with pytest -q.", "--supersedes", base)
    assert refused.returncode == 2 and f"already superseded by {first}" in refused.stderr
    assert len(files(store)) == 2


def test_an_identical_add_after_the_window_is_a_new_memory(store):
    memory_id = add(store, "Migrations are written by hand.")
    path = files(store)[0]
    path.write_text(re.sub(r"created_at: \S+", "created_at: 2020-01-01T00:00:00Z", path.read_text()))
    assert add(store, "Migrations are written by hand.") != memory_id
    assert len(files(store)) == 2


# ------------------------------------------------------------------ stale reads


def test_a_rewrite_from_a_stale_read_is_refused_and_the_newer_file_is_kept(store):
    a = add(store, "Logs go to stderr as JSON.")
    b = add(store, "Log levels are set per module.")
    stale = Workspace.open(cwd=store)
    memory = stale.load().get(a)
    assert run(store, "link", a, b, "--rel", "relates-to").returncode == 0  # another process rewrites it
    memory.extra = {**memory.extra, "tags": ["logging"]}
    with pytest.raises(ForgememError, match="changed by another process since it was read"):
        stale.replace(memory)
    with pytest.raises(ForgememError, match="changed by another process since it was read"):
        stale.remove(memory)
    kept = read(store, a)
    assert [r.id for r in kept.related] == [b] and kept.tags == []
    fresh = Workspace.open(cwd=store)
    memory = fresh.load().get(a)
    memory.extra = {**memory.extra, "tags": ["logging"]}
    fresh.replace(memory)  # a fresh read may write, and write again
    memory.extra = {**memory.extra, "tags": ["logging", "json"]}
    fresh.replace(memory)
    assert read(store, a).tags == ["logging", "json"] and read(store, a).related == kept.related


def test_fingerprints_from_the_cache_match_the_files(project):
    workspace = Workspace.open(cwd=project)
    snap = workspace.load()  # through the cache
    assert snap.memories
    for memory in snap.memories:
        assert fingerprint(memory) == fingerprint(memfile.read_file(memory.path)), memory.path


def test_adding_again_a_memory_superseded_since_writes_it_anew(tmp_path):
    """Found by a new-user trial: `add` within the duplicate window handed back the superseded memory, so the
    rule re-added stayed not current."""
    from forgemem.workspace import Workspace, init_forge_dir

    init_forge_dir(tmp_path / "p" / ".forge")
    init_forge_dir(tmp_path / "h" / ".forge")
    ws = Workspace.open(cwd=tmp_path, repo_dir=tmp_path / "p/.forge/memory", user_dir=tmp_path / "h/.forge/memory")
    first, _ = ws.add("Round money with Math.round.", scope="repo", category="project-conventions")
    assert ws.add("Round money with Math.round.", scope="repo", category="project-conventions")[0].id == first.id
    newer, _ = ws.add("Round money with a decimal library.", scope="repo", category="project-conventions",
                      supersedes=[first.id])
    again, _ = ws.add("Round money with Math.round.", scope="repo", category="project-conventions")
    assert again.id != first.id
    assert again.id in {m.id for m in ws.load().graph.heads()}
