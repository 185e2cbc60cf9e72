"""``verdictflow ingest`` hardened (issue 40), through the real app in process with a recording
producer: span caps with OTLP ``partial_success`` and a reply within seconds, every gzip
member decoded or trailing data refused, deep OTLP/JSON refused as ``invalid_otlp``, NDJSON
refused per line, ``/v1/answers`` for JSON types only, and the Host header checked."""

from __future__ import annotations

import asyncio
import gzip
import time

import httpx
import orjson
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from verdictflow.ingest.app import MAX_SPANS_PER_REQUEST, MAX_SPANS_PER_TRACE, create_ingest_app
from verdictflow.settings import Settings
from verdictflow.web.listeners import host_checked


class RecordingProducer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, bytes]] = []

    async def send(self, topic: str, value: bytes, key: bytes) -> asyncio.Future[None]:
        self.sent.append((topic, key, value))
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done


def post(
    path: str, body: bytes, headers: dict[str, str], host: str = "127.0.0.1"
) -> tuple[httpx.Response, RecordingProducer]:
    producer = RecordingProducer()
    app = create_ingest_app(Settings(broker="kafka://127.0.0.1:1"), token=None)
    app.state.producer = producer

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=host_checked(app, "127.0.0.1"))
        async with httpx.AsyncClient(transport=transport, base_url=f"http://{host}") as client:
            return await client.post(path, content=body, headers=headers, timeout=60)

    return asyncio.run(go()), producer


def spans_request(traces: int, spans_per_trace: int) -> bytes:
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    for t in range(traces):
        for n in range(spans_per_trace):
            span = spans.add(
                trace_id=(t + 1).to_bytes(16, "big"), span_id=(n + 1).to_bytes(8, "big")
            )
            span.attributes.append(
                KeyValue(key="openinference.span.kind", value=AnyValue(string_value="LLM"))
            )
    return bytes(request.SerializeToString())


PROTOBUF = {"content-type": "application/x-protobuf"}
JSON = {"content-type": "application/json"}


def test_a_request_of_100000_spans_is_answered_within_seconds_with_partial_success() -> None:
    started = time.monotonic()
    reply, producer = post("/v1/traces", spans_request(100, 1000), PROTOBUF)
    took = time.monotonic() - started
    assert reply.status_code == 200
    answer = ExportTraceServiceResponse()
    answer.ParseFromString(reply.content)
    assert len(producer.sent) == MAX_SPANS_PER_REQUEST
    assert answer.partial_success.rejected_spans == 100_000 - MAX_SPANS_PER_REQUEST
    assert "spans in one request" in answer.partial_success.error_message
    print(f"100,000 spans answered in {took:.2f} s")
    assert took < 30


def test_spans_past_the_per_trace_cap_are_rejected() -> None:
    reply, producer = post("/v1/traces", spans_request(1, MAX_SPANS_PER_TRACE + 5), PROTOBUF)
    answer = ExportTraceServiceResponse()
    answer.ParseFromString(reply.content)
    assert (len(producer.sent), answer.partial_success.rejected_spans) == (MAX_SPANS_PER_TRACE, 5)


def test_every_gzip_member_is_decoded_and_trailing_data_refused() -> None:
    line = orjson.dumps({"id": "a", "answer": "Paris.", "contexts": ["Paris."]})
    line2 = orjson.dumps({"id": "b", "answer": "Paris.", "contexts": ["Paris."]})
    two = gzip.compress(line + b"\n") + gzip.compress(line2 + b"\n")
    reply, producer = post("/v1/answers", two, {**JSON, "content-encoding": "gzip"})
    assert reply.json() == {"accepted": 2, "refused": []}
    reply, producer = post(
        "/v1/answers", gzip.compress(line) + b"garbage", {**JSON, "content-encoding": "gzip"}
    )
    assert reply.status_code == 400
    assert "trailing" in reply.json()["detail"]
    assert producer.sent == []


def test_deeply_nested_otlp_json_is_400_invalid_otlp() -> None:
    levels = 1015  # with the envelope, 1,020: orjson reads it, protobuf's parser recursed
    body = (
        b'{"resourceSpans":[{"resource":{"attributes":['
        + b'{"k":' * levels
        + b'"x"'
        + b"}" * levels
        + b"]}}]}"
    )
    assert orjson.loads(body)
    reply, _ = post("/v1/traces", body, JSON)
    assert reply.status_code == 400
    assert reply.json()["error"] == "invalid_otlp"


def test_a_bad_ndjson_line_is_refused_alone_bad_encoding_included() -> None:
    good = orjson.dumps({"id": "a", "answer": "Paris.", "contexts": ["Paris."]})
    body = good + b'\n{"id": "b", "answer": "\xff\xfe"}\n' + good.replace(b'"a"', b'"c"')
    reply, producer = post("/v1/answers", body, {"content-type": "application/x-ndjson"})
    assert reply.status_code == 200
    assert reply.json()["accepted"] == 2
    assert [r["index"] for r in reply.json()["refused"]] == [1]
    assert len(producer.sent) == 2


@pytest.mark.parametrize("separator", [b"", b"\r\n"])
def test_a_byte_order_mark_before_the_body_is_skipped(separator: bytes) -> None:
    """One object, or NDJSON from a file Notepad saved: RFC 8259 lets a parser skip the BOM
    (it refused the body, or its first line)."""
    one = orjson.dumps({"id": "a", "answer": "Paris.", "contexts": ["Paris."]})
    body = b"\xef\xbb\xbf" + one + (separator + one.replace(b'"a"', b'"b"') if separator else b"")
    reply, producer = post("/v1/answers", body, JSON)
    assert reply.status_code == 200, reply.text
    assert reply.json()["accepted"] == (2 if separator else 1)
    assert producer.sent[0][2] == one


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", ""])
def test_answers_refuse_content_types_a_web_page_can_send_without_a_preflight(
    content_type: str,
) -> None:
    body = orjson.dumps({"id": "a", "answer": "Paris.", "contexts": ["Paris."]})
    reply, producer = post("/v1/answers", body, {"content-type": content_type})
    assert reply.status_code == 415
    assert producer.sent == []


def test_a_request_for_another_host_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    body = orjson.dumps({"id": "a", "answer": "Paris.", "contexts": ["Paris."]})
    reply, producer = post("/v1/answers", body, JSON, host="attacker.example")
    assert reply.status_code == 400
    assert reply.json()["error"] == "invalid_host"
    assert producer.sent == []
    assert post("/v1/answers", body, JSON, host="localhost:4318")[0].status_code == 200
    monkeypatch.setenv("VERDICTFLOW_ALLOWED_HOSTS", "ingest.internal")
    assert post("/v1/answers", body, JSON, host="ingest.internal")[0].status_code == 200


def test_a_listener_opened_beyond_loopback_checks_host_only_when_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from verdictflow.web.listeners import allowed_hosts

    monkeypatch.delenv("VERDICTFLOW_ALLOWED_HOSTS", raising=False)
    assert allowed_hosts("0.0.0.0") is None  # service names and probe IPs reach it
    assert "localhost" in (allowed_hosts("127.0.0.1") or set())
    monkeypatch.setenv("VERDICTFLOW_ALLOWED_HOSTS", "vf.example.com")
    assert "vf.example.com" in (allowed_hosts("0.0.0.0") or set())
