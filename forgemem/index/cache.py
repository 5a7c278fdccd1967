"""The cache of one store: a manifest of its files, a lexical index and vectors.

This module is the way in (`StoreIndex`) and the lexical search; beside it, `database`
holds the SQLite schema and records, `refresh` the incremental rebuild, `vectors` the
embedding and the FAISS file.

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
consistent. A missing, truncated or corrupt cache is deleted and rebuilt; something that is not a
file where a cache file belongs is moved aside (`repair`), and either is said once. `problems`
counts the files that gave no memory, without opening anything.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from forgemem.errors import ForgememError, Problem
from forgemem.index import database, links
from forgemem.index.database import from_record, get_meta
from forgemem.index.refresh import RefreshReport, cached_stats, diff, update
from forgemem.index.repair import clear_way, remove, say
from forgemem.index.vectors import FaissFile, ProgressFn, missing_reason, stored_vectors
from forgemem.store.folder import Store
from forgemem.store.model import Memory

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


#: FTS5's bm25() constant k1 (its default); the lexical ceiling below uses the same.
BM25_K1 = 1.2
DF_CACHE = 20_000  # query words whose document frequency a StoreIndex remembers (per generation)


def query_terms(text: str) -> list[str]:
    """Lower-case word tokens of a query, stopwords removed, order kept, no repeats."""
    seen: dict[str, None] = {}
    for word in re.findall(r"\w+", text.lower()):
        if word not in STOPWORDS and word not in seen:
            seen[word] = None
    return list(seen)


GITIGNORE = "# forgemem cache: derived from the memory files, never committed\n*\n"


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


class StoreIndex:
    """The cache of one store: opened (or rebuilt) on first use, refreshed from the files, read."""

    def __init__(self, store: Store, in_memory: bool = False):
        self.store = store
        self.scope = store.scope
        self.folder = store.cache_dir
        self.db_path = self.folder / f"{store.scope}.sqlite"
        self.lock_path = self.folder / f"{store.scope}.lock"
        self.in_memory = in_memory
        self._db: sqlite3.Connection | None = None
        self._faiss = FaissFile(self.folder, store.scope, in_memory)
        self.gitignore_text = GITIGNORE
        self._df: dict[str, int] = {}  # query word -> memories holding it, at generation _df_generation
        self._df_generation: int | None = None
        self._rows = 0

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
            return database.connect_in_memory(self.store.memory_dir)
        from forgemem.permissions import private_dir

        clear_way(self.folder, want_folder=True)  # a file where the folder belongs: moved aside
        private_dir(self.folder)  # it holds the text of every memory: other users never read it
        ignore = self.folder / ".gitignore"
        clear_way(ignore)
        if not ignore.exists():
            ignore.write_text(GITIGNORE)
        for path in (*self.db_files(), self.lock_path):
            clear_way(path)  # a folder (or a link) where SQLite or the lock wants a file
        if not self.db_path.is_file() or self.db_path.stat().st_size == 0:
            self._faiss.delete_files()  # a new database: a vector index of an older one would not match
        rebuilt, waits = False, 0
        while True:
            try:
                return database.connect(self.db_path, self.store.memory_dir)
            except sqlite3.DatabaseError as exc:
                if database.busy(exc) and waits < BUSY_WAITS:
                    # another process is creating the cache right now: it is not corrupt, wait and open it again
                    # (taken for corrupt, it was deleted under the other process, and both embedded everything)
                    time.sleep(BUSY_PAUSE * 2**waits)
                    waits += 1
                    continue
                if rebuilt and not database.busy(exc):
                    raise  # rebuilt once already and still not readable
                rebuilt = True
                self._discard(exc)  # held after every pause: CacheBusy, nothing deleted; else rebuilt and opened again

    def db_files(self) -> tuple[Path, Path, Path]:
        """The database and its write-ahead log and shared-memory files."""
        return self.db_path, Path(f"{self.db_path}-wal"), Path(f"{self.db_path}-shm")

    def generation(self) -> int:
        return int(get_meta(self.db, "generation") or 0)

    def _discard(self, exc: sqlite3.DatabaseError) -> None:
        """Throw away a cache that could not be read, said once (it is rebuilt on the next use); one another
        process holds is not damaged: `CacheBusy`, and nothing is deleted from under that process."""
        if database.busy(exc):
            raise CacheBusy(
                f"the cache {self.db_path} is busy: another forgemem process held it for more than "
                f"{database.BUSY_TIMEOUT:.0f} s ({exc}); try again when it is done"
            ) from exc
        if "another version or folder" not in str(exc):
            say(f"the cache {self.db_path} could not be read ({exc}); rebuilding it")
        self.destroy()

    def destroy(self) -> None:
        """Delete the cache files of this store (they are rebuilt on the next refresh)."""
        self.close()
        if not self.folder.is_dir():
            return
        for path in self.db_files():
            remove(path)
        self._faiss.delete_files()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        self._faiss.forget()

    # ------------------------------------------------------------ refresh

    def scan(self) -> dict[str, tuple[int, int]]:
        """Relative path -> (mtime_ns, size) of every memory file, from stat alone."""
        return self.store.stat_files()

    def refresh(
        self, embedder=None, progress: ProgressFn | None = None, only: Iterable[str] | None = None
    ) -> RefreshReport:
        """Bring the cache up to date with the files.

        `only` (paths relative to the store) limits the check to those files,
        for a caller that knows what changed (the recall server's watcher).
        """
        try:
            return update(self.db, self.store, self._lock, embedder, progress, only)
        except sqlite3.DatabaseError as exc:
            self._discard(exc)  # a corrupt or truncated cache: thrown away and built again
            report = update(self.db, self.store, self._lock, embedder, progress, None)
            report.rebuilt_reason = "the cache was corrupt"
            return report

    def _lock(self):
        from filelock import FileLock

        if self.in_memory:
            from contextlib import nullcontext

            return nullcontext()
        return FileLock(str(self.lock_path), timeout=120, mode=0o600)

    # ------------------------------------------------------------ reading

    def memories(self) -> list[tuple[int, Memory]]:
        base = self.store.memory_dir

        def read() -> list[tuple[int, Memory]]:
            return [(rowid, from_record(record, base / path))
                    for rowid, path, record in self.db.execute("SELECT rowid, path, record FROM memories ORDER BY path")]

        return self._rebuilt_if_corrupt(read)

    def _rebuilt_if_corrupt(self, read):
        """`read()`, or, when the database turns out corrupt only now (a damaged page past those a refresh
        reads), the same after rebuilding it (without vectors: the next refresh with an embedder adds them)."""
        try:
            return read()
        except sqlite3.DatabaseError as exc:
            if self.in_memory:
                raise
            self._discard(exc)
            update(self.db, self.store, self._lock, None, None, None)
            return read()

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

        def read() -> list[Problem]:
            rows = self.db.execute("SELECT path, problems FROM files WHERE problems IS NOT NULL ORDER BY path")
            return [Problem(base / path, p["reason"], p["line"], p["id"], tuple(p.get("supersedes") or ()))
                    for path, problems in rows
                    for p in json.loads(problems)]

        return self._rebuilt_if_corrupt(read)

    def vectors_for(self, memories: list[Memory]) -> dict[str, bytes]:
        """Stored vectors of these memories' texts, by memory id (missing ones left out)."""
        return stored_vectors(self.db, memories)

    def session(self, session_id: str) -> list[tuple[int, str, str]]:
        """(rowid, path, created_at) of this store's memories from capture session `session_id`."""
        return links.session(self.db, session_id)

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

    def lexical_ceiling(self, query: str) -> float:
        """The BM25 score a memory made of nothing but the query's words, each many times, would
        reach in this store: (k1 + 1) · Σ idf over the query's words, with FTS5's own idf
        (log((N - n + 0.5) / (n + 0.5)), 1e-6 when not positive). A `lexical` score divided by it is
        the idf-weighted share of the query a memory matches, in [0, 1): the store's size and the
        query's length cancel out (a store of one memory still tells a full match from none).
        Document frequencies are remembered per generation, so a repeated word costs nothing."""
        terms = query_terms(query)
        if not terms:
            return 0.0
        generation = self.generation()
        if generation != self._df_generation or len(self._df) > DF_CACHE:
            self._df, self._df_generation = {}, generation
            self._rows = self.db.execute("SELECT count(*) FROM memories").fetchone()[0]
        total = 0.0
        for term in terms:
            df = self._df.get(term)
            if df is None:
                phrase = '"' + term.replace('"', '""') + '"'
                df = self._df[term] = self.db.execute(
                    "SELECT count(*) FROM fts WHERE fts MATCH ?", (phrase,)).fetchone()[0]
            idf = math.log((self._rows - df + 0.5) / (df + 0.5))
            total += idf if idf > 0 else 1e-6
        return (BM25_K1 + 1) * total

    def vector_index(self):
        """The FAISS index of this store's vectors (None when there are none)."""
        return self._faiss.get(self.db)

    def status(self, embedder=None) -> Status:
        """What is stale and why, without writing anything."""
        _, known, changed, deleted = diff(self.db, self.store)
        stale = [f"{'new' if p not in known else 'changed'}: {p}" for p in changed]
        stale += [f"deleted: {p}" for p in deleted]
        vector_reason = missing_reason(self.db, embedder)
        if vector_reason:
            stale.append(f"vectors: {vector_reason}")
        return Status(
            scope=self.scope,
            database=str(self.db_path) if not self.in_memory else ":memory:",
            files=len(known),
            memories=self.db.execute("SELECT count(*) FROM memories").fetchone()[0],
            vectors=self.db.execute("SELECT count(*) FROM vectors").fetchone()[0],
            embedder=get_meta(self.db, "embedder"),
            stale=stale,
        )

    def check(self) -> list[str]:
        """Deep check of files against the cache: every disagreement, in one sentence each."""
        found = []
        scan = self.scan()
        known = cached_stats(self.db)
        for rel in sorted(set(scan) - set(known)):
            found.append(f"{rel}: in the store but not in the cache")
        for rel in sorted(set(known) - set(scan)):
            found.append(f"{rel}: in the cache but the file is gone")
        hashes = dict(self.db.execute("SELECT path, sha256 FROM files"))
        cached_ids = dict(self.db.execute("SELECT path, id FROM memories"))
        common = sorted(set(scan) & set(known))
        # read as a refresh reads (a file over 1 MiB or one that cannot be read is compared by what
        # the cache recorded of it, never by bytes it does not hold)
        for rel, read in zip(common, self.store.read_many(common), strict=True):
            if read is None:
                continue  # gone since the scan
            if read.sha256 != hashes[rel]:
                found.append(f"{rel}: the file's content differs from the cached hash")
                continue
            if (read.memory.id if read.memory else None) != cached_ids.get(rel):
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


class CacheBusy(ForgememError, sqlite3.OperationalError):
    """Another process held the cache longer than SQLite waits: the cache is fine, this run gives up on it."""


#: how often, and from how long a pause (doubled each time), a cache another process is creating is opened again
BUSY_WAITS, BUSY_PAUSE = 6, 0.05
