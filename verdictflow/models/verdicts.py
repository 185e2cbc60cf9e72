"""The verdict record shared by every verdict kind.

Field order is the serialisation order, and every field is a pure function of the input event
and the effective configuration, so re-scoring the same input gives byte-identical JSON.
Processing latency is deliberately not a field: it travels in a Kafka record header instead.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

VERDICT_SCHEMA_VERSION = 1


class VerdictKind(StrEnum):
    """One verdict topic per kind: ``verdicts.<kind>``."""

    GROUNDEDNESS = "groundedness"
    CONSISTENCY = "consistency"
    HALLUCINATION = "hallucination"
    RELEVANCE = "relevance"
    COMPLETENESS = "completeness"
    FAITHFULNESS = "faithfulness"
    JUDGE = "judge"
    FAITHFULNESS_LLM = "faithfulness_llm"  # the judge tier's review of a faithfulness verdict
    JUDGE_LLM = "judge_llm"  # the judge tier's run of the spec-002 rubric on a summary


class Decision(StrEnum):
    """Fail-closed gate outcome: only a valid input scored at or above threshold passes."""

    PASS = "PASS"
    FAIL = "FAIL"
    DEFER = "DEFER"


class ReasonCode(StrEnum):
    """Typed reasons; a DEFER always carries one of the ``insufficient input`` codes."""

    AT_OR_ABOVE_THRESHOLD = "at_or_above_threshold"
    BELOW_THRESHOLD = "below_threshold"
    AT_OR_BELOW_THRESHOLD = "at_or_below_threshold"
    ABOVE_THRESHOLD = "above_threshold"
    EMPTY_ANSWER = "empty_answer"
    NO_CONTEXTS = "no_contexts"
    FEWER_THAN_TWO_VARIANTS = "fewer_than_two_variants"
    ALL_VARIANTS_EMPTY = "all_variants_empty"
    WINDOW_CLOSED = "window_closed"
    VARIANTS_TRUNCATED = "variants_truncated"
    NO_QUERY = "no_query"
    NO_QUERY_KEYWORDS = "no_query_keywords"
    NO_ANCHORS = "no_anchors"
    HEDGED_CLAIMS_FILTERED = "hedged_claims_filtered"
    TOPIC_DRIFT = "topic_drift"
    JUDGE_METRIC_ERROR = "judge_metric_error"
    UNSUPPORTED_DETAIL = "unsupported_detail"  # faithfulness: a made-up or misplaced fact
    WEAK_SUPPORT = "weak_support"  # faithfulness: the contexts back little of the answer
    TOO_LONG_FOR_NLP = "too_long_for_nlp"  # past the policy's per-record budget
    UNSUPPORTED_LANGUAGE = "unsupported_language"  # a script the pipelines cannot analyse
    JUDGE_OUTPUT_INVALID = "judge_output_invalid"  # the judge's reply broke the contract twice
    TOO_LONG_FOR_JUDGE = "too_long_for_judge"  # the prompt is over judge_tier.max_prompt_chars
    JUDGE_REFUSED = "judge_refused"  # the judge endpoint refused this request (400, 413, 422)
    GATE_TIMEOUT = "gate_timeout"  # the inline gate: not scored within the caller's timeout_ms
    GATE_ERROR = "gate_error"  # the inline gate: the scorer failed on this input
    PARTIAL_ANSWER = "partial_answer"  # the inline gate: scored over a streamed answer so far


class Reason(BaseModel):
    """Why a decision was taken, in a code for machines and a sentence for people."""

    model_config = ConfigDict(frozen=True)

    code: ReasonCode
    detail: str


class Verdict(BaseModel):
    """One verdict on one input (an answer, a request's variants, a summary).

    ``verdict_id`` = hash(input_id, kind, config_digest): a re-delivered input gives the same id,
    so consumers deduplicate on it. ``score`` is None only when the input could not be scored.
    """

    model_config = ConfigDict(frozen=True)

    schema_version: int = VERDICT_SCHEMA_VERSION
    verdict_id: str
    kind: VerdictKind
    input_id: str
    score: float | None
    threshold: float
    decision: Decision
    reasons: list[Reason]
    evidence: dict[str, Any]
    config_digest: str
    tokenizer_version: str
    #: Hash of the scoring packages' and model's versions (``verdictflow.environment``).
    environment_digest: str | None = None
    model: str | None = None
    tenant: str | None = None
    group: str | None = None
    event_ts: float | None = None
    #: The trace and span of an answer assembled from a trace (``verdictflow ingest``), so a
    #: tracing backend can show the verdict on the span; None otherwise.
    trace_id: str | None = None
    span_id: str | None = None


class JudgeVerdict(Verdict):
    """A summary judge's verdict (topic ``verdicts.judge``): the common verdict fields plus the
    judge's name and its five metric objects (each the spec's object or ``{"error": ...}``).

    ``score`` is the mean of the five ``overall_score`` values (0-10); None (DEFER) when any
    metric is an error object.
    """

    judge: str
    metrics: dict[str, dict[str, Any]]
