"""The store cache: refresh correctness against real files, SQLite, FAISS and file locks."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import time
from pathlib import Path

import pytest

from forgemem.index.cache import StoreIndex
from forgemem.store import memfile
from forgemem.store.folder import Store

from .conftest import HashEmbedder, make_memory, write_memory


@pytest.fixture
def store(tmp_path) -> Store:
    folder = tmp_path / "proj/.forge/memory"
    folder.mkdir(parents=True)
    return Store("repo", folder)


def fill(store: Store, n: int = 5):
    return [write_memory(store.memory_dir, make_memory(body=f"Memory number {i} about topic {i}.")) for i in range(n)]


def ids_in(index: StoreIndex) -> set[str]:
    return {m.id for _, m in index.memories()}


def test_first_refresh_indexes_everything_and_the_second_does_nothing(store):
    paths = fill(store)
    index = StoreIndex(store)
    embedder = HashEmbedder()
    report = index.refresh(embedder)
    assert (report.added, report.embedded, report.files) == (5, 5, 5)
    assert len(embedder.encoded) == 5
    assert index.vector_index().ntotal == 5
    generation = index.generation()
    again = index.refresh(embedder)
    assert again.unchanged and len(embedder.encoded) == 5
    assert index.generation() == generation
    assert ids_in(index) == {memfile.read_file(p).id for p in paths}
    assert (store.cache_dir / ".gitignore").read_text().endswith("*\n")


def test_unchanged_store_is_not_read(store, monkeypatch):
    fill(store)
    index = StoreIndex(store)
    index.refresh(HashEmbedder())

    def no_reading(self, *args, **kwargs):
        raise AssertionError(f"read {self}")

    monkeypatch.setattr(Path, "read_bytes", no_reading)
    monkeypatch.setattr(Path, "read_text", no_reading)
    assert index.refresh(HashEmbedder()).unchanged


def test_edit_reembeds_only_the_changed_memory(store):
    paths = fill(store)
    index = StoreIndex(store)
    embedder = HashEmbedder()
    index.refresh(embedder)
    embedder.encoded.clear()
    text = paths[2].read_text().replace("Memory number 2", "Memory number two, edited by hand")
    paths[2].write_text(text)
    report = index.refresh(embedder)
    assert (report.changed, report.embedded) == (1, 1)
    assert embedder.encoded == ["Memory number two, edited by hand about topic 2."]
    assert index.lexical("edited by hand", 5)[0][0] in {r for r, _ in index.memories()}


def test_front_matter_only_edit_keeps_the_vector(store):
    paths = fill(store, 2)
    index = StoreIndex(store)
    embedder = HashEmbedder()
    index.refresh(embedder)
    embedder.encoded.clear()
    paths[0].write_text(paths[0].read_text().replace("trigger: manual", "trigger: import"))
    report = index.refresh(embedder)
    assert report.changed == 1 and report.embedded == 0
    assert {m.trigger for _, m in index.memories()} == {"manual", "import"}


def test_touch_without_change_rehashes_but_does_not_reparse(store):
    paths = fill(store, 2)
    index = StoreIndex(store)
    index.refresh(HashEmbedder())
    later = time.time() + 5
    os.utime(paths[0], (later, later))
    report = index.refresh(HashEmbedder())
    assert (report.touched, report.changed, report.embedded) == (1, 0, 0)
    assert index.refresh(HashEmbedder()).unchanged


def test_delete_and_rename(store):
    paths = fill(store, 3)
    index = StoreIndex(store)
    embedder = HashEmbedder()
    index.refresh(embedder)
    gone = memfile.read_file(paths[0]).id
    paths[0].unlink()
    moved = memfile.read_file(paths[1]).id
    target = store.memory_dir / "archive" / "renamed.md"
    target.parent.mkdir()
    paths[1].rename(target)
    embedder.encoded.clear()
    report = index.refresh(embedder)
    assert report.deleted == 2 and report.added == 1
    assert gone not in ids_in(index) and moved in ids_in(index)
    assert {m.path for _, m in index.memories() if m.id == moved} == {target}
    assert index.vector_index().ntotal == 2
    assert index.check() == []


def test_broken_file_is_cached_as_a_problem_and_recovers(store):
    paths = fill(store, 2)
    index = StoreIndex(store)
    index.refresh(HashEmbedder())
    good = paths[0].read_text()
    paths[0].write_text(good.replace("category: project-conventions", "category: misc"))
    index.refresh(HashEmbedder())
    assert [p.reason.split(" (")[0] for p in index.problems()] == ["unknown category 'misc'"]
    assert len(index.memories()) == 1
    paths[0].write_text(good)
    index.refresh(HashEmbedder())
    assert index.problems() == [] and len(index.memories()) == 2


@pytest.mark.parametrize("damage", ["garbage", "truncate", "delete"])
def test_corrupt_or_missing_cache_is_rebuilt(store, damage):
    fill(store, 4)
    index = StoreIndex(store)
    index.refresh(HashEmbedder())
    index.close()
    db = index.db_path
    for extra in (Path(f"{db}-wal"), Path(f"{db}-shm")):
        extra.unlink(missing_ok=True)
    if damage == "garbage":
        db.write_bytes(b"this is not a database at all" * 100)
    elif damage == "truncate":
        db.write_bytes(db.read_bytes()[:2048])
    else:
        db.unlink()
    fresh = StoreIndex(store)
    report = fresh.refresh(HashEmbedder())
    assert report.embedded == 4
    assert len(fresh.memories()) == 4 and fresh.vector_index().ntotal == 4


def test_a_cache_another_process_holds_is_not_taken_for_corrupt(store, monkeypatch):
    # Another process writes to the cache for longer than SQLite waits: this refresh says the cache is busy
    # and leaves it alone. It used to take "database is locked" for a corrupt file and delete the cache
    # from under the other process, which lost that process's write.
    from forgemem.index import database
    from forgemem.index.cache import CacheBusy

    fill(store, 3)
    StoreIndex(store).refresh(HashEmbedder())
    write_memory(store.memory_dir, make_memory(body="A memory written while the cache is held."))
    monkeypatch.setattr(database, "BUSY_TIMEOUT", 0.2)
    other = sqlite3.connect(StoreIndex(store).db_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO meta (key, value) VALUES ('written-by-the-other-process', '1')")
    index = StoreIndex(store)
    with pytest.raises(CacheBusy, match="is busy: another forgemem process held it"):
        index.refresh(HashEmbedder())
    other.execute("COMMIT")
    other.close()
    assert index.db_path.is_file()
    assert database.get_meta(index.db, "written-by-the-other-process") == "1"
    report = index.refresh(HashEmbedder())
    assert (report.added, report.embedded) == (1, 1) and len(index.memories()) == 4


def test_corrupt_faiss_file_is_rebuilt_from_stored_vectors(store):
    fill(store, 3)
    index = StoreIndex(store)
    embedder = HashEmbedder()
    index.refresh(embedder)
    index.vector_index()
    index.close()
    [faiss_file] = store.cache_dir.glob("repo-*.faiss")
    faiss_file.write_bytes(b"broken")
    fresh = StoreIndex(store)
    embedder.encoded.clear()
    assert fresh.vector_index().ntotal == 3
    assert embedder.encoded == []  # no re-embedding: the vectors live in the database


def test_model_change_rebuilds_vectors(store):
    fill(store, 3)
    index = StoreIndex(store)
    index.refresh(HashEmbedder(dim=16))
    other = HashEmbedder(dim=8, name="other-model")
    report = index.refresh(other)
    assert report.embedded == 3 and "embedder changed" in report.rebuilt_reason
    assert index.vector_index().d == 8
    assert index.status(other).stale == []


def test_status_says_what_is_stale(store):
    paths = fill(store, 2)
    index = StoreIndex(store)
    embedder = HashEmbedder()
    index.refresh(embedder)
    paths[0].write_text(paths[0].read_text() + "more\n")
    write_memory(store.memory_dir, make_memory(body="brand new"))
    paths[1].unlink()
    stale = index.status(embedder).stale
    assert sorted(s.split(":")[0] for s in stale) == ["changed", "deleted", "new"]


def _refresh_in_process(folder: str, queue) -> None:
    from tests.conftest import HashEmbedder as Embedder

    index = StoreIndex(Store("repo", Path(folder)))
    embedder = Embedder()
    report = index.refresh(embedder)
    queue.put(report.embedded)


def test_two_concurrent_refreshes_are_serialised(store):
    fill(store, 60)
    queue = multiprocessing.get_context("spawn").Queue()
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_refresh_in_process, args=(str(store.memory_dir), queue)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    embedded = sorted(queue.get(timeout=5) for _ in workers)
    # one process did the work under the lock; the other found nothing left to do
    assert embedded == [0, 60]
    index = StoreIndex(store)
    assert len(index.memories()) == 60 and index.check() == []


def test_unwritable_cache_folder_falls_back_to_memory(tmp_path, cli):
    # The cache folder is a link to a folder nobody can create files in, root included.
    folder = tmp_path / "ro/.forge/memory"
    folder.mkdir(parents=True)
    write_memory(folder, make_memory(body="Use pnpm, not npm."))
    (tmp_path / "ro/.forge/cache").symlink_to("/proc/self/fdinfo")
    result = cli("--repo-dir", str(folder), "recall", "pnpm", "--lexical-only", "--json")
    assert result.code == 0, result.err
    assert "working without a cache" in result.err
    assert [r["content"] for r in result.json()["results"]] == ["Use pnpm, not npm."]


def test_a_file_where_the_cache_folder_belongs_is_moved_aside_once(tmp_path, cli):
    folder = tmp_path / "ro/.forge/memory"
    folder.mkdir(parents=True)
    write_memory(folder, make_memory(body="Use pnpm, not npm."))
    (tmp_path / "ro/.forge/cache").write_text("not a folder")
    result = cli("--repo-dir", str(folder), "recall", "pnpm", "--lexical-only", "--json")
    assert result.code == 0, result.err
    assert "was a file, not a cache folder; moved it to cache.corrupt-" in result.err
    assert [r["content"] for r in result.json()["results"]] == ["Use pnpm, not npm."]
    aside = [p for p in (tmp_path / "ro/.forge").iterdir() if p.name.startswith("cache.corrupt-")]
    assert [p.read_text() for p in aside] == ["not a folder"]  # kept, never deleted
    assert (tmp_path / "ro/.forge/cache/repo.sqlite").is_file()
    again = cli("--repo-dir", str(folder), "recall", "pnpm", "--lexical-only", "--json")
    assert again.code == 0 and "cache" not in again.err  # said once


def test_database_is_valid_sqlite_with_fts5(store):
    fill(store, 2)
    index = StoreIndex(store)
    index.refresh(HashEmbedder())
    db = sqlite3.connect(index.db_path)
    assert db.execute("SELECT count(*) FROM fts WHERE fts MATCH 'topic'").fetchone()[0] == 2


def test_long_lived_engine_applies_changes_written_by_another_process(store):
    """The recall server's engine only reads what changed since its last look."""
    import numpy as np

    from forgemem.recall.engine import RecallEngine
    from forgemem.recall.rank import Query
    from forgemem.workspace import Workspace

    paths = fill(store, 6)
    embedder = HashEmbedder()
    user = store.memory_dir.parent / "no-user"

    def engine():
        return RecallEngine(Workspace.open(repo_dir=store.memory_dir, user_dir=user), embedder=embedder)

    server = engine()
    server.refresh()
    server.recall(Query("topic", k=3))  # loads the FAISS index into memory
    # Another process edits, adds and deletes, and refreshes the shared cache itself.
    paths[1].write_text(paths[1].read_text().replace("Memory number 1", "Memory number one, rewritten"))
    paths[2].unlink()
    added = write_memory(store.memory_dir, make_memory(body="A brand new memory about kayaks."))
    StoreIndex(store).refresh(embedder)

    before = server.snapshot
    server.refresh()
    assert server.snapshot is not before
    fresh = engine()
    fresh.refresh()
    assert sorted(m.id for m in server.snapshot.memories) == sorted(m.id for m in fresh.snapshot.memories)
    assert memfile.read_file(added).id in server.snapshot.graph.memories
    bodies = {m.body for m in server.snapshot.memories}
    assert "Memory number one, rewritten about topic 1." in bodies and "Memory number 2 about topic 2." not in bodies
    mine, theirs = server.indexes()["repo"].vector_index(), fresh.indexes()["repo"].vector_index()
    assert mine.ntotal == theirs.ntotal == 6
    ids = sorted(r for r, _ in fresh.indexes()["repo"].memories())
    for rowid in ids:
        assert np.array_equal(mine.reconstruct(rowid), theirs.reconstruct(rowid))
    query = Query("kayaks topic rewritten", k=6)
    assert [h.id for h in server.recall(query).hits] == [h.id for h in fresh.recall(query).hits]


def test_watcher_limits_refresh_to_the_files_that_changed(store):
    """The recall server's watcher: real watchdog events, only changed files re-read."""
    from forgemem.recall.engine import RecallEngine
    from forgemem.workspace import Workspace

    paths = fill(store, 4)
    engine = RecallEngine(Workspace.open(repo_dir=store.memory_dir, user_dir=store.memory_dir.parent / "u"),
                          embedder=HashEmbedder())
    engine.watch()
    try:
        engine.refresh_if_changed()  # first call: full refresh
        assert len(engine.snapshot.memories) == 4

        def settle(predicate):
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                engine.refresh_if_changed()
                if predicate():
                    return True
                time.sleep(0.05)
            return False

        paths[0].write_text(paths[0].read_text().replace("Memory number 0", "Memory number zero"))
        assert settle(lambda: any(m.body.startswith("Memory number zero") for m in engine.snapshot.memories))
        new = write_memory(store.memory_dir, make_memory(body="Watched and found."))
        assert settle(lambda: any(m.body == "Watched and found." for m in engine.snapshot.memories))
        paths[1].unlink()
        assert settle(lambda: len(engine.snapshot.memories) == 4)
        # a folder moved away: a list of files cannot describe it, so a full refresh runs
        (store.memory_dir / "project-conventions").rename(store.memory_dir.parent / "elsewhere")
        assert settle(lambda: len(engine.snapshot.memories) == 0)
        assert new.parent.name == "project-conventions"
    finally:
        engine._watcher.stop()


def test_watched_engine_does_not_walk_the_store_when_nothing_happened(store, monkeypatch):
    from forgemem.recall.engine import RecallEngine
    from forgemem.workspace import Workspace

    fill(store, 3)
    engine = RecallEngine(Workspace.open(repo_dir=store.memory_dir, user_dir=store.memory_dir.parent / "u"),
                          embedder=HashEmbedder())
    engine.watch()
    try:
        engine.refresh_if_changed()
        time.sleep(0.3)  # let the events of the first build drain
        engine.refresh_if_changed()

        def no_walk(self):
            raise AssertionError("walked the store")

        monkeypatch.setattr(Store, "stat_files", no_walk)
        for _ in range(3):
            engine.refresh_if_changed()
    finally:
        engine._watcher.stop()


def test_parallel_parsing_gives_the_same_reads_in_the_same_order(store, monkeypatch):
    """Large batches are parsed in worker processes; the result must not differ."""
    import shutil

    import forgemem.store.folder as store_module

    from .conftest import BAD_FILES

    fill(store, 12)
    shutil.copy(BAD_FILES / "unknown-category" / "broken.md", store.memory_dir / "broken.md")
    names = sorted(store.stat_files())
    serial = store.read_many(names)
    monkeypatch.setattr(store_module, "PARALLEL_FROM", 2)
    parallel = store.read_many(names)
    assert [r.name for r in parallel] == names
    assert parallel == serial
    assert [p.reason.split(" (")[0] for r in parallel for p in r.problems] == ["unknown category 'misc'"]
    memories, problems = store.load()
    assert len(memories) == 12 and len(problems) == 1


def test_long_lived_engine_applies_a_batch_larger_than_one_query_chunk(store):
    """Hundreds of files changed at once: the FAISS index is patched in chunks, none lost."""
    from forgemem.recall.engine import RecallEngine
    from forgemem.workspace import Workspace

    fill(store, 3)
    embedder = HashEmbedder()
    server = RecallEngine(Workspace.open(repo_dir=store.memory_dir, user_dir=store.memory_dir.parent / "u"),
                          embedder=embedder)
    server.refresh()
    assert server.indexes()["repo"].vector_index().ntotal == 3
    fill(store, 700)  # another process writes 700 more files and refreshes the cache
    StoreIndex(store).refresh(embedder)
    server.refresh()
    assert server.indexes()["repo"].vector_index().ntotal == 703
    assert len(server.snapshot.memories) == 703


def test_watched_engine_sees_a_memory_added_before_its_event_arrives(store):
    """A memory written just before a recall is answered even when the watcher has not reported it yet: inotify
    events arrive a moment after the write (a loaded machine made the recall server answer without it)."""
    from forgemem.recall.engine import RecallEngine
    from forgemem.workspace import Workspace

    fill(store, 2)
    engine = RecallEngine(Workspace.open(repo_dir=store.memory_dir, user_dir=store.memory_dir.parent / "u"),
                          embedder=HashEmbedder())
    engine.watch()
    engine._watcher.stop()  # no event will ever arrive
    engine._watcher.observer.join()
    engine.refresh_if_changed()
    assert len(engine.snapshot.memories) == 2
    write_memory(store.memory_dir, make_memory(body="Added while nobody was listening."))
    engine.refresh_if_changed()
    assert any(m.body == "Added while nobody was listening." for m in engine.snapshot.memories)
