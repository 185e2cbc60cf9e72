"""OTLP/HTTP trace requests decoded once, at the edge: protobuf or JSON bodies
(``ExportTraceServiceRequest`` from ``opentelemetry-proto``) to :class:`SpanRecord`\\ s.

OTLP/JSON differs from protobuf's own JSON mapping in one place: trace and span ids are hex
strings, not base64 (the OTLP specification); they are converted before parsing. Ids of the
wrong length, or all zeros, reject their span (the OTLP reply's ``partial_success`` counts
them). Attribute values (``AnyValue``) become JSON values: strings, booleans, integers,
doubles, lists and maps; bytes become their hex.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from verdictflow.exceptions import VerdictflowError
from verdictflow.models.spans import SpanEvent, SpanRecord

#: The characters one attribute value may hold (longer texts are cut: the answer limits are
#: 200,000 characters per text, and a span must fit in one record).
MAX_VALUE_CHARS = 200_000


class OtlpDecodeError(VerdictflowError):
    """A body that is not an ExportTraceServiceRequest."""


@dataclass
class Decoded:
    spans: list[SpanRecord] = field(default_factory=list)
    rejected: int = 0
    errors: list[str] = field(default_factory=list)
    #: Spans past the request's cap (rejected unread).
    rejected_over_cap: int = 0


def parse_protobuf(body: bytes) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as exc:
        raise OtlpDecodeError(f"not an OTLP protobuf ExportTraceServiceRequest: {exc}") from None
    return request


#: Nesting an OTLP/JSON body may have: a request is ~10 levels deep plus its attribute values'
#: own nesting; protobuf's JSON parser recurses per level and raised RecursionError (a plain
#: 500) at 1,023, the most orjson reads.
MAX_JSON_DEPTH = 64


def parse_json(body: bytes) -> ExportTraceServiceRequest:
    import orjson

    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise OtlpDecodeError(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise OtlpDecodeError("an OTLP/JSON request is an object with resourceSpans")
    if _depth_over(data, MAX_JSON_DEPTH):
        raise OtlpDecodeError(f"nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        _ids_to_base64(data)
        request = ExportTraceServiceRequest()
        json_format.ParseDict(data, request, ignore_unknown_fields=True)
        return request
    except (json_format.ParseError, ValueError, TypeError) as exc:
        raise OtlpDecodeError(
            f"not an OTLP/JSON ExportTraceServiceRequest: {str(exc)[:200]}"
        ) from None


def _depth_over(data: Any, limit: int) -> bool:
    """Whether ``data`` nests deeper than ``limit`` (iterative: no recursion to exhaust)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, dict | list))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value if isinstance(v, dict | list))
    return False


def _ids_to_base64(data: Any) -> None:
    """OTLP/JSON's hex ids to the base64 protobuf's JSON mapping expects, in place."""
    if isinstance(data, dict):
        for key in ("traceId", "spanId", "parentSpanId"):
            value = data.get(key)
            if isinstance(value, str) and value:
                try:
                    data[key] = base64.b64encode(bytes.fromhex(value)).decode()
                except ValueError:
                    raise ValueError(f"{key} {value[:40]!r} is not hex") from None
        for value in data.values():
            _ids_to_base64(value)
    elif isinstance(data, list):
        for value in data:
            _ids_to_base64(value)


def spans_of(
    request: ExportTraceServiceRequest,
    max_spans: int | None = None,
    max_per_trace: int | None = None,
) -> Decoded:
    """Every span of the request with its resource's attributes; bad ids reject their span,
    and so do spans past ``max_spans`` in the request or ``max_per_trace`` of one trace (left
    unread: a request of 100,000 spans is answered in about a second)."""
    out = Decoded()
    per_trace: dict[bytes, int] = {}
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                if max_spans is not None and len(out.spans) >= max_spans:
                    if not out.rejected_over_cap:  # one message, however many spans
                        out.errors.append(f"more than {max_spans} spans in one request")
                    out.rejected += 1
                    out.rejected_over_cap += 1
                    continue
                problem = _id_problem(span.trace_id, 16, "trace_id") or _id_problem(
                    span.span_id, 8, "span_id"
                )
                if not problem and max_per_trace is not None:
                    seen = per_trace[span.trace_id] = per_trace.get(span.trace_id, 0) + 1
                    if seen > max_per_trace:
                        problem = f"more than {max_per_trace} spans of one trace in one request"
                if problem:
                    out.rejected += 1
                    out.errors.append(problem)
                    continue
                out.spans.append(
                    SpanRecord(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex() or None,
                        name=span.name[:256],
                        start_unix_nano=span.start_time_unix_nano,
                        end_unix_nano=span.end_time_unix_nano,
                        attributes=attributes(span.attributes),
                        events=[
                            SpanEvent(
                                name=e.name[:256],
                                time_unix_nano=e.time_unix_nano,
                                attributes=attributes(e.attributes),
                            )
                            for e in span.events
                        ],
                        resource=resource,
                    )
                )
    return out


def response(decoded: Decoded, json: bool) -> bytes:
    """The OTLP reply: ``partial_success`` when spans were rejected."""
    reply = ExportTraceServiceResponse()
    if decoded.rejected:
        reply.partial_success.rejected_spans = decoded.rejected
        reply.partial_success.error_message = "; ".join(sorted(set(decoded.errors)))[:500]
    if json:
        text: str = json_format.MessageToJson(reply, indent=None)
        return text.encode()
    serialised: bytes = reply.SerializeToString()
    return serialised


def _id_problem(value: bytes, size: int, name: str) -> str | None:
    if len(value) != size:
        return f"{name} of {len(value)} bytes, expected {size}"
    if not any(value):
        return f"{name} is all zeros"
    return None


def attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key[:256]: _value(kv.value) for kv in pairs}


def _value(value: Any) -> Any:
    which = value.WhichOneof("value")
    if which == "string_value":
        return value.string_value[:MAX_VALUE_CHARS]
    if which == "bool_value":
        return value.bool_value
    if which == "int_value":
        return value.int_value
    if which == "double_value":
        return value.double_value
    if which == "array_value":
        return [_value(v) for v in value.array_value.values[:1000]]
    if which == "kvlist_value":
        return {kv.key[:256]: _value(kv.value) for kv in value.kvlist_value.values[:1000]}
    if which == "bytes_value":
        return value.bytes_value.hex()[:MAX_VALUE_CHARS]
    return None
