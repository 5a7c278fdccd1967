"""The cache of one store: a manifest of its files, a lexical index and vectors.

The memory files are the truth; this is a cache of them, rebuilt from file
hashes, in the store's cache folder (`<forge>/cache/`, never committed; it
holds its own `.gitignore`):

    <scope>.sqlite         manifest + lexical index, one SQLite database (WAL):
      meta                 schema version, memory folder, embedder id and dimension, generation
      files                every file: relative path, mtime_ns, size, sha256, its problems
      memories             every memory that parsed: id, parsed record (front matter + text),
                           hash of the embedded text
      vectors              each memory's vector (float32) from `meta.embedder`, kept apart
                           so reading records never pages through vectors
      tombstones           rows deleted, by generation
    Every write stamps its rows with the generation it creates, so a long-lived
    reader (the recall server) applies only what changed since the generation it
    last saw, whichever process wrote it.
      fts                  FTS5 over the memory text (porter stemming, unicode61)
    <scope>-<generation>.faiss
                           the vectors as a FAISS IndexIDMap2(IndexFlatIP), ids = memories.rowid;
                           written to a temporary file and renamed, named by the generation
                           it holds, so a reader never sees a half-written index

Refresh: an unchanged store is recognised from mtime and size alone (no file is
read); a changed file is re-hashed and re-parsed only if its bytes changed; a
memory is re-embedded only if its embedded text changed; deleted files leave
the index; a different embedder (model or dimension) re-embeds everything.
Writers hold a file lock (`<scope>.lock`); SQLite transactions keep readers
consistent. A missing, truncated or corrupt cache is deleted and rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from forgemem.errors import Problem
from forgemem.store.folder import Store
from forgemem.store.memfile import front_matter
from forgemem.store.model import Memory, format_timestamp

SCHEMA_VERSION = "3"
EMBED_CHUNK = 256

#: Words dropped from queries before lexical search (they match everything).
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    do does did done get got let lets please tell know""".split()
)

ProgressFn = Callable[[int, int], None]


def embed_text(memory: Memory) -> str:
    """The text embedded for a memory: its body, then its tags (if any)."""
    if memory.tags:
        return f"{memory.body}\nTags: {', '.join(memory.tags)}"
    return memory.body


def query_terms(text: str) -> list[str]:
    """Lower-case word tokens of a query, stopwords removed, order kept, no repeats."""
    seen: dict[str, None] = {}
    for word in re.findall(r"\w+", text.lower()):
        if word not in STOPWORDS and word not in seen:
            seen[word] = None
    return list(seen)


# ----------------------------------------------------------------- records


def to_record(memory: Memory) -> str:
    meta = front_matter(memory)
    for key in ("created_at", "updated_at"):
        meta[key] = format_timestamp(meta[key])
    return json.dumps({"meta": meta, "body": memory.body}, ensure_ascii=False, default=_json_default)


def _json_default(value):
    if isinstance(value, datetime):
        return format_timestamp(value)
    raise TypeError(f"cannot cache a value of type {type(value).__name__}")


def from_record(record: str, path: Path) -> Memory:
    data = json.loads(record)
    return Memory.from_front_matter(data["meta"], data["body"], path)


# ----------------------------------------------------------------- reports


#: vectors kept by content for texts no file holds right now (other branches, older commits)
KEEP_EMBEDDED_FACTOR = 3
MIN_EMBEDDED_KEPT = 10_000


@dataclass
class RefreshReport:
    files: int = 0
    added: int = 0
    changed: int = 0
    touched: int = 0  # mtime changed, bytes did not
    deleted: int = 0
    embedded: int = 0
    reused: int = 0  # vectors found by content (seen before on another branch or commit)
    rebuilt_reason: str | None = None
    embedder: str | None = None

    @property
    def unchanged(self) -> bool:
        return not (self.added or self.changed or self.deleted or self.embedded or self.reused or self.touched)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class Status:
    """What `forgemem index --status` shows for one store."""

    scope: str
    database: str
    files: int
    memories: int
    vectors: int
    embedder: str | None
    stale: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


# ----------------------------------------------------------------- the cache


class StoreIndex:
    def __init__(self, store: Store, in_memory: bool = False):
        self.store = store
        self.scope = store.scope
        self.folder = store.cache_dir
        self.db_path = self.folder / f"{store.scope}.sqlite"
        self.lock_path = self.folder / f"{store.scope}.lock"
        self.in_memory = in_memory
        self._db: sqlite3.Connection | None = None
        self._faiss = None
        self._faiss_generation: int | None = None
        self._faiss_epoch: str | None = None
        self._gen = 0  # the generation a refresh in progress stamps its rows with

    # ------------------------------------------------------------ database

    def connect(self) -> None:
        """Open (or rebuild) the database now; raises OSError or sqlite3.Error if it cannot be."""
        self.db  # noqa: B018

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = self._open()
        return self._db

    def _open(self) -> sqlite3.Connection:
        if self.in_memory:
            db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            self._create(db)
            return db
        from forgemem.permissions import PRIVATE_FILE, make_private, private_dir

        private_dir(self.folder)  # it holds the text of every memory: other users never read it
        ignore = self.folder / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# forgemem cache: derived from the memory files, never committed\n*\n")
        for attempt in range(2):
            try:
                if not self.db_path.exists():  # created private; SQLite gives its -wal/-shm the same mode
                    os.close(os.open(self.db_path, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE))
                make_private(self.db_path)
                db = sqlite3.connect(self.db_path, isolation_level=None, timeout=30, check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                self._create(db)
                if self._meta(db, "schema") != SCHEMA_VERSION or self._meta(db, "memory_dir") != str(
                    self.store.memory_dir
                ):
                    db.close()
                    raise sqlite3.DatabaseError("the cache belongs to another version or folder")
                return db
            except sqlite3.DatabaseError:
                if attempt:
                    raise
                self.destroy()
        raise AssertionError("unreachable")

    def _create(self, db: sqlite3.Connection) -> None:
        db.executescript(
            """
            CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS files(
                path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
                sha256 TEXT NOT NULL, problems TEXT);
            CREATE TABLE IF NOT EXISTS memories(
                rowid INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT UNIQUE NOT NULL, id TEXT NOT NULL,
                record TEXT NOT NULL, text_hash TEXT NOT NULL, gen INTEGER NOT NULL);
            CREATE INDEX IF NOT EXISTS memories_gen ON memories(gen);
            CREATE TABLE IF NOT EXISTS vectors(
                rowid INTEGER PRIMARY KEY, vector BLOB NOT NULL, gen INTEGER NOT NULL);
            CREATE INDEX IF NOT EXISTS vectors_gen ON vectors(gen);
            CREATE TABLE IF NOT EXISTS tombstones(rowid INTEGER PRIMARY KEY, gen INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS embedded(
                text_hash TEXT PRIMARY KEY, vector BLOB NOT NULL, used REAL NOT NULL);
            CREATE INDEX IF NOT EXISTS tombstones_gen ON tombstones(gen);
            CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
                text, tokenize='porter unicode61 remove_diacritics 2');
            """
        )
        if self._meta(db, "schema") is None:
            db.execute("BEGIN")
            self._set_meta(db, "schema", SCHEMA_VERSION)
            self._set_meta(db, "memory_dir", str(self.store.memory_dir))
            self._set_meta(db, "generation", "0")
            self._set_meta(db, "vectors_epoch", "0")
            db.execute("COMMIT")

    @staticmethod
    def _meta(db: sqlite3.Connection, key: str) -> str | None:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    @staticmethod
    def _set_meta(db: sqlite3.Connection, key: str, value: str) -> None:
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def generation(self) -> int:
        return int(self._meta(self.db, "generation") or 0)

    def destroy(self) -> None:
        """Delete the cache files of this store (they are rebuilt on the next refresh)."""
        self.close()
        if not self.folder.is_dir():
            return
        for path in self.folder.glob(f"{self.scope}.sqlite*"):
            path.unlink(missing_ok=True)
        for path in self.folder.glob(f"{self.scope}-*.faiss"):
            path.unlink(missing_ok=True)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        self._faiss = None
        self._faiss_generation = None

    # ------------------------------------------------------------ refresh

    def scan(self) -> dict[str, tuple[int, int]]:
        """Relative path -> (mtime_ns, size) of every memory file, from stat alone."""
        return self.store.stat_files()

    def _select_in(self, sql: str, values: list) -> list[tuple]:
        """Rows of `sql`, whose `IN ({})` is filled with `values`, in chunks SQLite accepts."""
        rows: list[tuple] = []
        for start in range(0, len(values), 500):
            chunk = values[start : start + 500]
            rows += self.db.execute(sql.format(",".join("?" * len(chunk))), chunk).fetchall()
        return rows

    def _known(self, paths: list[str] | None = None) -> dict[str, tuple[int, int]]:
        """Relative path -> (mtime_ns, size) as last seen, for every file in the cache (or those named)."""
        if paths is None:
            rows = self.db.execute("SELECT path, mtime_ns, size FROM files")
        else:
            rows = self._select_in("SELECT path, mtime_ns, size FROM files WHERE path IN ({})", paths)
        return {path: (mtime, size) for path, mtime, size in rows}

    def _hashes(self, paths: list[str]) -> dict[str, str]:
        return dict(self._select_in("SELECT path, sha256 FROM files WHERE path IN ({})", paths))

    def _needs_vectors(self, embedder) -> str | None:
        if embedder is None:
            return None
        current = self._meta(self.db, "embedder")
        if current != embedder.id or self._meta(self.db, "dim") != str(embedder.dim):
            if current is None:
                return "no vectors yet"
            return f"embedder changed ({current} -> {embedder.id})"
        # Every vector belongs to a memory, so the difference of the counts is what is missing.
        memories = self.db.execute("SELECT count(*) FROM memories").fetchone()[0]
        missing = memories - self.db.execute("SELECT count(*) FROM vectors").fetchone()[0]
        return f"{missing} memories without vectors" if missing else None

    def _diff(self, only: list[str] | None = None):
        """(scan, known, changed, deleted): the files as they are, as cached, and what differs.

        `only` limits both sides to those paths (relative to the store).
        """
        if only is None:
            known, scan = self._known(), self.scan()
            deleted = [p for p in known if p not in scan]
        else:
            known, scan = self._known(only), self.store.stat_paths(only)
            deleted = [p for p in only if p in known and p not in scan]
        changed = [p for p, stat in scan.items() if known.get(p) != stat]
        return scan, known, changed, deleted

    def refresh(
        self, embedder=None, progress: ProgressFn | None = None, only: Iterable[str] | None = None
    ) -> RefreshReport:
        """Bring the cache up to date with the files.

        `only` (paths relative to the store) limits the check to those files,
        for a caller that knows what changed (the recall server's watcher).
        """
        try:
            return self._refresh(embedder, progress, only)
        except sqlite3.DatabaseError:
            # A corrupt or truncated cache: throw it away and build it again.
            self.destroy()
            report = self._refresh(embedder, progress, None)
            report.rebuilt_reason = "the cache was corrupt"
            return report

    def _refresh(self, embedder, progress: ProgressFn | None, only: Iterable[str] | None) -> RefreshReport:
        scan, known, changed, deleted = self._diff(None if only is None else list(only))
        vector_reason = self._needs_vectors(embedder)
        report = RefreshReport(files=len(scan), embedder=embedder.id if embedder else None)
        if not changed and not deleted and not vector_reason:
            return report
        with self._lock():
            # Another process may have applied some of this while we waited for the lock.
            known = self._known(None if only is None else sorted(set(changed) | set(deleted)))
            changed = [p for p in changed if known.get(p) != scan[p]]
            deleted = [p for p in deleted if p in known]
            self._gen = self.generation() + 1
            if changed or deleted:
                self._apply_files(changed, deleted, known, report)
            vector_reason = self._needs_vectors(embedder)
            if vector_reason:
                if vector_reason.startswith("embedder"):
                    report.rebuilt_reason = vector_reason
                self._embed(embedder, progress, report)
            if not report.unchanged:
                self.db.execute("BEGIN IMMEDIATE")
                self._set_meta(self.db, "generation", str(self._gen))
                self.db.execute("COMMIT")
        return report

    def _lock(self):
        from filelock import FileLock

        if self.in_memory:
            from contextlib import nullcontext

            return nullcontext()
        return FileLock(str(self.lock_path), timeout=120, mode=0o600)

    def _apply_files(
        self, changed: list[str], deleted: list[str], known: dict[str, tuple[int, int]], report: RefreshReport
    ) -> None:
        hashes = self._hashes(changed)
        updates = []
        for rel, read in zip(changed, self.store.read_many(changed), strict=True):
            if read is None:  # vanished since the scan
                deleted.append(rel)
                continue
            old = known.get(rel)
            if old is not None and hashes.get(rel) == read.sha256:
                updates.append((rel, read.mtime_ns, read.size, read.sha256, None, None, True))
                report.touched += 1
                continue
            updates.append((rel, read.mtime_ns, read.size, read.sha256, read.memory, read.problems, False))
            if old is None:
                report.added += 1
            else:
                report.changed += 1
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            for rel in deleted:
                if rel in known:
                    self._delete_memory(rel)
                    db.execute("DELETE FROM files WHERE path = ?", (rel,))
                    report.deleted += 1
            for rel, mtime, size, sha, memory, problems, touched in updates:
                if touched:
                    db.execute("UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?", (mtime, size, rel))
                    continue
                db.execute(
                    "INSERT OR REPLACE INTO files(path, mtime_ns, size, sha256, problems) VALUES (?, ?, ?, ?, ?)",
                    (rel, mtime, size, sha, json.dumps([_problem_json(p) for p in problems]) if problems else None),
                )
                if memory is None:
                    self._delete_memory(rel)
                    continue
                self._upsert_memory(rel, memory)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _delete_memory(self, rel: str) -> None:
        row = self.db.execute("SELECT rowid FROM memories WHERE path = ?", (rel,)).fetchone()
        if row:
            self.db.execute("DELETE FROM fts WHERE rowid = ?", (row[0],))
            self.db.execute("DELETE FROM vectors WHERE rowid = ?", (row[0],))
            self.db.execute("DELETE FROM memories WHERE rowid = ?", (row[0],))
            self.db.execute("INSERT OR REPLACE INTO tombstones(rowid, gen) VALUES (?, ?)", (row[0], self._gen))

    def _upsert_memory(self, rel: str, memory: Memory) -> None:
        text = embed_text(memory)
        text_hash = hashlib.sha256(text.encode("utf-8")).hexdigest()
        row = self.db.execute("SELECT rowid, text_hash FROM memories WHERE path = ?", (rel,)).fetchone()
        record = to_record(memory)
        if row is None:
            cursor = self.db.execute(
                "INSERT INTO memories(path, id, record, text_hash, gen) VALUES (?, ?, ?, ?, ?)",
                (rel, memory.id, record, text_hash, self._gen),
            )
            self.db.execute("INSERT INTO fts(rowid, text) VALUES (?, ?)", (cursor.lastrowid, text))
            return
        rowid, old_hash = row
        if old_hash == text_hash:  # front matter changed only: keep the vector
            self.db.execute(
                "UPDATE memories SET id = ?, record = ?, gen = ? WHERE rowid = ?", (memory.id, record, self._gen, rowid)
            )
            return
        self.db.execute(
            "UPDATE memories SET id = ?, record = ?, text_hash = ?, gen = ? WHERE rowid = ?",
            (memory.id, record, text_hash, self._gen, rowid),
        )
        self.db.execute("DELETE FROM vectors WHERE rowid = ?", (rowid,))
        self.db.execute("DELETE FROM fts WHERE rowid = ?", (rowid,))
        self.db.execute("INSERT INTO fts(rowid, text) VALUES (?, ?)", (rowid, text))

    def _embed(self, embedder, progress: ProgressFn | None, report: RefreshReport) -> None:
        import numpy as np

        db = self.db
        if self._meta(db, "embedder") != embedder.id or self._meta(db, "dim") != str(embedder.dim):
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM vectors")
            db.execute("DELETE FROM embedded")
            self._set_meta(db, "vectors_epoch", str(int(self._meta(db, "vectors_epoch") or 0) + 1))
            self._set_meta(db, "embedder", embedder.id)
            self._set_meta(db, "dim", str(embedder.dim))
            db.execute("COMMIT")
        missing = db.execute(
            "SELECT m.rowid, f.text, m.text_hash FROM memories m JOIN fts f ON f.rowid = m.rowid "
            "WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.rowid = m.rowid)"
        ).fetchall()
        # Vectors are also kept by content: a text seen before (another branch, an older
        # commit, a file moved back) gets its vector back instead of being embedded again.
        known = dict(self._select_in(
            "SELECT text_hash, vector FROM embedded WHERE text_hash IN ({})", [h for _, _, h in missing]
        )) if missing else {}
        if known:
            now = time.time()
            db.execute("BEGIN IMMEDIATE")
            db.executemany(
                "INSERT OR REPLACE INTO vectors(rowid, vector, gen) VALUES (?, ?, ?)",
                [(rowid, known[h], self._gen) for rowid, _, h in missing if h in known],
            )
            db.executemany("UPDATE embedded SET used = ? WHERE text_hash = ?", [(now, h) for h in known])
            db.execute("COMMIT")
            report.reused += sum(1 for _, _, h in missing if h in known)
        todo = [(rowid, text, h) for rowid, text, h in missing if h not in known]
        total = len(todo)
        if progress:
            progress(0, total)
        for start in range(0, total, EMBED_CHUNK):
            chunk = todo[start : start + EMBED_CHUNK]
            vectors = np.ascontiguousarray(embedder.encode([text for _, text, _ in chunk]), dtype=np.float32)
            now = time.time()
            db.execute("BEGIN IMMEDIATE")
            db.executemany(
                "INSERT OR REPLACE INTO vectors(rowid, vector, gen) VALUES (?, ?, ?)",
                [(rowid, vectors[i].tobytes(), self._gen) for i, (rowid, _, _) in enumerate(chunk)],
            )
            db.executemany(
                "INSERT OR REPLACE INTO embedded(text_hash, vector, used) VALUES (?, ?, ?)",
                [(h, vectors[i].tobytes(), now) for i, (_, _, h) in enumerate(chunk)],
            )
            db.execute("COMMIT")
            report.embedded += len(chunk)
            if progress:
                progress(report.embedded, total)
        if todo:
            self._prune_embedded()

    def _prune_embedded(self) -> None:
        """Keep the content-keyed vectors bounded: the most recently used, up to KEEP_EMBEDDED_FACTOR × memories."""
        db = self.db
        memories = db.execute("SELECT count(*) FROM memories").fetchone()[0]
        keep = max(MIN_EMBEDDED_KEPT, KEEP_EMBEDDED_FACTOR * memories)
        if db.execute("SELECT count(*) FROM embedded").fetchone()[0] > keep:
            db.execute("BEGIN IMMEDIATE")
            db.execute(
                "DELETE FROM embedded WHERE text_hash NOT IN "
                "(SELECT text_hash FROM embedded ORDER BY used DESC LIMIT ?)", (keep,)
            )
            db.execute("COMMIT")

    # ------------------------------------------------------------ reading

    def memories(self) -> list[tuple[int, Memory]]:
        base = self.store.memory_dir
        return [
            (rowid, from_record(record, base / path))
            for rowid, path, record in self.db.execute("SELECT rowid, path, record FROM memories ORDER BY path")
        ]

    def changes_since(self, generation: int) -> tuple[list[tuple[int, Memory]], set[int]]:
        """Rows written after `generation` (to add or replace) and rows deleted since."""
        base = self.store.memory_dir
        changed = [
            (rowid, from_record(record, base / path))
            for rowid, path, record in self.db.execute(
                "SELECT rowid, path, record FROM memories WHERE gen > ?", (generation,)
            )
        ]
        deleted = {r for (r,) in self.db.execute("SELECT rowid FROM tombstones WHERE gen > ?", (generation,))}
        return changed, deleted

    def problems(self) -> list[Problem]:
        base = self.store.memory_dir
        found = []
        for path, problems in self.db.execute(
            "SELECT path, problems FROM files WHERE problems IS NOT NULL ORDER BY path"
        ):
            for p in json.loads(problems):
                found.append(Problem(base / path, p["reason"], p["line"], p["id"]))
        return found

    def vectors_for(self, memories: list[Memory]) -> dict[str, bytes]:
        """Stored vectors of these memories' texts, by memory id (missing ones left out)."""
        hashes = {m.id: hashlib.sha256(embed_text(m).encode("utf-8")).hexdigest() for m in memories}
        found = dict(self._select_in(
            "SELECT text_hash, vector FROM embedded WHERE text_hash IN ({})", list(set(hashes.values()))
        ))
        return {memory_id: found[h] for memory_id, h in hashes.items() if h in found}

    def lexical(self, query: str, limit: int) -> list[tuple[int, float]]:
        """(rowid, BM25 score, higher is better) of the best lexical matches."""
        terms = query_terms(query)
        if not terms:
            return []
        expression = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        return [
            (rowid, -score)
            for rowid, score in self.db.execute(
                "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT ?",
                (expression, limit),
            )
        ]

    def vector_index(self):
        """The FAISS index of this store's vectors (None when there are none).

        Kept in memory between calls; when the generation moved, only the rows
        written since are removed and added again (unless the model changed).
        """
        generation = self.generation()
        if self._faiss is not None and self._faiss_generation == generation:
            return self._faiss
        epoch = self._meta(self.db, "vectors_epoch")
        if self._faiss is not None and self._faiss_epoch == epoch and self._faiss_generation is not None:
            self._update_faiss(self._faiss_generation)
            self._faiss_generation = generation
            return self._faiss
        import faiss

        index = None
        path = self.folder / f"{self.scope}-{generation}.faiss"
        if not self.in_memory and path.is_file():
            try:
                index = faiss.read_index(str(path))
            except RuntimeError:
                index = None
        if index is None:
            index = self._build_faiss()
            if index is not None and not self.in_memory:
                tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
                faiss.write_index(index, str(tmp))
                os.chmod(tmp, 0o600)
                os.replace(tmp, path)
                for old in self.folder.glob(f"{self.scope}-*.faiss"):
                    if old != path:
                        old.unlink(missing_ok=True)
        self._faiss, self._faiss_generation, self._faiss_epoch = index, generation, epoch
        return index

    def _update_faiss(self, since: int) -> None:
        import numpy as np

        touched = {r for (r,) in self.db.execute("SELECT rowid FROM memories WHERE gen > ?", (since,))}
        touched |= {r for (r,) in self.db.execute("SELECT rowid FROM tombstones WHERE gen > ?", (since,))}
        touched |= {r for (r,) in self.db.execute("SELECT rowid FROM vectors WHERE gen > ?", (since,))}
        if not touched:
            return
        ids = sorted(touched)
        self._faiss.remove_ids(np.array(ids, dtype=np.int64))
        rows = self._select_in("SELECT rowid, vector FROM vectors WHERE rowid IN ({})", ids)
        if rows:
            self._faiss.add_with_ids(*_vectors_and_ids(rows, self._faiss.d))

    def _build_faiss(self):
        import faiss

        dim = self._meta(self.db, "dim")
        rows = self.db.execute("SELECT rowid, vector FROM vectors").fetchall()
        if not rows or dim is None:
            return None
        index = faiss.IndexIDMap2(faiss.IndexFlatIP(int(dim)))
        index.add_with_ids(*_vectors_and_ids(rows, int(dim)))
        return index

    def status(self, embedder=None) -> Status:
        """What is stale and why, without writing anything."""
        _, known, changed, deleted = self._diff()
        stale = [f"{'new' if p not in known else 'changed'}: {p}" for p in changed]
        stale += [f"deleted: {p}" for p in deleted]
        vector_reason = self._needs_vectors(embedder)
        if vector_reason:
            stale.append(f"vectors: {vector_reason}")
        return Status(
            scope=self.scope,
            database=str(self.db_path) if not self.in_memory else ":memory:",
            files=len(known),
            memories=self.db.execute("SELECT count(*) FROM memories").fetchone()[0],
            vectors=self.db.execute("SELECT count(*) FROM vectors").fetchone()[0],
            embedder=self._meta(self.db, "embedder"),
            stale=stale,
        )

    def check(self) -> list[str]:
        """Deep check of files against the cache: every disagreement, in one sentence each."""
        found = []
        scan = self.scan()
        known = self._known()
        for rel in sorted(set(scan) - set(known)):
            found.append(f"{rel}: in the store but not in the cache")
        for rel in sorted(set(known) - set(scan)):
            found.append(f"{rel}: in the cache but the file is gone")
        base = self.store.memory_dir
        hashes = dict(self.db.execute("SELECT path, sha256 FROM files"))
        cached_ids = dict(self.db.execute("SELECT path, id FROM memories"))
        for rel in sorted(set(scan) & set(known)):
            try:
                data = (base / rel).read_bytes()
            except OSError:
                continue
            if hashlib.sha256(data).hexdigest() != hashes[rel]:
                found.append(f"{rel}: the file's content differs from the cached hash")
                continue
            memory, _ = self.store.read(base / rel, data)
            if (memory.id if memory else None) != cached_ids.get(rel):
                found.append(f"{rel}: the cached record does not match the file")
        memories = self.db.execute("SELECT count(*) FROM memories").fetchone()[0]
        fts = self.db.execute("SELECT count(*) FROM fts").fetchone()[0]
        if fts != memories:
            found.append(f"lexical index holds {fts} entries for {memories} memories")
        vectors = self.db.execute("SELECT count(*) FROM vectors").fetchone()[0]
        if vectors:
            index = self.vector_index()
            total = index.ntotal if index is not None else 0
            if total != vectors:
                found.append(f"FAISS index holds {total} vectors for {vectors} stored vectors")
        return found


def _vectors_and_ids(rows: list[tuple[int, bytes]], dim: int):
    """(float32 matrix, int64 ids) from (rowid, vector bytes) rows, for FAISS `add_with_ids`."""
    import numpy as np

    matrix = np.frombuffer(b"".join(v for _, v in rows), dtype=np.float32).reshape(len(rows), dim)
    return matrix, np.array([r for r, _ in rows], dtype=np.int64)


def _problem_json(problem: Problem) -> dict:
    return {"line": problem.line, "id": problem.memory_id, "reason": problem.reason}
