"""The library entry point: both stores, loaded together, and the ways to change them.

    from forgemem import Workspace
    ws = Workspace.open()                 # finds .forge/memory/ and ~/.forge/memory/
    snap = ws.load()                      # memories, graph and problems of both scopes
    memory = ws.add("Use ruff, not flake8", scope="repo", category="coding-preferences")

The CLI is a thin layer over this module.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from forgemem.config import FORGE_DIR, MEMORY_DIR, Config, load_layers, repo_dir_override
from forgemem.errors import ForgememError, Problem, UsageError, require_choice
from forgemem.store.folder import (  # noqa: F401 - init_forge_dir, default_forge_dir: used from here
    Store,
    default_forge_dir,
    find_repo_memory_dir,
    init_forge_dir,
    repository_without_store,
    user_memory_dir,
)
from forgemem.store.model import (
    CATEGORIES,
    RELATIONSHIPS,
    RETRACTED,
    SCOPES,
    TRIGGERS,
    Memory,
    Relation,
    Source,
    format_timestamp,
    utc_now,
)

if TYPE_CHECKING:  # the rest is imported where it is used: the CLI's start-up stays light
    from forgemem.index.cache import StoreIndex
    from forgemem.store.graph import MemoryGraph
    from forgemem.usage import Usage


@dataclass
class Snapshot:
    """Everything loaded from both stores at one moment."""

    memories: list[Memory]
    graph: MemoryGraph
    problems: list[Problem] = field(default_factory=list)
    unreadable: list[Path] = field(default_factory=list)  # files that gave no memory (why: in `problems`)

    def get(self, memory_id: str) -> Memory:
        return self.graph.memories[memory_id]

    def resolve(self, ref: str) -> Memory:
        """A memory by id or unambiguous id prefix (with or without `mem_`); a broken file's id names the file."""
        from forgemem.index.problems import broken_file_error

        ref = ref.strip()
        if ref in self.graph.memories:
            return self.graph.memories[ref]
        if "mem_".startswith(ref):  # "", "m" … "mem_": what every id starts with
            raise UsageError(f"{ref!r} is too short: give the first characters of the id after mem_ (`forgemem list`)")
        prefix = ref if ref.startswith("mem_") else f"mem_{ref}"
        matches = [m for m in self.graph.memories.values() if m.id.startswith(prefix)]
        if not matches:
            raise broken_file_error(self, ref) or UsageError(f"no memory has an id starting with {ref!r}")
        if len(matches) > 1:
            shown = ", ".join(sorted(m.id for m in matches)[:10])
            raise UsageError(f"{ref!r} matches {len(matches)} memories: {shown}; give more of the id")
        return matches[0]

    def pointing_at(self, memory_id: str) -> list[Memory]:
        """The memories that supersede or are related to `memory_id` (they would dangle without it)."""
        return [m for m in self.memories
                if memory_id in m.supersedes or any(r.id == memory_id for r in m.related)]

    def heads(self, include_retracted: bool = False) -> list[Memory]:
        return [m for m in self.graph.heads() if include_retracted or not m.retracted]


@dataclass(frozen=True)
class TrustChange:
    path: Path  # the repository config
    trusted: bool
    changed: bool  # False: it already was (or was not) trusted
    sha256: str | None
    user_only: dict  # the settings trust lets it decide
    recorded_in: Path  # the user's config

    def to_dict(self) -> dict:
        return {"config": str(self.path), "trusted": self.trusted, "changed": self.changed,
                "sha256": self.sha256, "settings": self.user_only, "recorded_in": str(self.recorded_in)}


class Workspace:
    def __init__(self, stores: dict[str, Store], config: Config | None = None):
        self.stores = stores
        self.warnings: list[str] = []
        self.pending_repo: Path | None = None  # a repo store not created yet (see `open`)
        self.created: list[Path] = []  # stores this workspace created
        #: where writes report what they cleaned up or reused (the CLI: stderr); None: into `warnings`
        self.on_notice: Callable[[str], None] | None = None
        self.reused: list[str] = []  # ids `add` returned instead of writing the same memory again
        self._read: dict[str, tuple] = {}  # id -> its fingerprint when last loaded (a rewrite checks it)
        self._writing = 0
        self._indexes: dict[str, StoreIndex] | None = None
        self._usage: dict[str, Usage] | None = None
        if config is None:
            layers = load_layers(*(stores[s].config_path if s in stores else None for s in ("user", "repo")))
            config = layers.config
            self.warnings.extend(layers.warnings)
        self.config = config

    @classmethod
    def open(cls, cwd: Path | None = None, repo_dir: Path | str | None = None, user_dir: Path | str | None = None,
             repo_on_first_write: bool = False) -> "Workspace":
        """Find both stores: explicit folders, then env vars, then discovery.

        With `repo_on_first_write` (capture), a git repository without a `.forge/` still gets a repo
        store at its root, created (as `forgemem init` would) only when a memory is first written to it:
        knowledge about a repository never lands in the personal store for want of a folder.
        """
        cwd = Path(cwd) if cwd else Path.cwd()
        user = Path(user_dir or user_memory_dir())  # FORGEMEM_USER_DIR is honoured there
        repo_override = repo_dir or repo_dir_override()
        skipped: list[str] = []
        repo = Path(repo_override) if repo_override else find_repo_memory_dir(cwd, exclude=user, skipped=skipped)
        pending = None
        if repo is None and repo_on_first_write and not repo_override:
            root = repository_without_store(cwd)
            if root is not None:
                repo = pending = root / FORGE_DIR / MEMORY_DIR
        stores = {"user": Store("user", user.expanduser().absolute())}
        if repo is not None:
            stores["repo"] = Store("repo", repo.expanduser().absolute())
        workspace = cls(stores)
        workspace.pending_repo = pending
        workspace.warnings[:0] = skipped
        return workspace

    # ------------------------------------------------------------ reading

    def store(self, scope: str) -> Store:
        if scope not in SCOPES:
            raise UsageError(f"unknown scope {scope!r} (expected repo or user)")
        if scope not in self.stores:
            raise UsageError(
                "no repo store here: run `forgemem init` in the repository, "
                "or pass --repo-dir PATH/.forge/memory"
            )
        return self.stores[scope]

    def capture_store(self) -> Store:
        """The store whose cache keeps capture's state (offsets, passes, notices): the repo's, unless it
        was not there when this workspace opened (its folder, and so a `.gitignore` for its cache, may
        not exist yet), then the user's."""
        repo = self.stores.get("repo")
        return repo if repo is not None and self.pending_repo is None else self.stores["user"]

    def indexes(self) -> dict[str, StoreIndex]:
        """The cache of each store that exists (an in-memory one where the cache folder is unwritable)."""
        if self._indexes is None:
            self._indexes = {scope: self._open_index(self.stores[scope]) for scope in ("repo", "user")
                             if scope in self.stores and self.stores[scope].exists()}
        return self._indexes

    def _open_index(self, store: Store) -> StoreIndex:
        from forgemem.index.cache import StoreIndex

        index = StoreIndex(store)
        try:
            index.connect()
        except (OSError, sqlite3.Error) as exc:
            self.warnings.append(f"cannot use the cache folder {store.cache_dir} ({exc}); working without a cache")
            index = StoreIndex(store, in_memory=True)
        return index

    def usage(self) -> dict[str, Usage]:
        """Each existing store's usage data (recalls, feedback): kept outside the rebuildable cache."""
        from forgemem.usage import Usage

        if self._usage is None:
            self._usage = {scope: Usage(store) for scope, store in self.stores.items() if store.exists()}
        return self._usage

    def feedback(self, ref: str, verdict: str) -> Memory:
        """Record `forgemem feedback`: the current version of the memory `ref` helped or was wrong."""
        require_choice("verdict", verdict, ("useful", "wrong"))
        snap = self.load()
        memory = snap.resolve(ref)
        heads = snap.graph.head_of(memory.id)
        target = snap.graph.memories[heads[0]] if len(heads) == 1 else memory
        self.usage()[target.scope].log([target.id], verdict)
        return target

    def load(self, extra_paths: Iterable[Path] = (), cache: bool = True) -> Snapshot:
        """Load both stores (repo first), plus any extra files or folders.

        With `cache`, unchanged files come from the store's cache instead of being
        read and parsed again; without it every file is parsed (what `validate` does).
        """
        from forgemem.store import memfile

        memories: list[Memory] = []
        problems: list[Problem] = []
        if cache:
            for index in self.indexes().values():
                index.refresh()
                memories.extend(m for _, m in index.memories())
                problems.extend(index.problems())
        else:
            for scope in ("repo", "user"):
                if scope in self.stores:
                    found, bad = self.stores[scope].load()
                    memories.extend(found)
                    problems.extend(bad)
        extra_paths = list(extra_paths)
        known = set()
        if extra_paths:
            known = {os.path.realpath(m.path) for m in memories if m.path} | {  # realpath: a link loop is no error
                os.path.realpath(p.path) for p in problems if p.path
            }
        for path in dict.fromkeys(p for extra in extra_paths for p in _memory_files(extra)):  # each file once
            if os.path.realpath(path) in known:
                continue
            try:
                memories.append(memfile.read_file(path))
            except memfile.MemoryFileError as exc:
                problems.extend(exc.problems)
        from forgemem.store.writing import fingerprint

        self._read.update((m.id, fingerprint(m)) for m in memories)
        return self.assemble(memories, problems)

    @staticmethod
    def assemble(memories: list[Memory], problems: list[Problem]) -> Snapshot:
        """Drop duplicate ids (the first file wins), build the graph, add its problems."""
        from forgemem.store.graph import MemoryGraph
        from forgemem.store.validate import graph_problems

        unique, duplicates = _split_duplicates(memories)
        unreadable = sorted({p.path for p in problems if p.path is not None} - {m.path for m in memories})
        graph = MemoryGraph(unique, {old: p.path for p in problems if p.path in unreadable for old in p.supersedes})
        return Snapshot(unique, graph, [*problems, *duplicates, *graph_problems(graph)], unreadable)

    # ------------------------------------------------------------ trust

    def trust(self, trust: bool = True) -> TrustChange:
        """Trust (or stop trusting) the repository's config file, recorded in the user's config.

        A trusted repository config may set the `USER_ONLY` settings (where
        capture sends data, which key it uses, which model is loaded), for as
        long as its bytes stay the same.
        """
        from forgemem.config import USER_ONLY, read_config_file, set_trust

        repo = self.store("repo")
        path = repo.config_path
        changed, digest = set_trust(self.stores["user"].config_path, path, trust)
        settings = read_config_file(path) if path.exists() else {}
        return TrustChange(
            path=path.resolve() if path.exists() else path,
            trusted=trust,
            changed=changed,
            sha256=digest,
            user_only={k: v for k, v in settings.items() if k in USER_ONLY},
            recorded_in=self.stores["user"].config_path,
        )

    # ------------------------------------------------------------ writing

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the write lock of every store (re-entrant): a read-check-write inside sees no other writer.

        On the way in, temporary files a killed write left in the stores are removed (and reported).
        """
        from forgemem.store.writing import clean_temp_files, locked

        with locked(self.stores.values()):
            if not self._writing:
                for store in self.stores.values():
                    removed = clean_temp_files(store) if store.exists() else []
                    if removed:
                        names = ", ".join(str(p.relative_to(store.memory_dir)) for p in removed[:5])
                        self._notice(f"removed {len(removed)} unfinished write(s) an interrupted forgemem left in "
                                     f"{store.memory_dir}: {names}{' …' if len(removed) > 5 else ''}")
            self._writing += 1
            try:
                yield
            finally:
                self._writing -= 1

    def _notice(self, message: str) -> None:
        if self.on_notice is not None:
            self.on_notice(message)
        else:
            self.warnings.append(message)

    def _check_unchanged(self, memory: Memory) -> None:
        """Refuse to write over a memory file that changed since this workspace read it."""
        from forgemem.store import memfile
        from forgemem.store.writing import fingerprint

        if memory.path is None:
            raise ForgememError(f"{memory.id} has no file")
        current = memfile.read_file(memory.path)  # a file that no longer parses is someone's edit: never touched
        read = self._read.get(memory.id)
        if current.id == memory.id and read is not None and fingerprint(current) != read:
            raise ForgememError(f"{memory.id} was changed by another process since it was read ({memory.path}); "
                                "nothing was written: run the command again")

    def add(
        self,
        text: str,
        *,
        scope: str | None = None,
        category: str | None = None,
        tags: Iterable[str] = (),
        supersedes: Iterable[str] = (),
        related: Iterable[tuple[str, str]] = (),
        trigger: str = "manual",
        session_id: str | None = None,
        confidence: float | None = None,
        source: Source | str | dict | None = None,
        status: str | None = None,
        snapshot: Snapshot | None = None,
        carry: bool = True,
        reload: Callable[[], Snapshot] | None = None,
    ) -> tuple[Memory, list[str]]:
        """Write a new memory; returns it and the kinds of secret redacted from it.

        With `supersedes`, the new memory is the next version of those memories (version = highest
        predecessor's + 1); the old files are never touched. Scope and category default to the predecessor's;
        tags and edges are carried forward (`carry=False`: only the ones given).

        It runs under the stores' write lock (`writing`), on a fresh read (`reload`, default `load`: a caller
        that keeps a view of the cache up to date, like capture's recall engine, gives its refresh, which reads
        only what changed): of parallel writers that supersede the same memory, one succeeds and the others are
        refused. The same write retried within ten minutes (same text, scope, category, tags, predecessors,
        edges) returns the memory already written (its id is added to `reused`) instead of a duplicate. The
        file is on disk (synced) when this returns.
        """
        with self.writing():
            return self._add(text, scope, category, tags, supersedes, related, trigger, session_id, confidence,
                             source, status, snapshot, carry, reload or self.load)

    def _add(self, text, scope, category, tags, supersedes, related, trigger, session_id, confidence, source,
             status, snapshot, carry, reload) -> tuple[Memory, list[str]]:
        from forgemem.store import memfile
        from forgemem.store.writing import carried, compose, recent_twin

        supersedes, related = list(supersedes), list(related)
        # the stores are read only when there is something to resolve: a plain add writes one file
        snap = reload() if supersedes or related else None
        old = [snap.resolve(ref) for ref in supersedes] if snap is not None else []
        for memory in old:
            given = snapshot.graph.memories.get(memory.id) if snapshot is not None else None
            if given is not None and (given.body, given.version) != (memory.body, memory.version):
                raise ForgememError(f"{memory.id} was changed by another process since it was read "
                                    f"({memory.path}); nothing was written: run the command again")
        if old:
            scope = scope or old[0].scope
            category = category or old[0].category
        scope = scope or ("repo" if "repo" in self.stores else "user")
        if category is None:
            raise UsageError(f"choose a category with --category ({', '.join(CATEGORIES)})")
        require_choice("category", category, CATEGORIES)
        require_choice("trigger", trigger, TRIGGERS)
        relations = []
        for ref, relationship in related:
            require_choice("relationship", relationship, RELATIONSHIPS)
            assert snap is not None
            relations.append(Relation(snap.resolve(ref).id, relationship))
        if old and carry and snap is not None:
            tags, relations = carried(snap.graph, old, tags, relations)
        store = self.store(scope)
        memory, found = compose(text, scope=scope, category=category, tags=tags, old=old, related=relations,
                                trigger=trigger, session_id=session_id, confidence=confidence, source=source,
                                status=status)
        name = memfile.file_name(memory)
        twin = recent_twin(store, memory, store.memory_dir / category, name[: -len(f"{memory.short_id()}.md")])
        if twin is not None and not (snap or reload()).graph.is_head(twin.id):
            twin = None  # superseded since: adding it again makes it current again, as a new memory
        if twin is not None:
            self.reused.append(twin.id)
            self._notice(f"the same memory was added at {format_timestamp(twin.created_at)} as {twin.id}: "
                         "nothing new was written")
            return twin, found
        for memory_ in old:
            assert snap is not None
            if not snap.graph.is_head(memory_.id):
                newer = snap.graph.newer_versions(memory_.id)
                raise UsageError(f"{memory_.id} is already superseded by {newer}; nothing was written "
                                 "(supersede the newest version)")
        if scope == "repo" and self.pending_repo is not None and not store.exists():
            init_forge_dir(self.pending_repo.parent)  # with the .gitignore that keeps its cache out of git
            self.created.append(self.pending_repo)
            if self._indexes is not None:  # recall sees it now: the rest of the run relates to what it wrote there
                self._indexes["repo"] = self._open_index(store)
            self._usage = None
        memfile.write_new(memory, store.memory_dir / category / name)
        return memory, found

    def replace(self, memory: Memory) -> Path:
        """Write a changed memory over its own file (validated first; a file that does not parse is never
        overwritten: it is someone's unfinished edit)."""
        from forgemem.store import memfile
        from forgemem.store.writing import fingerprint

        with self.writing():
            self._check_unchanged(memory)
            path = memfile.rewrite(memory)
            self._read[memory.id] = fingerprint(memory)
            return path

    def remove(self, memory: Memory) -> None:
        """Delete a memory's file (a purge, a rejected proposal): git keeps what was committed."""
        from forgemem.permissions import remove_durably

        with self.writing():
            self._check_unchanged(memory)
            assert memory.path is not None
            remove_durably(memory.path)
            self._read.pop(memory.id, None)

    def link(self, source_ref: str, target_ref: str, relationship: str) -> tuple[Memory, Memory]:
        """Add a typed edge to the first memory's `related` list (its file is rewritten)."""
        from forgemem.store.writing import refuse_chain_link

        require_choice("relationship", relationship, RELATIONSHIPS)
        with self.writing():  # read, check and rewrite with no other writer in between: no edge is lost
            snap = self.load()
            source, target = snap.resolve(source_ref), snap.resolve(target_ref)
            if source.id == target.id:
                raise UsageError("a memory cannot be linked to itself")
            refuse_chain_link(snap.graph, source, target)
            relation = Relation(target.id, relationship)
            if relation not in source.related:
                source.related = source.related + (relation,)
                source.updated_at = utc_now()
                self.replace(source)
            return source, target

    def forget(self, ref: str, reason: str = "", purge: bool = False) -> tuple[Memory, list[Memory]]:
        """Retract a memory with a new version (or delete its file with `purge`).

        Returns the retracting memory (or the purged one) and the memories
        that still point at a purged id.
        """
        with self.writing():
            return self._forget(ref, reason, purge)

    def _forget(self, ref: str, reason: str, purge: bool) -> tuple[Memory, list[Memory]]:
        snap = self.load()
        memory = snap.resolve(ref)
        if purge:
            self.remove(memory)
            from forgemem.store.purged import remember  # never captured again
            self.warnings.extend(remember(self.stores[memory.scope], memory))
            return memory, snap.pointing_at(memory.id)
        if not snap.graph.is_head(memory.id):
            newer = snap.graph.newer_versions(memory.id)
            raise UsageError(f"{memory.id} is already superseded by {newer}; forget the newest version")
        if memory.retracted:
            raise UsageError(f"{memory.id} is already a retraction")
        text = f"Retracted: {memory.title}"
        if reason:
            text += f"\n\nReason: {reason}"
        retraction, _ = self.add(text, scope=memory.scope, category=memory.category, supersedes=[memory.id],
                                 status=RETRACTED, snapshot=snap, carry=False)
        return retraction, []


def _memory_files(path: Path) -> list[Path]:
    if path.is_dir():
        return Store("repo", path).files()
    return [path]


def _split_duplicates(memories: list[Memory]) -> tuple[list[Memory], list[Problem]]:
    first: dict[str, Memory] = {}
    problems = []
    for memory in memories:
        seen = first.get(memory.id)
        if seen is None:
            first[memory.id] = memory
        else:
            problems.append(
                Problem(memory.path, f"duplicate id {memory.id} (also in {seen.path})", None, memory.id)
            )
    return list(first.values()), problems
