"""Request and response bodies of the API (pydantic v2), in the spec's shape.

Limits are enforced here so that every malformed request is a 422 with a message that names the
field: the query must have a non-blank text of at most ``MAX_QUERY_CHARS`` characters (the
service's own ``max_query_chars`` setting may be lower), ``top_k`` is 1..``MAX_TOP_K``, weights
are in [0, 1], and unknown fields are refused (a typo such as ``topk`` must not silently fall
back to the default).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_QUERY_CHARS = 10_000
MAX_TOP_K = 1000

Weight = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    q: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
    top_k: Annotated[int, Field(ge=1, le=MAX_TOP_K, strict=True)] = 10
    lane: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    mode: Literal["dense", "lexical", "hybrid"] | None = None
    w_cos: Weight | None = None
    w_quality: Weight | None = None

    @field_validator("q")
    @classmethod
    def _has_text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("q must contain some non-whitespace text")
        return value


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
