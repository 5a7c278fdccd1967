"""What makes a write to a store safe when several processes write at once, or one is killed.

- **One writer at a time per store**: `locked(stores)` holds each store's lock
  (`<store>/../cache/memory.lock`, beside the cache, never in the tracked tree)
  for a whole read-check-write. It is a `filelock` (flock): the kernel drops it
  when its process dies, so a killed writer never leaves it stuck. Locks are
  taken in one order (by path) and are re-entrant within a thread.
- **Nothing half-written stays**: a write is a temporary file renamed over its
  target (`permissions.atomic_write_text`); a writer killed in between leaves
  `.<name>.md.<random>.tmp`. Under the lock no other writer is in flight, so
  every such file is stale: `clean_temp_files` removes them (and says which).
- **A retry is not a duplicate**: `recent_twin` finds a memory written in the
  last `DUPLICATE_WINDOW` with the same text, scope, category, tags, versions
  and edges, so a retried `add` (killed before it printed the id) returns it.
- **A change made on a stale read is refused**: `fingerprint` is what forgemem
  changes in a memory; a rewrite checks the file still has the fingerprint
  the writer read.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from forgemem.config import user_cache_dir
from forgemem.errors import ForgememError, UsageError
from forgemem.permissions import PRIVATE_FILE, private_dir
from forgemem.store.folder import Store
from forgemem.store.model import Memory, Relation, Source, new_id, normalize_body, utc_now, without_controls

LOCK_NAME = "memory.lock"
LOCK_TIMEOUT = 60.0  # seconds a writer waits for another one before it gives up
DUPLICATE_WINDOW = timedelta(minutes=10)
TEMP_FILE = re.compile(r"^\..+\.md\.[A-Za-z0-9_]+\.tmp$")  # what atomic_write_text names its temporary file

_locks: dict[str, object] = {}
_locks_guard = threading.Lock()


class StoreBusy(ForgememError):
    """Another process held a store's write lock for longer than LOCK_TIMEOUT."""


def lock_path(store: Store) -> Path:
    """The store's write lock: in its cache folder, or (if that cannot be made) in ~/.forge/cache/locks."""
    try:
        private_dir(store.cache_dir)
        return store.cache_dir / LOCK_NAME
    except OSError:
        digest = hashlib.sha256(str(store.memory_dir.absolute()).encode("utf-8")).hexdigest()[:24]
        return private_dir(user_cache_dir() / "locks") / f"{digest}.lock"


def _lock(path: str):
    from filelock import FileLock

    with _locks_guard:  # one object per path: two would flock the same file twice and wait on themselves
        lock = _locks.get(path)
        if lock is None:
            lock = _locks[path] = FileLock(path, mode=PRIVATE_FILE)
        return lock


@contextmanager
def locked(stores: Iterable[Store], timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the write lock of every store given that exists (re-entrant within a thread)."""
    from filelock import Timeout

    paths = sorted({str(lock_path(s)): s for s in stores if s.exists()}.items())
    held = []
    try:
        for path, store in paths:
            lock = _lock(path)
            try:
                lock.acquire(timeout=timeout)
            except Timeout:
                raise StoreBusy(
                    f"another forgemem process has been writing to {store.memory_dir} for {timeout:.0f} s "
                    f"(it holds {path}); nothing was written, try again"
                ) from None
            except OSError as exc:
                raise ForgememError(f"cannot lock {store.memory_dir} for writing ({path}: {exc.strerror or exc})") \
                    from None
            held.append(lock)
        yield
    finally:
        for lock in reversed(held):
            lock.release()


def clean_temp_files(store: Store) -> list[Path]:
    """Remove the temporary files a killed write left in the store; the ones removed.

    Call it only under the store's lock: then no write of ours is in flight.
    """
    removed = []
    for folder, dirs, files in os.walk(store.memory_dir):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if TEMP_FILE.match(name):
                path = Path(folder) / name
                try:
                    path.unlink()
                except FileNotFoundError:
                    continue
                removed.append(path)
    return removed


def fingerprint(memory: Memory) -> tuple:
    """What forgemem's own writes change in a memory: a file whose fingerprint moved was written meanwhile."""
    extra = memory.extra
    return (memory.body, memory.version, memory.supersedes, memory.related, memory.updated_at,
            extra.get("status"), tuple(extra.get("tags") or ()))


def twin_key(memory: Memory) -> tuple:
    """What makes two memories the same write: text, scope, category, tags, what they supersede, edges, status."""
    return (memory.body, memory.scope, memory.category, tuple(memory.tags), tuple(sorted(memory.supersedes)),
            tuple(sorted((r.id, r.relationship) for r in memory.related)), memory.status)


def recent_twin(store: Store, memory: Memory, folder: Path, prefix: str) -> Memory | None:
    """A memory written to `folder` in the last DUPLICATE_WINDOW that is the same write as `memory`.

    `prefix`: the start of the file name such a memory would have (its text's slug).
    """
    from forgemem.store.memfile import MemoryFileError, read_file

    since = utc_now() - DUPLICATE_WINDOW
    try:
        entries = [e for e in os.scandir(folder) if e.name.startswith(prefix) and e.is_file(follow_symlinks=False)]
    except OSError:
        return None
    key = twin_key(memory)
    for entry in sorted(entries, key=lambda e: e.name):
        try:
            if entry.stat().st_mtime < since.timestamp():
                continue
            other = read_file(Path(entry.path))
        except (OSError, MemoryFileError):
            continue
        if other.created_at >= since and other.scope == store.scope and twin_key(other) == key:
            return other
    return None


def plain_value(value):
    """A front-matter value (a string, or strings in lists and mappings) without control characters."""
    if isinstance(value, str):
        return without_controls(value)
    if isinstance(value, list):
        return [plain_value(item) for item in value]
    if isinstance(value, dict):
        return {key: plain_value(item) for key, item in value.items()}
    return value


def compose(text: str, *, scope: str, category: str, tags: Iterable[str], old: list[Memory],
            related: list[Relation], trigger: str, session_id: str | None, confidence: float | None,
            source: Source | str | dict | None, status: str | None) -> tuple[Memory, list[str]]:
    """The record a new memory file will hold (secrets redacted), and the kinds of secret redacted.

    `old`: the memories it supersedes (its version is one past the highest of theirs).
    """
    from forgemem.store.redact import redact, redact_value

    text = text.encode("utf-8", "replace").decode("utf-8")  # no lone surrogates in a file
    body, found = redact(normalize_body(without_controls(text)))
    if not body:
        raise UsageError("the memory text is empty")
    now = utc_now()
    extra: dict = {}
    tag_list = [t.strip() for t in tags if t.strip()]
    if tag_list:
        extra["tags"] = tag_list
    if confidence is not None:
        if not 0 <= confidence <= 1:
            raise UsageError(f"confidence must be from 0 to 1, not {confidence}")
        extra["confidence"] = confidence
    if source is not None:  # a Source, or a front-matter value (a string or a mapping) written as given
        value, source_found = redact_value(plain_value(source.front_matter() if isinstance(source, Source) else source))
        found = found + source_found
        extra["source"] = value
    if status is not None:
        extra["status"] = status
    memory = Memory(
        id=new_id(),
        body=body,
        scope=scope,
        category=category,
        created_at=now,
        updated_at=now,
        version=max((m.version for m in old), default=0) + 1,
        supersedes=tuple(m.id for m in old),
        related=tuple(related),
        session_id=session_id,
        trigger=trigger,
        extra=extra,
    )
    return memory, found


def _walk(memory_id: str, step) -> set[str]:
    found, queue = set(), [memory_id]
    while queue:
        for other in step(queue.pop()):
            if other not in found and other != memory_id:
                found.add(other)
                queue.append(other)
    return found


def version_chain(graph, memory_id: str) -> set[str]:
    """Every memory in `memory_id`'s version chain: what it supersedes and what supersedes it, transitively."""
    return (_walk(memory_id, graph.predecessors)
            | _walk(memory_id, lambda current: graph.superseded_by.get(current, ())))


def refuse_chain_link(graph, source: Memory, target: Memory) -> None:
    """`link` between two versions of one memory is refused: their version chain already says how they relate."""
    if target.id in _walk(source.id, graph.predecessors):
        kind = "an earlier version (a predecessor)"
    elif target.id in _walk(source.id, lambda current: graph.superseded_by.get(current, ())):
        kind = "a later version (a successor)"
    else:
        return
    raise UsageError(f"{target.id} is {kind} of {source.id}: versions of one memory are not linked "
                     "(their chain already relates them); nothing was written")

def carried(graph, old: list[Memory], tags: Iterable[str], related: list[Relation]) -> tuple[list[str], list[Relation]]:
    """The tags and edges of a new version of `old`: the ones given, then the old versions' (duplicates merged).

    Edges to the superseded memories, or to anything else in their version chains, are dropped.
    """
    chain = {m.id for m in old}.union(*(version_chain(graph, m.id) for m in old))
    tag_list: list[str] = []
    for tag in (*tags, *(t for m in old for t in m.tags)):
        tag = tag.strip()
        if tag and tag not in tag_list:
            tag_list.append(tag)
    relations: list[Relation] = []
    for relation in (*related, *(r for m in old for r in m.related)):
        if relation.id not in chain and relation not in relations:
            relations.append(relation)
    return tag_list, relations
