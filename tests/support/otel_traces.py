"""RAG traces as an OpenInference-instrumented app sends them: the OpenTelemetry SDK's OTLP/HTTP
exporter, a CHAIN root with the question, a RETRIEVER span with two documents and an LLM span
with its messages. Shared by the ingest test and ``bench/trace_membership.py``."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import httpx
import orjson

if TYPE_CHECKING:
    from tests.support.reliability import OutputCollector


def send_traces(url: str, first: int, count: int) -> list[tuple[str, str, str, list[str]]]:
    """Traces ``first`` .. through the SDK's exporter; returns (trace id, query, answer,
    contexts) of each."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(
        resource=Resource.create({"service.name": "rag-app", "tenant.id": "t9"})
    )
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    tracer = provider.get_tracer("rag-app")
    sent = []
    for i in range(first, first + count):
        query = f"Which river is longer, question {i}?"
        docs = [f"The Nile is 6,650 km long ({i}).", f"The Amazon is 6,400 km long ({i})."]
        answer = f"The Nile is longer ({i})."
        with tracer.start_as_current_span("rag") as root:
            root.set_attribute("openinference.span.kind", "CHAIN")
            root.set_attribute("input.value", query)
            with tracer.start_as_current_span("retrieve") as retriever:
                retriever.set_attribute("openinference.span.kind", "RETRIEVER")
                for n, doc in enumerate(docs):
                    retriever.set_attribute(f"retrieval.documents.{n}.document.content", doc)
            with tracer.start_as_current_span("llm") as llm:
                llm.set_attribute("openinference.span.kind", "LLM")
                llm.set_attribute("llm.model_name", "gpt-standin")
                llm.set_attribute("input.value", query)
                llm.set_attribute("llm.input_messages.0.message.role", "user")
                llm.set_attribute("llm.input_messages.0.message.content", query)
                llm.set_attribute("llm.output_messages.0.message.role", "assistant")
                llm.set_attribute("llm.output_messages.0.message.content", answer)
                llm.set_attribute("output.value", answer)
            trace_id = format(root.get_span_context().trace_id, "032x")
        sent.append((trace_id, query, answer, docs))
    provider.force_flush()
    provider.shutdown()
    return sent


def wait_healthy(url: str) -> None:
    for _ in range(150):
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError("ingest did not come up")


def traced_ids(out: OutputCollector, kind: str | None = None) -> set[str]:
    """Trace ids carried by the verdicts collected (of ``kind`` only, when given)."""
    return {
        v["trace_id"] for v in map(orjson.loads, (x[0] for x in out.verdicts.values()))
        if v.get("trace_id") and kind in (None, v["kind"])
    }  # fmt: skip


def big_rag_trace(trace_id: str, passages: int = 12, passage_chars: int = 180_000) -> bytes:
    """The hardening probe's trace as OTLP protobuf (issue 40): a root span, ``passages``
    retriever spans of ``passage_chars`` characters each (every one under each documented
    limit), and an LLM span; ~2 MB in all, more than one record can hold."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    trace = bytes.fromhex(trace_id)

    def add(n: int, **attributes: str) -> None:
        span = spans.add(trace_id=trace, span_id=n.to_bytes(8, "big"), name=f"s{n}")
        if n != 1:
            span.parent_span_id = (1).to_bytes(8, "big")
        span.start_time_unix_nano, span.end_time_unix_nano = n, n + 100
        for key, value in attributes.items():
            span.attributes.append(KeyValue(key=key, value=AnyValue(string_value=value)))

    add(1, **{"openinference.span.kind": "CHAIN", "input.value": "Which drug lowers fever?"})
    for n in range(2, passages + 2):
        text = f"Passage {n}: aspirin lowers fever. " + "filler " * (passage_chars // 7)
        add(n, **{"openinference.span.kind": "RETRIEVER",
                  "retrieval.documents.0.document.content": text})  # fmt: skip
    add(
        passages + 10, **{"openinference.span.kind": "LLM", "output.value": "Aspirin lowers fever."}
    )
    return bytes(request.SerializeToString())
