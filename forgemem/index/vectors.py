"""The vectors of one store's cache: embedding the memories that lack one, reuse by content, the FAISS index file."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from forgemem.index.database import embed_text, get_meta, select_in, set_meta, vector_text
from forgemem.index.repair import clean_temp, clear_way, remove, say
from forgemem.store.model import Memory, memory_count

EMBED_CHUNK = 256
#: vectors kept by content for texts no file holds right now (other branches, older commits)
KEEP_EMBEDDED_FACTOR = 3
MIN_EMBEDDED_KEPT = 10_000

ProgressFn = Callable[[int, int], None]


def missing_reason(db: sqlite3.Connection, embedder) -> str | None:
    """Why some memories need a vector from this embedder (None: every memory has one)."""
    if embedder is None:
        return None
    current = get_meta(db, "embedder")
    if current != embedder.id or get_meta(db, "dim") != str(embedder.dim):
        if current is None:
            return "no vectors yet"
        return f"embedder changed ({current} -> {embedder.id})"
    # Every vector belongs to a memory, so the difference of the counts is what is missing.
    memories = db.execute("SELECT count(*) FROM memories").fetchone()[0]
    missing = memories - db.execute("SELECT count(*) FROM vectors").fetchone()[0]
    return f"{memory_count(missing)} without vectors" if missing else None


def embed_missing(db: sqlite3.Connection, embedder, gen: int, progress: ProgressFn | None) -> tuple[int, int]:
    """Give every memory without a vector one, stamped with generation `gen`: (reused, embedded)."""
    import numpy as np

    if get_meta(db, "embedder") != embedder.id or get_meta(db, "dim") != str(embedder.dim):
        db.execute("BEGIN IMMEDIATE")
        db.execute("DELETE FROM vectors")
        db.execute("DELETE FROM embedded")
        set_meta(db, "vectors_epoch", str(int(get_meta(db, "vectors_epoch") or 0) + 1))
        set_meta(db, "embedder", embedder.id)
        set_meta(db, "dim", str(embedder.dim))
        db.execute("COMMIT")
    missing = db.execute(
        "SELECT m.rowid, f.text, m.text_hash FROM memories m JOIN fts f ON f.rowid = m.rowid "
        "WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.rowid = m.rowid)"
    ).fetchall()
    # Vectors are also kept by content: a text seen before (another branch, an older
    # commit, a file moved back) gets its vector back instead of being embedded again.
    known = dict(select_in(
        db, "SELECT text_hash, vector FROM embedded WHERE text_hash IN ({})", [h for _, _, h in missing]
    )) if missing else {}
    reused = embedded = 0
    if known:
        now = time.time()
        db.execute("BEGIN IMMEDIATE")
        db.executemany(
            "INSERT OR REPLACE INTO vectors(rowid, vector, gen) VALUES (?, ?, ?)",
            [(rowid, known[h], gen) for rowid, _, h in missing if h in known],
        )
        db.executemany("UPDATE embedded SET used = ? WHERE text_hash = ?", [(now, h) for h in known])
        db.execute("COMMIT")
        reused = sum(1 for _, _, h in missing if h in known)
    todo = [(rowid, text, h) for rowid, text, h in missing if h not in known]
    total = len(todo)
    if progress:
        progress(0, total)
    for start in range(0, total, EMBED_CHUNK):
        chunk = todo[start : start + EMBED_CHUNK]
        vectors = np.ascontiguousarray(embedder.encode([vector_text(text) for _, text, _ in chunk]), dtype=np.float32)
        now = time.time()
        db.execute("BEGIN IMMEDIATE")
        db.executemany(
            "INSERT OR REPLACE INTO vectors(rowid, vector, gen) VALUES (?, ?, ?)",
            [(rowid, vectors[i].tobytes(), gen) for i, (rowid, _, _) in enumerate(chunk)],
        )
        db.executemany(
            "INSERT OR REPLACE INTO embedded(text_hash, vector, used) VALUES (?, ?, ?)",
            [(h, vectors[i].tobytes(), now) for i, (_, _, h) in enumerate(chunk)],
        )
        db.execute("COMMIT")
        embedded += len(chunk)
        if progress:
            progress(embedded, total)
    if todo:
        prune_embedded(db)
    return reused, embedded


def prune_embedded(db: sqlite3.Connection) -> None:
    """Keep the content-keyed vectors bounded: the most recently used, up to KEEP_EMBEDDED_FACTOR × memories."""
    memories = db.execute("SELECT count(*) FROM memories").fetchone()[0]
    keep = max(MIN_EMBEDDED_KEPT, KEEP_EMBEDDED_FACTOR * memories)
    if db.execute("SELECT count(*) FROM embedded").fetchone()[0] > keep:
        db.execute("BEGIN IMMEDIATE")
        db.execute(
            "DELETE FROM embedded WHERE text_hash NOT IN "
            "(SELECT text_hash FROM embedded ORDER BY used DESC LIMIT ?)", (keep,)
        )
        db.execute("COMMIT")


def stored_vectors(db: sqlite3.Connection, memories: list[Memory]) -> dict[str, bytes]:
    """Stored vectors of these memories' texts, by memory id (missing ones left out)."""
    hashes = {m.id: hashlib.sha256(embed_text(m).encode("utf-8")).hexdigest() for m in memories}
    found = dict(select_in(
        db, "SELECT text_hash, vector FROM embedded WHERE text_hash IN ({})", list(set(hashes.values()))
    ))
    return {memory_id: found[h] for memory_id, h in hashes.items() if h in found}


class FaissFile:
    """The FAISS index of one store's vectors: in memory between calls, on disk as `<scope>-<generation>.faiss`."""

    def __init__(self, folder: Path, scope: str, in_memory: bool):
        self.folder = folder
        self.scope = scope
        self.in_memory = in_memory
        self._index: Any = None
        self._mapped = False  # the index reads its vectors from the file's pages (mmap): never changed in place
        self._generation: int | None = None
        self._epoch: str | None = None
        self._write_failed = False

    def get(self, db: sqlite3.Connection):
        """The index (None when there are no vectors).

        Kept in memory between calls; when the generation moved, only the rows
        written since are removed and added again (unless the model changed).
        """
        generation = int(get_meta(db, "generation") or 0)
        if self._index is not None and self._generation == generation:
            return self._index
        epoch = get_meta(db, "vectors_epoch")
        if self._index is not None and self._mapped:
            self._index, self._mapped = _owned(self._index), False  # it is about to change in place
        if self._index is not None and self._epoch == epoch and self._generation is not None:
            self._update(db, self._generation)
            self._generation = generation
            return self._index
        index = None
        path = self.folder / f"{self.scope}-{generation}.faiss"
        if not self.in_memory:
            index = self._read(db, path)
        if index is None:
            index, self._mapped = _build(db), False
            if index is not None and not self.in_memory:
                self._write(index, path)
        self._index, self._generation, self._epoch = index, generation, epoch
        return index

    def _read(self, db: sqlite3.Connection, path: Path):
        """The index file of this generation, if it is there and sound (else None: it is built again)."""
        import faiss

        clear_way(path)  # a folder or a link in its place: moved aside
        if not path.is_file():
            return None
        try:
            # Mapped, not read: the vectors are paged in as a search touches them (150 MB at 100K
            # memories), and the file is replaced by a rename, never rewritten in place.
            index: Any = faiss.read_index(str(path), getattr(faiss, "IO_FLAG_MMAP_IFC", 0))
        except (RuntimeError, MemoryError):  # FAISS's own message is a C++ location
            say(f"the vector index {path} could not be used (not a FAISS index: truncated or overwritten); rebuilt it")
            return None
        vectors = db.execute("SELECT count(*) FROM vectors").fetchone()[0]
        dim = get_meta(db, "dim")
        moved = get_meta(db, "generation") != path.stem.rpartition("-")[2]  # a writer since: no verdict
        if not moved and (str(index.d) != dim or index.ntotal != vectors):
            say(f"the vector index {path} could not be used (it holds {index.ntotal} vectors of {index.d} "
                f"dimensions, not {vectors} of {dim}); rebuilt it")
            return None
        self._mapped = bool(getattr(faiss, "IO_FLAG_MMAP_IFC", 0))
        return index

    def _write(self, index, path: Path) -> None:
        """Write the index file (a temporary file renamed: never half-written); a failure keeps it in memory."""
        import faiss

        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        for name in clean_temp(self.folder, f"{self.scope}-"):
            say(f"removed {self.folder / name}, left by a process that was killed")
        try:
            clear_way(path)
            faiss.write_index(index, str(tmp))
            os.chmod(tmp, 0o600)
            os.replace(tmp, path)
        except (OSError, RuntimeError) as exc:
            if not self._write_failed:
                say(f"cannot write the vector index {path} ({exc}); it is kept in memory only")
            self._write_failed = True
            return
        finally:
            if os.path.lexists(tmp):
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
        for old in self.folder.glob(f"{self.scope}-*.faiss"):
            if old != path:
                remove(old)

    def forget(self) -> None:
        """Drop the index held in memory (the next `get` reads or builds it again)."""
        self._index, self._mapped = None, False
        self._generation = None

    def delete_files(self) -> None:
        for path in self.folder.glob(f"{self.scope}-*.faiss"):
            remove(path)

    def _update(self, db: sqlite3.Connection, since: int) -> None:
        import numpy as np

        touched = {r for (r,) in db.execute("SELECT rowid FROM memories WHERE gen > ?", (since,))}
        touched |= {r for (r,) in db.execute("SELECT rowid FROM tombstones WHERE gen > ?", (since,))}
        touched |= {r for (r,) in db.execute("SELECT rowid FROM vectors WHERE gen > ?", (since,))}
        if not touched:
            return
        ids = sorted(touched)
        self._index.remove_ids(np.array(ids, dtype=np.int64))
        rows = select_in(db, "SELECT rowid, vector FROM vectors WHERE rowid IN ({})", ids)
        if rows:
            self._index.add_with_ids(*_vectors_and_ids(rows, self._index.d))


def _build(db: sqlite3.Connection):
    import faiss

    dim = get_meta(db, "dim")
    rows = db.execute("SELECT rowid, vector FROM vectors").fetchall()
    if not rows or dim is None:
        return None
    index = faiss.IndexIDMap2(faiss.IndexFlatIP(int(dim)))
    index.add_with_ids(*_vectors_and_ids(rows, int(dim)))
    return index


def _owned(index):
    """A copy of a mapped index that holds its own vectors, so rows can be removed and added."""
    import faiss

    try:
        flat = faiss.downcast_index(index.index)
        copy = faiss.IndexIDMap2(faiss.IndexFlatIP(index.d))
        if index.ntotal:
            copy.add_with_ids(flat.reconstruct_n(0, index.ntotal), faiss.vector_to_array(index.id_map))
    except (RuntimeError, AttributeError):  # not the index forgemem writes: built again from the database
        return None
    return copy


def _vectors_and_ids(rows: list[tuple[int, bytes]], dim: int):
    """(float32 matrix, int64 ids) from (rowid, vector bytes) rows, for FAISS `add_with_ids`."""
    import numpy as np

    matrix = np.frombuffer(b"".join(v for _, v in rows), dtype=np.float32).reshape(len(rows), dim)
    return matrix, np.array([r for r, _ in rows], dtype=np.int64)
