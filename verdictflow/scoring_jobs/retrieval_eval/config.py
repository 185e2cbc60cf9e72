"""Retriever configs of ``rq-eval`` (``--configA`` / ``--configB``): YAML, validated strictly.

A config describes one retriever the harness builds in-process from ``--corpus`` with the API's
own code (embedder, FAISS index, BM25, blend), or a running ``/search`` to query (``url``)::

    name: blended            # a label only (not in the digest)
    mode: dense              # dense | lexical | hybrid
    fusion: rrf              # hybrid only: rrf | combsum
    embedder: hashing        # hashing | sentence-transformers (local weights only)
    embed_model_dir: null    # sentence-transformers: a local model (default: the packaged one)
    query_encoder: fp32      # sentence-transformers: fp32 | int8 (queries only; as the API's)
    dim: 384
    index: auto              # flat | hnsw | auto (the API's rule: HNSW from 20,000 documents)
    candidate_depth: null    # candidates blended per query (at least k); null: the API's rule
    weights: {w_cos: 0.85, w_quality: 0.15}
    quality: none            # none | artifacts | a path to id_quality.jsonl / .npz
    lane: null
    trace: false             # allow --emit-traces to write this system's traces

``quality: artifacts`` is ``score-quality``'s default output, ``artifacts/id_quality.jsonl``.
Relative paths resolve against the config file's directory, so a config travels with its
files. Unknown keys, wrong types and out-of-range values are refused (a typo must not silently
fall back to a default); a ``url`` config refuses the in-process keys the server owns.

The *behavioural digest* hashes the normalised settings that decide rankings, not the file's
bytes: comments, key order, ``name`` and ``trace`` do not change it; the quality file's content
does; with ``w_quality: 0`` the quality source cannot change a ranking, so it is left out.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Annotated, Any, Literal

import orjson
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from verdictflow.digests import file_digest
from verdictflow.rerank_api.blend import Fusion
from verdictflow.scoring_jobs.retrieval_eval.inputs import RQInputError

Weight = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
#: score-quality's default ``--out-jsonl``.
ARTIFACTS_QUALITY = Path("artifacts/id_quality.jsonl")
#: Keys that only an in-process retriever uses; a ``url`` config may not set them.
_IN_PROCESS_KEYS = ("embedder", "embed_model_dir", "dim", "index", "candidate_depth", "quality",
                    "fusion", "query_encoder")  # fmt: skip


class BlendWeights(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    w_cos: Weight = 0.85
    w_quality: Weight = 0.15


class RetrieverConfig(BaseModel):
    """One side of the A/B: how its retriever is built and queried."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = None
    url: str | None = Field(None, pattern=r"^https?://")
    mode: Literal["dense", "lexical", "hybrid"] = "dense"
    fusion: Fusion = "rrf"
    embedder: Literal["hashing", "sentence-transformers"] = "hashing"
    embed_model_dir: str | None = None
    #: How queries are embedded (neural embedder): fp32, or the API's int8 encoder.
    query_encoder: Literal["fp32", "int8"] = "fp32"
    dim: Annotated[int, Field(ge=8, le=4096)] = 384
    index: Literal["flat", "hnsw", "auto"] = "auto"
    candidate_depth: Annotated[int, Field(ge=1, le=100_000)] | None = None
    weights: BlendWeights = BlendWeights()
    quality: str = "none"
    lane: Annotated[str, Field(min_length=1)] | None = None
    trace: bool = False
    timeout_s: Annotated[float, Field(gt=0, le=600)] = 30.0

    @model_validator(mode="after")
    def _url_owns_retriever(self) -> RetrieverConfig:
        if self.url is not None:
            given = [key for key in _IN_PROCESS_KEYS if key in self.model_fields_set]
            if given:
                raise ValueError(
                    f"a url config queries a running /search; the server owns {', '.join(given)}"
                )
        return self


class LoadedConfig(BaseModel):
    """A validated config with its resolved quality file and behavioural digest."""

    model_config = ConfigDict(frozen=True)

    path: Path
    config: RetrieverConfig
    quality_path: Path | None
    digest: str


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"]) or "config"
    return f"{where}: {error['msg']}"


def resolve_quality(config: RetrieverConfig, base: Path) -> Path | None:
    """The quality file a config names (None for ``none``), resolved against ``base``."""
    if config.quality == "none":
        return None
    path = ARTIFACTS_QUALITY if config.quality == "artifacts" else Path(config.quality)
    return path if path.is_absolute() else base / path


def behaviour(config: RetrieverConfig, quality_digest: str | None) -> dict[str, Any]:
    """The normalised settings that decide rankings (what the digest covers)."""
    settings: dict[str, Any] = {
        "mode": config.mode,
        "lane": config.lane,
        "weights": [config.weights.w_cos, config.weights.w_quality],
    }
    if config.url is not None:
        settings["url"] = config.url.rstrip("/")
        return settings
    settings["embedder"] = config.embedder
    if config.embedder != "hashing":
        settings["embed_model_sha256"] = _weights_sha256(config.embed_model_dir)
        if config.query_encoder != "fp32":  # fp32 digests stay what they were
            settings["query_encoder"] = config.query_encoder
    settings["dim"] = config.dim
    if config.mode == "hybrid":
        settings["fusion"] = config.fusion
    if config.mode != "lexical":
        settings["index"] = config.index
    settings["candidate_depth"] = config.candidate_depth
    if config.weights.w_quality > 0:
        settings["quality_sha256"] = quality_digest
    return settings


def _weights_sha256(model_dir: str | None) -> str:
    """The neural embedder's weights digest (its identity in the behavioural digest)."""
    from verdictflow.embedders import EmbedderUnavailable, resolve_model_dir, weights_digest

    try:
        return weights_digest(resolve_model_dir(model_dir))
    except EmbedderUnavailable as exc:
        raise RQInputError(str(exc)) from None


def config_digest(config: RetrieverConfig, quality_digest: str | None) -> str:
    blob = orjson.dumps(behaviour(config, quality_digest), option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(b"vf-rq-config/1\n" + blob).hexdigest()


def load_config(path: Path) -> LoadedConfig:
    """Read and validate a config file; every problem is one :class:`RQInputError` line."""
    try:
        raw = yaml.safe_load(path.read_bytes())
    except (OSError, UnicodeDecodeError) as exc:
        raise RQInputError(f"cannot read config {path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise RQInputError(f"{path}{where}: bad YAML ({problem})") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise RQInputError(f"{path}: a config is a YAML mapping of settings")
    try:
        config = RetrieverConfig.model_validate(raw)
    except ValidationError as exc:
        raise RQInputError(f"{path}: {_first_error(exc)}") from None
    quality_path = resolve_quality(config, path.parent)
    quality_digest = None
    if quality_path is not None:
        if not quality_path.is_file():
            raise RQInputError(f"{path}: quality file {quality_path} does not exist")
        quality_digest = file_digest(quality_path)
    try:
        digest = config_digest(config, quality_digest)
    except RQInputError as exc:
        raise RQInputError(f"{path}: {exc}") from None
    return LoadedConfig(path=path, config=config, quality_path=quality_path, digest=digest)
