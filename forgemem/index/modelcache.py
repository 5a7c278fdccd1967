"""The exported models (`~/.forge/cache/models/<fingerprint>/`): what a sound export looks like, and a check.

An export writes `model.onnx` and `export.json`, which records the file's size and SHA-256
beside the export's own check against sentence-transformers. Every load compares the size
(a `stat`: free); a file of the wrong size, something that is not a file in its place, or a
file ONNX Runtime cannot load is exported again (`embedding.load_embedder`), instead of
leaving forgemem on lexical search for good. `check` is `forgemem doctor`'s look: the whole
checksum of every export, a broken one exported again (the current model) or removed (to be
exported when next used).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from forgemem.config import embeddings_disabled
from forgemem.index.repair import kind

MODEL_FILE = "model.onnx"
RECORD_FILE = "export.json"


def digest(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def record_of(folder: Path) -> dict | None:
    """What the export recorded (None: no record, or one that cannot be read)."""
    try:
        data = json.loads((folder / RECORD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def problem(folder: Path, full: bool = False) -> str | None:
    """What is wrong with the export in `folder` (None: nothing, or no export yet). Without `full` only what
    a `stat` shows (every load checks this); with it, the checksum too."""
    path = folder / MODEL_FILE
    found = kind(path)
    if found is not None:
        return f"is {found}, not a file"
    try:
        size = path.stat().st_size
    except OSError:
        return None  # not exported yet
    record = record_of(folder)
    if record is None or not isinstance(record.get("size"), int):
        return None  # an export from before sizes were recorded: a failed load says what is wrong
    if size != record["size"]:
        return f"is {size} bytes, not the {record['size']} it was exported with"
    if full and isinstance(record.get("sha256"), str) and digest(path) != record["sha256"]:
        return "does not match the checksum recorded when it was exported"
    return None


def stat_key(path: Path) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def check(configured: str = "", repair: bool = True) -> dict:
    """Every export in the model cache, as `forgemem doctor` reports it: problems, what was repaired,
    and what could not be (with why)."""
    from forgemem.index.embedding import (
        EmbeddingUnavailable,
        fingerprint,
        model_cache_dir,
        resolve_model_dir,
    )
    from forgemem.index.repair import moved_aside, remove

    cache = model_cache_dir()
    report: dict = {"folder": str(cache), "models": 0, "problems": [], "repaired": [], "not_repaired": [],
                    "moved_aside": []}
    if embeddings_disabled():
        return {**report, "ok": True, "skipped": "embeddings are switched off"}
    try:
        current = fingerprint(resolve_model_dir(configured))
    except (EmbeddingUnavailable, OSError):
        current = None
    try:
        folders = sorted(p for p in cache.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        folders = []
    for folder in folders:
        report["moved_aside"] += [f"{folder.name}/{n}" for n in moved_aside(folder)]
        if not os.path.lexists(folder / MODEL_FILE):
            continue
        report["models"] += 1
        found = problem(folder, full=True)
        if found is None and record_of(folder) is None:
            found = f"has no readable {RECORD_FILE}, so its checksum cannot be checked"
        if found is None:
            continue
        report["problems"].append(f"{folder / MODEL_FILE} {found}")
        if not repair:
            continue
        if folder.name == current:
            from forgemem.index.embedding import reexport

            try:
                reexport(configured, found)
                report["repaired"].append(f"{folder / MODEL_FILE}: exported again")
            except EmbeddingUnavailable as exc:
                report["not_repaired"].append(f"{folder / MODEL_FILE}: {exc}")
        else:
            remove(folder / MODEL_FILE)
            report["repaired"].append(f"{folder / MODEL_FILE}: removed (another model's; exported again when used)")
    report["ok"] = not report["not_repaired"] and (not report["problems"] or repair)
    return report
