"""Settings of the ``/search`` service, read once at the entry point and passed in.

The broker, topic prefix and other stream knobs stay in :mod:`verdictflow.settings`;
these are the API's own (env prefix ``VERDICTFLOW_API_``), plus the spec's blend weights under
their spec names ``LNSP_W_COS`` and ``LNSP_W_QUALITY``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from verdictflow.rerank_api.blend import Fusion, Weights
from verdictflow.rerank_api.schemas import (
    DEFAULT_MAX_QUERY_CHARS,
    DEFAULT_MAX_TOP_K,
    MAX_QUERY_CHARS,
    MAX_TOP_K,
)
from verdictflow.rerank_api.vector_index import IndexConfig

Mode = Literal["dense", "lexical", "hybrid"]
Weight = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


class ApiSettings(BaseSettings):
    """All knobs of the retriever. Frozen: build a new one with ``model_copy(update=...)``."""

    model_config = SettingsConfigDict(
        env_prefix="VERDICTFLOW_API_", frozen=True, extra="ignore", populate_by_name=True
    )

    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=0, le=65535)] = 8080
    #: ``topics``: follow ``docs`` and ``doc-quality``; ``artifacts``: load files at start-up.
    source: Literal["topics", "artifacts"] = "topics"
    npz: Path | None = None
    quality: Path | None = None
    index: Path | None = None
    w_cos: Weight = Field(0.85, validation_alias=AliasChoices("LNSP_W_COS", "w_cos"))
    w_quality: Weight = Field(0.15, validation_alias=AliasChoices("LNSP_W_QUALITY", "w_quality"))
    mode: Mode = "dense"
    #: How hybrid mode fuses the dense and BM25 lists: ``rrf`` or ``combsum`` (blend.py).
    fusion: Fusion = "rrf"
    embedder: Literal["hashing", "sentence-transformers"] = "hashing"
    embed_model_dir: str | None = Field(
        None, validation_alias=AliasChoices("LNSP_EMBED_MODEL_DIR", "embed_model_dir")
    )
    #: Threads of one query embedding (neural embedder). 1: requests run side by side on the
    #: search threads instead of one request's matrix products taking every core.
    embed_threads: Annotated[int, Field(ge=1, le=64)] = 1
    #: How the neural model embeds queries: ``int8`` (ONNX Runtime's BERT fusions, then dynamic
    #: quantisation; ~34 % less CPU per query, SciFact nDCG@10 within 0.005 of fp32:
    #: docs/scaling.md) or ``fp32``.
    #: Documents are always embedded as trained. Ignored by the hashing embedder.
    query_encoder: Literal["fp32", "int8"] = "int8"
    #: Queries embedded in one forward pass at most; 1 (the default): each alone, on the search
    #: thread. Micro-batching did not pay on the 2-core AMD EPYC it was measured on (159 vs
    #: 165 req/s closed loop with int8): docs/scaling.md says when it may. See query_batcher.py.
    query_batch_max: Annotated[int, Field(ge=1, le=256)] = 1
    #: Longest wait for a batch to fill, under load only (a lone query never waits).
    query_batch_wait_ms: Annotated[float, Field(ge=0, le=50)] = 2.0
    #: Forward passes at once (each on its own thread): one per core the replica may use.
    query_batch_workers: Annotated[int, Field(ge=1, le=64)] = 2
    #: Query vectors kept by exact query text (LRU; 0: off). 10,000 x 384 floats: ~16 MB.
    query_cache: Annotated[int, Field(ge=0, le=10_000_000)] = 10_000
    dim: Annotated[int, Field(ge=8, le=4096)] = 384
    #: Limits of a /search request; the request model and the OpenAPI document are built from
    #: them (rerank_api/schemas.py), so the schema states exactly what is enforced.
    max_query_chars: Annotated[int, Field(ge=1, le=MAX_QUERY_CHARS)] = DEFAULT_MAX_QUERY_CHARS
    max_top_k: Annotated[int, Field(ge=1, le=MAX_TOP_K)] = DEFAULT_MAX_TOP_K
    #: Candidates fetched before blending: max(top_k * overfetch, min_candidates), capped.
    overfetch: Annotated[int, Field(ge=1, le=100)] = 5
    min_candidates: Annotated[int, Field(ge=1)] = 100
    max_candidates: Annotated[int, Field(ge=1)] = 2000
    hnsw_threshold: Annotated[int, Field(ge=1)] = 20_000
    hnsw_m: Annotated[int, Field(ge=4, le=256)] = 32
    ef_construction: Annotated[int, Field(ge=8)] = 80
    ef_search: Annotated[int, Field(ge=8)] = 128
    delta_min: Annotated[int, Field(ge=1)] = 1024
    dead_ratio: Annotated[float, Field(gt=0, le=1)] = 0.2
    #: Shortest interval between BM25 snapshot rebuilds when documents change.
    lexical_refresh_seconds: Annotated[float, Field(gt=0)] = 1.0
    #: Declare readiness anyway when the topics bring nothing for this long (end offsets lie).
    ready_idle_seconds: Annotated[float, Field(gt=0)] = 3.0
    search_threads: Annotated[int, Field(ge=1, le=64)] = 2
    #: /search requests that may wait for a search thread at once; one more is refused at once
    #: with 503 ``overloaded`` and ``Retry-After: 1`` instead of queueing for seconds past the
    #: replica's capacity (0: no limit). 64 waiting is ~0.6 s at 110 answered a second
    #: (docs/scaling.md).
    max_waiting_searches: Annotated[int, Field(ge=0, le=100_000)] = 64
    #: FAISS OpenMP threads; 1 avoids spin-waiting threads fighting requests for cores.
    faiss_threads: Annotated[int, Field(ge=1, le=256)] = 1
    latency_window: Annotated[int, Field(ge=100)] = 200_000
    #: GIL switch interval while serving (CPython's default is 5 ms; see rerank_api/runtime.py).
    gil_switch_interval_ms: Annotated[float, Field(gt=0, le=100)] = 0.5
    #: Freeze the loaded heap so full garbage collections skip it (see rerank_api/runtime.py).
    gc_freeze: bool = True
    #: Bearer token required on every path but /healthz (``VERDICTFLOW_API_TOKEN``); None: open.
    token: SecretStr | None = None
    #: Leave /metrics open when a token is set (e.g. a scraper that cannot send one).
    metrics_public: bool = False
    #: Largest request body accepted (413 above, on every path). The default holds any valid
    #: /search body at the default limits, even fully ``\u``-escaped (about 26 KB); raise it
    #: with ``max_query_chars`` (12 bytes a character at worst).
    max_body_bytes: Annotated[int, Field(ge=256, le=64 * 1024 * 1024)] = 64 * 1024
    #: CORS origins allowed (JSON list in the environment); empty: no CORS headers at all.
    cors_origins: list[str] = Field(default_factory=list)

    @property
    def weights(self) -> Weights:
        return Weights(self.w_cos, self.w_quality)

    @property
    def index_config(self) -> IndexConfig:
        return IndexConfig(
            dim=self.dim,
            hnsw_threshold=self.hnsw_threshold,
            hnsw_m=self.hnsw_m,
            ef_construction=self.ef_construction,
            ef_search=self.ef_search,
            delta_min=self.delta_min,
            dead_ratio=self.dead_ratio,
        )
