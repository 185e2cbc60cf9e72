"""Spans as ``verdictflow ingest`` writes them to ``internal.spans`` (keyed by trace id), and
the close ticks the trace assembler sends itself on the same topic.

A span keeps what assembly reads: ids, name, times, attributes (OTLP ``AnyValue``s as JSON
values; OpenInference's flattened keys such as ``llm.input_messages.0.message.content`` stay as
they are), events (the GenAI conventions may carry messages there) and its resource's
attributes (where a tenant may be).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: Hex trace and span ids, as OTLP/JSON writes them.
TraceId = str
SpanId = str


class SpanEvent(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    name: str
    time_unix_nano: int = 0
    attributes: dict[str, Any] = {}


class SpanRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    t: Literal["span"] = "span"
    trace_id: TraceId = Field(min_length=32, max_length=32)
    span_id: SpanId = Field(min_length=16, max_length=16)
    parent_span_id: SpanId | None = None
    name: str = ""
    start_unix_nano: int = 0
    end_unix_nano: int = 0
    attributes: dict[str, Any] = {}
    events: list[SpanEvent] = []
    resource: dict[str, Any] = {}

    @property
    def is_root(self) -> bool:
        return not self.parent_span_id


class CloseTick(BaseModel):
    """Sent by the assembler's timer, keyed by the trace: assemble it now (its quiet period
    passed, or it reached the maximum age)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    t: Literal["close"] = "close"
    trace_id: TraceId
    #: ``forget``: drop an assembled trace's entry once its retention is over.
    reason: Literal["quiet", "max_age", "forget"] = "quiet"
