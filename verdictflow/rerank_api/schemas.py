"""Request and response bodies of the API (pydantic v2), in the spec's shape.

One source of truth for the limits: :func:`search_request_model` builds each app's request model
from its settings (``max_query_chars``, ``max_top_k``), FastAPI validates bodies with that model
and generates the OpenAPI document from it, so what the schema promises is what the server
enforces. The constants below bound the settings (and are the defaults).

Every field is strict (no ``"5"`` for 5, no ``true`` for a weight): ``q`` must contain a
non-whitespace character (:data:`NON_BLANK`, a pattern so that the schema says it too),
``top_k`` is an integer (``5.0`` included, as in JSON Schema), weights are numbers in [0, 1],
and unknown fields are refused (a typo such as ``topk`` must not silently fall back to the
default).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model

#: Ceiling of the ``max_query_chars`` setting, and its default.
MAX_QUERY_CHARS = 10_000
DEFAULT_MAX_QUERY_CHARS = 2000
#: Ceiling of the ``max_top_k`` setting, and its default.
MAX_TOP_K = 1000
DEFAULT_MAX_TOP_K = 100
#: ``top_k`` when the request has none (or ``max_top_k`` when that is lower).
DEFAULT_TOP_K = 10
MAX_LANE_CHARS = 128
#: Some character that is not whitespace (exactly the complement of ``str.isspace``), written
#: out so that pydantic, JSON Schema validators and test generators agree on it.
NON_BLANK = r"[^\t-\r\x1c- \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"

Mode = Literal["dense", "lexical", "hybrid"]
Weight = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False, strict=True)]


def query_field(max_chars: int) -> Any:
    return Field(
        min_length=1,
        max_length=max_chars,
        pattern=NON_BLANK,
        description=f"Query text: 1 to {max_chars} characters, not only whitespace.",
    )


def _integral_float_to_int(value: Any) -> Any:
    """``5.0`` is the integer 5 in JSON (and JSON Schema's ``integer``); ``5.5`` stays a float
    and is refused by the strict check, as are ``"5"`` and ``true``."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


_INTEGRAL = BeforeValidator(_integral_float_to_int)


def top_k_field(max_top_k: int) -> Any:
    return Field(
        ge=1,
        le=max_top_k,
        strict=True,
        description=f"Number of results, an integer from 1 to {max_top_k}.",
    )


class SearchRequest(BaseModel):
    """The body of ``POST /search`` within the ceilings; apps use :func:`search_request_model`."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        strict=True,
        json_schema_extra={
            "examples": [{"q": "Which ocean is the largest?", "top_k": 5, "lane": "L1_FACTOID"}]
        },
    )

    q: Annotated[str, query_field(MAX_QUERY_CHARS)]
    top_k: Annotated[int, top_k_field(MAX_TOP_K), _INTEGRAL] = DEFAULT_TOP_K
    lane: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=MAX_LANE_CHARS,
            description="Only documents of this lane (and documents without one).",
        ),
    ] = None
    mode: Annotated[Mode | None, Field(description="Default: the server's mode.")] = None
    w_cos: Annotated[Weight | None, Field(description="Weight of the relevance score.")] = None
    w_quality: Annotated[Weight | None, Field(description="Weight of the quality.")] = None


def search_request_model(max_query_chars: int, max_top_k: int) -> type[SearchRequest]:
    """The request model with an app's own limits (both at most the ceilings above)."""
    if not 1 <= max_query_chars <= MAX_QUERY_CHARS or not 1 <= max_top_k <= MAX_TOP_K:
        raise ValueError(f"limits ({max_query_chars}, {max_top_k}) are outside the ceilings")
    model = create_model(
        "SearchRequest",
        __base__=SearchRequest,
        __module__=__name__,
        q=(Annotated[str, query_field(max_query_chars)], ...),
        top_k=(
            Annotated[int, top_k_field(max_top_k), _INTEGRAL],
            min(DEFAULT_TOP_K, max_top_k),
        ),
    )
    model.__doc__ = "The body of ``POST /search``."
    return model


class Error(BaseModel):
    """Every error the API answers: a stable code and a human-readable message."""

    error: str = Field(
        description="invalid_request, invalid_json, unauthorized, too_large, not_ready, "
        "not_found or method_not_allowed."
    )
    detail: str


class SearchItem(BaseModel):
    id: str
    doc_id: str
    score: float
    quality: float
    final_score: float
    concept_text: str
    tmd_code: str | None = None
    lane_index: int | None = None


class SearchResponse(BaseModel):
    lane: str | None
    mode: Literal["DENSE", "LEXICAL", "HYBRID"]
    items: list[SearchItem]
    trace_id: str


class Health(BaseModel):
    ready: bool
    source: Literal["topics", "artifacts"]
    index_size: int
    index_kind: str
    quality_rows: int
    consumer_lag: int
    default_mode: str
    weights: dict[str, float]
    embedder: str
    index: dict[str, int | str]
    #: The query-vector cache: hits, misses, entries, capacity.
    query_cache: dict[str, int]
    #: The version of what embeds queries (the int8 encoder's, or ``embedder`` itself).
    query_encoder: str = ""
    #: The query micro-batcher: queries, passes, mean and largest batch, passes by size
    #: (None when batching is off or the embedder cannot batch).
    query_batches: dict[str, Any] | None = None
    #: Why the topic follower is not following, while it reconnects (None otherwise).
    error: str | None = None


class StageLatency(BaseModel):
    """Milliseconds over the stage's window; only ``count`` while the window is empty."""

    count: int
    p50_ms: float | None = None
    p90_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None
    mean_ms: float | None = None


class LatencySummary(BaseModel):
    request: StageLatency
    embed: StageLatency
    retrieve: StageLatency
    blend: StageLatency
    search: StageLatency
