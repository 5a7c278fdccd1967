"""A recall that reads from the cache only what it uses: the first recall of a process, without a server.

The full snapshot (every record parsed into a `Memory`, the whole graph built and checked) takes
seconds at 100K memories; one recall needs a few hundred candidates and the edges around them.
`load` gives the engine what it keeps for a snapshot, its rows by (scope, rowid) and a `Snapshot`,
both read on demand through the cache's indexes and `links` (`forgemem.index.links`). Whatever else
is asked of them (every memory, the problems, the graph as a whole) loads the full snapshot once,
through the engine, and answers from it; so does a cache that turns out damaged on the way.

`load` says no (the engine loads the full snapshot) unless the answers are the same: every store's
links are current, and no memory id is in two files (which file wins is decided by the full load).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from forgemem.index import links, problems
from forgemem.index.database import from_record
from forgemem.store.graph import CONTRADICTS, SUPERSEDES, Edge, MemoryGraph, Step
from forgemem.store.model import Memory, to_utc
from forgemem.workspace import Snapshot

if TYPE_CHECKING:
    from forgemem.index.cache import StoreIndex

Rows = MutableMapping[tuple[str, int], Memory]
#: the engine's full load: its rows and snapshot, which it keeps from then on
FullLoad = Callable[[], tuple[Rows, Snapshot]]
T = TypeVar("T")


def load(indexes: dict[str, StoreIndex], full: FullLoad) -> View | None:
    """The stores read on demand, or None when only the full snapshot gives the right answers."""
    try:
        for index in indexes.values():
            if not links.current(index.db) or links.has_duplicate_ids(index.db):
                return None
        if len(indexes) > 1:  # the same id in both stores: the first file wins in the full load
            small, *others = sorted(indexes.values(), key=lambda i: links.count(i.db))
            ids = links.all_ids(small.db)
            if any(links.ids_in(other.db, ids) for other in others):
                return None
    except sqlite3.DatabaseError:
        return None  # the full load rebuilds a damaged cache
    return View(indexes, full)


class View:
    """The memories of every store by row and by id, read as they are asked for."""

    def __init__(self, indexes: dict[str, StoreIndex], full: FullLoad):
        order = {"repo": 0, "user": 1}
        self.indexes = dict(sorted(indexes.items(), key=lambda item: order.get(item[0], 2)))
        self._full_load = full
        self._full: tuple[Rows, Snapshot] | None = None
        self._by_id: dict[str, Memory | None] = {}
        self._by_row: dict[tuple[str, int], Memory | None] = {}
        self._exists: dict[str, bool] = {}
        self.rows = LazyRows(self)
        self.snapshot = LazySnapshot(self)

    def full(self) -> tuple[Rows, Snapshot]:
        """The engine's full rows and snapshot (loaded once, on the first question the cache cannot answer)."""
        if self._full is None:
            self._full = self._full_load()
        return self._full

    def ask(self, question: Callable[[], T], fallback: Callable[[], T]) -> T:
        """`question()` of the cache; on a damaged one (or once loaded anyway), `fallback()` of the full snapshot."""
        if self._full is None:
            try:
                return question()
            except sqlite3.DatabaseError:
                pass
        return fallback()

    def _memory(self, scope: str, path: str, record: str) -> Memory:
        return from_record(record, self.indexes[scope].store.memory_dir / path)

    def row(self, key: tuple[str, int]) -> Memory | None:
        if key not in self._by_row:
            def question() -> Memory | None:
                index = self.indexes.get(key[0])
                found = None if index is None else index.db.execute(
                    "SELECT path, record FROM memories WHERE rowid = ?", (key[1],)).fetchone()
                return None if found is None else self._memory(key[0], *found)

            memory = self.ask(question, lambda: self.full()[0].get(key))
            self._by_row[key] = memory
            if memory is not None:
                self._by_id.setdefault(memory.id, memory)
        return self._by_row[key]

    def exists(self, memory_id: str) -> bool:
        """Whether some store holds a memory with this id (without reading its record)."""
        if memory_id in self._by_id:
            return self._by_id[memory_id] is not None
        if memory_id not in self._exists:
            self._exists[memory_id] = self.ask(
                lambda: any(links.exists(index.db, memory_id) for index in self.indexes.values()),
                lambda: memory_id in self.full()[1].graph.memories)
        return self._exists[memory_id]

    def memory(self, memory_id: str) -> Memory | None:
        if memory_id not in self._by_id:
            def question() -> Memory | None:
                for scope, index in self.indexes.items():
                    found = links.row_by_id(index.db, memory_id)
                    if found is not None:
                        return self._memory(scope, *found)
                return None

            self._by_id[memory_id] = self.ask(question, lambda: self.full()[1].graph.memories.get(memory_id))
        return self._by_id[memory_id]

    def each(self, read: Callable[[sqlite3.Connection], list[T]]) -> list[T]:
        """`read(db)` of every store, repo first, joined."""
        return [item for index in self.indexes.values() for item in read(index.db)]


class LazyRows(MutableMapping[tuple[str, int], Memory]):
    """The engine's rows: (scope, rowid) -> Memory, each read when first asked for."""

    def __init__(self, view: View):
        self.view = view

    def __getitem__(self, key: tuple[str, int]) -> Memory:
        memory = self.view.row(key)
        if memory is None:
            raise KeyError(key)
        return memory

    def __setitem__(self, key: tuple[str, int], value: Memory) -> None:
        self.view.full()[0][key] = value

    def __delitem__(self, key: tuple[str, int]) -> None:
        del self.view.full()[0][key]

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return iter(self.view.full()[0])

    def __len__(self) -> int:
        return len(self.view.full()[0])


class _LazyMemories(Mapping[str, Memory]):
    """The graph's memories: id -> Memory, each read when first asked for."""

    def __init__(self, view: View):
        self.view = view

    def __getitem__(self, memory_id: str) -> Memory:
        memory = self.view.memory(memory_id)
        if memory is None:
            raise KeyError(memory_id)
        return memory

    def __contains__(self, memory_id: object) -> bool:
        return isinstance(memory_id, str) and self.view.exists(memory_id)

    def __iter__(self) -> Iterator[str]:
        return iter(self.view.full()[1].graph.memories)

    def __len__(self) -> int:
        return len(self.view.full()[1].graph.memories)


class _LazySupersededBy(Mapping[str, list[str]]):
    """The graph's `superseded_by`: old id -> the ids that supersede it (only for ids that exist)."""

    def __init__(self, view: View):
        self.view = view
        self._known: dict[str, list[str]] = {}

    def __getitem__(self, memory_id: str) -> list[str]:
        if memory_id not in self._known:
            def question() -> list[str]:
                if not self.view.exists(memory_id):
                    return []
                return self.view.each(lambda db: links.superseders(db, memory_id))

            self._known[memory_id] = self.view.ask(
                question, lambda: self.view.full()[1].graph.superseded_by.get(memory_id, []))
        if not self._known[memory_id]:
            raise KeyError(memory_id)
        return self._known[memory_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self.view.full()[1].graph.superseded_by)

    def __len__(self) -> int:
        return len(self.view.full()[1].graph.superseded_by)


class CacheGraph(MemoryGraph):
    """`MemoryGraph` over the cache: what a recall asks (heads, neighbours, conflicts, the newest memory)
    is read around the memories it asks about; the rest comes from the full graph."""

    def __init__(self, view: View):  # noqa: D107 - nothing is loaded: no MemoryGraph.__init__
        self._view = view
        self.memories = cast("dict[str, Memory]", _LazyMemories(view))  # read-only: nothing writes a built graph
        self.superseded_by = cast("dict[str, list[str]]", _LazySupersededBy(view))

    def _whole(self) -> MemoryGraph:
        return self._view.full()[1].graph

    @cached_property
    def held_back(self) -> Mapping[str, Path]:  # type: ignore[override]  # read once, from every store's cache
        def question() -> Mapping[str, Path]:
            return {old: index.store.memory_dir / rel for index in self._view.indexes.values()
                    for old, rel in problems.held_back(index.db)}

        return self._view.ask(question, lambda: self._whole().held_back)

    def __getattr__(self, name: str) -> Any:
        # edges, dangling, _out, _in: the whole graph's
        if name.startswith("__") or name == "_view":
            raise AttributeError(name)
        return getattr(self._whole(), name)

    def __len__(self) -> int:
        return len(self._whole())

    def heads(self) -> list[Memory]:
        return self._whole().heads()

    def chains(self) -> list[list[Memory]]:
        return self._whole().chains()

    def forks(self) -> dict[str, list[str]]:
        return self._whole().forks()

    def cycles(self) -> list[list[str]]:
        return self._whole().cycles()

    def contradictions(self, unresolved_only: bool = True) -> list[Edge]:
        return self._whole().contradictions(unresolved_only)

    def to_json(self, ids: Iterable[str] | None = None) -> dict:
        return self._whole().to_json(ids)

    @cached_property
    def newest_timestamp(self) -> float:
        def question() -> float:
            stamps = [s for s in self._view.each(lambda db: [links.newest(db)]) if s]
            return to_utc(datetime.fromisoformat(max(stamps))).timestamp() if stamps else 0.0

        return self._view.ask(question, lambda: self._whole().newest_timestamp)

    @cached_property
    def conflicts(self) -> dict[str, list[str]]:
        return cast("dict[str, list[str]]", _LazyConflicts(self))

    def predecessors(self, memory_id: str) -> list[str]:
        def question() -> list[str]:
            return [t for t, kind in self._view.each(lambda db: links.outgoing(db, memory_id))
                    if kind == SUPERSEDES and self._view.exists(t)]

        return self._view.ask(question, lambda: self._whole().predecessors(memory_id))

    def _steps(self, node: str, allowed: set[str]) -> list[Step]:
        def question() -> list[Step]:
            out = [(t, kind) for t, kind in self._view.each(lambda db: links.outgoing(db, node))
                   if kind in allowed and self._view.exists(t)]
            steps = [Step(node, kind, target) for target, kind in out]
            steps += [Step(node, kind, source, reverse=True)
                      for source, kind in self._view.each(lambda db: links.incoming(db, node)) if kind in allowed]
            return steps

        return self._view.ask(question, lambda: self._whole()._steps(node, allowed))


class _LazyConflicts(Mapping[str, list[str]]):
    """The graph's `conflicts`, worked out for the memories asked about: as `MemoryGraph.conflicts`, a head
    -> the heads it contradicts (unresolved), and the other heads of any fork it is one of."""

    def __init__(self, graph: CacheGraph):
        self.graph = graph
        self.view = graph._view
        self._known: dict[str, list[str]] = {}

    def __getitem__(self, memory_id: str) -> list[str]:
        if memory_id not in self._known:
            self._known[memory_id] = self.view.ask(lambda: self._of(memory_id),
                                                   lambda: self.graph._whole().conflicts.get(memory_id, []))
        if not self._known[memory_id]:
            raise KeyError(memory_id)
        return self._known[memory_id]

    def _of(self, memory_id: str) -> list[str]:
        graph, view = self.graph, self.view
        if not view.exists(memory_id) or not graph.is_head(memory_id):
            return []
        found = {t for t, kind in view.each(lambda db: links.outgoing(db, memory_id))
                 if kind == CONTRADICTS and view.exists(t) and graph.is_head(t)}
        found |= {s for s, kind in view.each(lambda db: links.incoming(db, memory_id))
                  if kind == CONTRADICTS and graph.is_head(s)}
        # forks: an older version of this memory that two or more newer ones supersede, with other heads now
        older, queue = {memory_id}, [memory_id]
        while queue:
            for old in graph.predecessors(queue.pop()):
                if old not in older:
                    older.add(old)
                    queue.append(old)
                    if len(graph.superseded_by.get(old, ())) > 1:
                        heads = graph.head_of(old)
                        if memory_id in heads:
                            found.update(h for h in heads if h != memory_id)
        return sorted(found)

    def __bool__(self) -> bool:
        """Whether the graph may hold a conflict at all (a `contradicts` edge, or a memory superseded twice)."""
        return bool(self.view.ask(lambda: any(links.may_conflict(db) for db in (i.db for i in self.view.indexes.values()))
                                  or len(self.view.indexes) > 1, lambda: bool(self.graph._whole().conflicts)))

    def __iter__(self) -> Iterator[str]:
        return iter(self.graph._whole().conflicts)

    def __len__(self) -> int:
        return len(self.graph._whole().conflicts)


class LazySnapshot(Snapshot):
    """A `Snapshot` whose graph reads the cache on demand; `memories`, `problems` and `unreadable` are
    the full snapshot's (loaded on first use)."""

    def __init__(self, view: View):  # noqa: D107 - not the dataclass's: its fields come from the full load
        self._view = view
        self.graph = CacheGraph(view)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_view":
            raise AttributeError(name)
        return getattr(self._view.full()[1], name)

    def __eq__(self, other: object) -> bool:
        return self is other

    __hash__ = object.__hash__
