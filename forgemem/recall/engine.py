"""The recall engine: a workspace's indexes, its embedder and a loaded snapshot.

One engine answers many queries without paying start-up again: `refresh()`
brings every store's cache up to date (cheap when nothing changed) and reloads
the snapshot only when a store's generation moved; `recall()` runs one query.
The CLI's batch mode and the recall server keep one engine for their lifetime.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path

from forgemem.config import embeddings_disabled
from forgemem.index.cache import StoreIndex
from forgemem.index.embedding import EmbeddingUnavailable, RememberingEmbedder, load_embedder
from forgemem.index.refresh import RefreshReport
from forgemem.recall.rank import CANDIDATES, FILTERED_CANDIDATES, Candidate, Hit, Query, fuse, rank
from forgemem.recall.surroundings import adjust, written_order
from forgemem.store.graph import MemoryGraph
from forgemem.store.model import Memory
from forgemem.workspace import Snapshot, Workspace

#: With a watcher, a full stat-based check still runs at least this often, in
#: case the file system dropped an event (network file systems, overflow).
FULL_CHECK_SECONDS = 30.0


@dataclass
class RecallResult:
    query: Query
    hits: list[Hit]
    lexical_only: bool
    notes: list[str] = field(default_factory=list)
    below_floor: int = 0  # hits among the top k left out for scoring under `query.floor`

    def to_dicts(self) -> list[dict]:
        return [h.to_dict() for h in self.hits]


class RecallEngine:
    def __init__(
        self,
        workspace: Workspace,
        use_embeddings: bool = True,
        on_notice: Callable[[str], None] | None = None,
        embedder=None,
        lazy: bool = False,
    ):
        self.workspace = workspace
        #: a process that answers one recall: read from the cache what it uses (`recall.lazy`)
        self.lazy = lazy
        self.use_embeddings = use_embeddings
        self.notice = on_notice or (lambda message: None)
        self._embedder = embedder if use_embeddings else None
        self._embedder_error: str | None = None
        self._remember = 0  # with `remember_vectors`: how many texts' vectors are kept
        self._snapshot: Snapshot | None = None
        self._generations: dict[str, int] = {}
        self._session_orders: dict[tuple[str, str, int | None], list[int]] = {}
        self._rows: MutableMapping[tuple[str, int], Memory] = {}
        self._problems: dict[str, list] = {}
        self._watcher: StoreWatcher | None = None
        self._last_full_check = 0.0

    # ------------------------------------------------------------ parts

    @property
    def embedder(self):
        """The embedder, loaded on first use; None (with a reason) when unavailable."""
        if self._embedder is None and self._embedder_error is None and self.use_embeddings:
            try:
                self._embedder = load_embedder(self.workspace.config.embedding_model, on_export=self.notice)
            except EmbeddingUnavailable as exc:
                self._embedder_error = str(exc)
        if self._remember and self._embedder is not None and not isinstance(self._embedder, RememberingEmbedder):
            self._embedder = RememberingEmbedder(self._embedder, self._remember)
        return self._embedder

    def remember_vectors(self, limit: int = 2048) -> None:
        """From now on encode each text once (the `limit` texts used last are kept): for a caller that asks
        for the same text's vector several times (a capture pass: neighbours, repeats, the index entry)."""
        self._remember = limit

    @property
    def lexical_only_reason(self) -> str | None:
        if not self.use_embeddings:
            return "embeddings are switched off" + (" (FORGEMEM_NO_EMBEDDINGS is set)" if embeddings_disabled() else "")
        return self._embedder_error

    def indexes(self) -> dict[str, StoreIndex]:
        return self.workspace.indexes()

    # ------------------------------------------------------------ refresh

    def refresh(
        self, progress=None, embed: bool = True, only: dict[str, list[str]] | None = None
    ) -> dict[str, RefreshReport]:
        """Bring every store's cache up to date; update the snapshot if anything moved.

        `only` maps a scope to the files (relative to its store) known to have
        changed; without it every file's mtime and size is checked.
        """
        embedder = self.embedder if embed else None
        reports = {}
        for scope, index in self.indexes().items():
            limit = None if only is None else only.get(scope, [])
            reports[scope] = index.refresh(embedder, progress=progress, only=limit)
        generations = {scope: index.generation() for scope, index in self.indexes().items()}
        if self._snapshot is None or set(generations) != set(self._generations):
            self._load_snapshot()
        elif generations != self._generations:
            self._update_snapshot(generations)
        self._generations = generations
        return reports

    def watch(self) -> None:
        """Watch the memory folders (watchdog) so `refresh_if_changed` can skip the stat walk."""
        folders = [s.memory_dir for s in self.workspace.stores.values()]
        self._watcher = StoreWatcher(folders)

    def refresh_if_changed(self) -> bool:
        """Refresh what the watcher saw change; a full check at least every FULL_CHECK_SECONDS.

        Returns whether the snapshot changed.
        """
        before = self._snapshot
        watcher = self._watcher
        now = time.monotonic()
        full, paths = watcher.take() if watcher is not None else (True, set())
        if full or now - self._last_full_check >= FULL_CHECK_SECONDS:
            self.refresh()
            self._last_full_check = now
        elif paths:
            only: dict[str, list[str]] = {}
            for scope, store in self.workspace.stores.items():
                prefix = str(store.memory_dir) + "/"
                only[scope] = [p[len(prefix):] for p in paths if p.startswith(prefix)]
            self.refresh(only=only)
        return self._snapshot is not before

    def _load_snapshot(self) -> None:
        if self.lazy:
            from forgemem.recall.lazy import load

            view = load(self.indexes(), self._load_full)
            if view is not None:
                self._rows, self._problems, self._snapshot = view.rows, {}, view.snapshot
                return
        self._load_full()

    def _load_full(self) -> tuple[MutableMapping[tuple[str, int], Memory], Snapshot]:
        self._rows = {}
        self._problems = {}
        for scope, index in self.indexes().items():
            for rowid, memory in index.memories():
                self._rows[(scope, rowid)] = memory
            self._problems[scope] = index.problems()
        self._assemble()
        assert self._snapshot is not None
        return self._rows, self._snapshot

    def _update_snapshot(self, generations: dict[str, int]) -> None:
        """Apply only the rows written since the generation last seen (by any process)."""
        if not isinstance(self._rows, dict):  # read on demand: read on demand again
            return self._load_snapshot()
        for scope, index in self.indexes().items():
            if generations[scope] == self._generations.get(scope):
                continue
            changed, deleted = index.changes_since(self._generations[scope])
            for rowid in deleted:
                self._rows.pop((scope, rowid), None)
            for rowid, memory in changed:
                self._rows[(scope, rowid)] = memory
            self._problems[scope] = index.problems()
        self._assemble()

    def _assemble(self) -> None:
        order = {"repo": 0, "user": 1}
        keys = sorted(self._rows, key=lambda k: (order.get(k[0], 2), str(self._rows[k].path)))
        problems = [p for scope in sorted(self._problems, key=lambda s: order.get(s, 2)) for p in self._problems[scope]]
        self._snapshot = self.workspace.assemble([self._rows[k] for k in keys], problems)

    @property
    def snapshot(self) -> Snapshot:
        if self._snapshot is None:
            self.refresh()
        assert self._snapshot is not None
        return self._snapshot

    # ------------------------------------------------------------ recall

    def recall(self, query: Query, refresh: bool = True, use_priors: bool = True) -> RecallResult:
        if refresh:
            self.refresh()  # a corrupt cache rebuilds itself inside StoreIndex.refresh
        graph: MemoryGraph = self.snapshot.graph
        fused, dense = self.scored(query)
        feedback: dict[str, tuple[int, int]] = {}
        if use_priors:
            for usage in self.workspace.usage().values():
                try:
                    feedback.update(usage.feedback())
                except Exception:  # noqa: BLE001 - usage data must never fail a recall
                    pass
        hits, below = rank(fused, graph, query, use_priors=use_priors, feedback=feedback, dense=dense)
        notes = []
        if not dense:
            notes.append(f"lexical search only: {self.lexical_only_reason}")
        return RecallResult(query, hits, lexical_only=not dense, notes=notes, below_floor=below)

    def scored(self, query: Query) -> tuple[list[Candidate], bool]:
        """The candidates with their `combined` score (fused, then their surroundings), best first, and
        whether the dense leg ran."""
        candidates, vector = self._candidates(query)
        dense = vector is not None
        fused = fuse(candidates, dense=dense)
        graph = self.snapshot.graph

        def same_memory(a: str, b: str) -> bool:
            return bool(set(graph.head_of(a)) & set(graph.head_of(b)))

        return adjust(fused, query.text, self._session_order, lambda key: self._fetch(key, vector),
                      same_memory=same_memory), dense

    def candidates(self, query: Query) -> tuple[list[Candidate], bool]:
        """The memory files either leg finds for `query` (unranked), and whether the dense leg ran."""
        candidates, vector = self._candidates(query)
        return candidates, vector is not None

    def _session_order(self, scope: str, session_id: str) -> list[int]:
        """A session's rows in the order they were written (remembered until the store changes)."""
        key = (scope, session_id, self._generations.get(scope))
        order = self._session_orders.get(key)
        if order is None:
            index = self.indexes().get(scope)
            order = [] if index is None else written_order(index.session(session_id))
            if len(self._session_orders) >= 4096:
                self._session_orders.clear()
            self._session_orders[key] = order
        return order

    def _fetch(self, key: tuple[str, int], vector) -> Candidate | None:
        """A memory neither leg found (a session neighbour), with its cosine when there are vectors."""
        memory = self._rows.get(key)
        if memory is None or memory.id not in self.snapshot.graph.memories:
            return None
        candidate = Candidate(memory, key=key)
        if vector is not None:
            cosine = _stored_cosine(self.indexes()[key[0]].vector_index(), key[1], vector)
            if cosine is not None:
                candidate.dense_score = candidate.combined = cosine
        return candidate

    def _candidates(self, query: Query):
        snap = self.snapshot
        graph: MemoryGraph = snap.graph
        embedder = self.embedder
        limit = FILTERED_CANDIDATES if query.filtered else max(CANDIDATES, query.k * 5)
        candidates: dict[tuple[str, int], Candidate] = {}
        vector = embedder.encode([query.text])[0] if embedder is not None else None
        for scope, index in self.indexes().items():
            if query.scope and scope != query.scope:
                continue
            found = index.lexical(query.text, limit)
            ceiling = index.lexical_ceiling(query.text) if found else 0.0
            for rank_, (rowid, score) in enumerate(found, start=1):
                memory = self._rows.get((scope, rowid))
                if memory is None or memory.id not in graph.memories:
                    continue
                candidates[(scope, rowid)] = Candidate(
                    memory, lexical_rank=rank_, lexical_score=score, key=(scope, rowid),
                    lexical_share=min(1.0, score / ceiling) if ceiling > 0 else 0.0)
            if vector is not None:
                faiss_index = index.vector_index()
                if faiss_index is not None and faiss_index.ntotal:
                    self._dense(scope, faiss_index, vector, limit, candidates, graph)
        _rank_lexical_across_scopes(candidates)
        return list(candidates.values()), vector

    def _dense(self, scope, faiss_index, vector, limit, candidates, graph) -> None:
        import numpy as np

        n = min(limit, faiss_index.ntotal)
        scores, ids = faiss_index.search(np.asarray(vector, dtype=np.float32)[None, :], n)
        for rank_, (score, rowid) in enumerate(zip(scores[0], ids[0], strict=True), start=1):
            if rowid < 0:
                continue
            key = (scope, int(rowid))
            memory = self._rows.get(key)
            if memory is None or memory.id not in graph.memories:
                continue
            candidate = candidates.get(key)
            if candidate is None:
                candidate = candidates[key] = Candidate(memory, key=key)
            candidate.dense_rank, candidate.dense_score = rank_, float(score)
        # Lexical-only candidates still get their exact cosine, so fusion compares like with like.
        missing = [key for key, c in candidates.items() if key[0] == scope and c.dense_score is None]
        for key in missing:
            candidates[key].dense_score = _stored_cosine(faiss_index, key[1], vector)


def _stored_cosine(faiss_index, rowid: int, vector) -> float | None:
    """The cosine between `vector` and the stored vector of row `rowid` (None when the index has none)."""
    import numpy as np

    try:
        stored = faiss_index.reconstruct(rowid) if faiss_index is not None else None
    except RuntimeError:
        return None
    return None if stored is None else float(np.dot(stored, vector))


def _rank_lexical_across_scopes(candidates: dict[tuple[str, int], Candidate]) -> None:
    """Lexical ranks are per store; renumber them over both stores by the share of the query matched
    (raw BM25 depends on each store's size)."""
    lexical = sorted((c for c in candidates.values() if c.lexical_score is not None),
                     key=lambda c: -c.lexical_share)
    for rank_, c in enumerate(lexical, start=1):
        c.lexical_rank = rank_
    dense = sorted((c for c in candidates.values() if c.dense_rank is not None), key=lambda c: -c.dense_score)
    for rank_, c in enumerate(dense, start=1):
        c.dense_rank = rank_


class StoreWatcher:
    """Collects the files changed under the memory folders (watchdog: inotify on Linux).

    `take()` returns (full, paths): `full` when something happened that a list
    of files cannot describe (a folder created, moved or deleted; a store that
    appeared or vanished), otherwise the absolute paths of the changed files.
    """

    def __init__(self, folders: list[Path]):
        from watchdog.events import DirModifiedEvent, FileSystemEventHandler
        from watchdog.observers import Observer

        self._lock = threading.Lock()
        self._full = True
        self._paths: set[str] = set()
        self.folders = folders
        self.watched = {f for f in folders if f.is_dir()}
        self._stamps = self._folder_stamps()
        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event):
                if isinstance(event, DirModifiedEvent) or event.event_type in ("opened", "closed_no_write"):
                    return  # a folder's listing changed: the file events say how
                with watcher._lock:
                    if event.is_directory:
                        watcher._full = True
                        return
                    watcher._paths.add(str(event.src_path))
                    if getattr(event, "dest_path", ""):
                        watcher._paths.add(str(event.dest_path))

        self.observer = Observer()
        self.observer.daemon = True
        for folder in self.watched:
            self.observer.schedule(Handler(), str(folder), recursive=True)
        self.observer.start()

    def take(self) -> tuple[bool, set[str]]:
        with self._lock:
            full, paths = self._full, self._paths
            self._full, self._paths = False, set()
        # inotify events arrive on the observer's thread, a moment after the write: a memory added just before a
        # recall ("forgemem add …" then "recall …") may not have been reported yet. A file created, renamed or
        # deleted changes its folder's time, which a few stats see at once
        stamps = self._folder_stamps()
        if stamps != self._stamps or {f for f in self.folders if str(f) in stamps} != self.watched:
            full = True  # ... and a store folder that appeared or vanished
        self._stamps = stamps
        return full, paths

    def _folder_stamps(self) -> dict[str, int]:
        """The modification times of the store folders that are folders now, and of their subfolders."""
        stamps: dict[str, int] = {}
        for folder in self.folders:
            try:
                with os.scandir(folder) as entries:
                    inside = {entry.path: entry.stat(follow_symlinks=False).st_mtime_ns
                              for entry in entries if entry.is_dir(follow_symlinks=False)}
                stamps[str(folder)] = os.stat(folder).st_mtime_ns
            except OSError:
                continue  # not a folder (now): gone, or gone between the listing and the stat
            stamps.update(inside)
        return stamps

    def stop(self) -> None:
        self.observer.stop()


def log_recalls(engine: RecallEngine, hits: list[dict]) -> None:
    """Note in each store's usage data which memories a recall returned (for `forgemem stats`)."""
    log_shown(engine.workspace, hits)


def log_shown(workspace: Workspace, hits: list[dict]) -> None:
    """`log_recalls` for a caller without an engine (`recall --deep` logs the hits it finally shows)."""
    by_scope: dict[str, list[str]] = {}
    for hit in hits:
        by_scope.setdefault(hit["scope"], []).append(hit["id"])
    for scope, ids in by_scope.items():
        usage = workspace.usage().get(scope)
        if usage is not None:
            try:
                usage.log(ids, "recalled")
            except Exception:  # noqa: BLE001 - usage data must never fail a recall
                pass
