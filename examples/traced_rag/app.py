"""A small RAG application, instrumented as users instrument theirs: OpenInference's OpenAI
instrumentation for the model call, an OpenInference RETRIEVER span for the retrieval, and the
OpenTelemetry SDK's OTLP/HTTP exporter pointed at ``verdictflow ingest``. Nothing in it knows
about verdictflow: its traces come out as answer events, then verdicts (on the console).

With ``--gate`` it also checks each answer before showing it (``POST /v1/check``, the inline
gate, docs/gate.md): an answer the gate does not pass is replaced by a refusal. The gate is told
``queue=false``, as the trace already brings the answer in.

    verdictflow ingest &                        # http://127.0.0.1:4318
    OPENAI_BASE_URL=http://localhost:8000/v1 OPENAI_API_KEY=... \\
        python examples/traced_rag/app.py --ingest http://127.0.0.1:4318 --model my-model

The retriever is a keyword match over a few passages (the point is the trace, not the search).
"""

from __future__ import annotations

import argparse
import os

import httpx
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from openinference.semconv.trace import (
    DocumentAttributes,
    OpenInferenceSpanKindValues,
    SpanAttributes,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

PASSAGES = [
    "The Nile is about 6,650 km long; the Amazon is about 6,400 km long.",
    "Marie Curie won the Nobel Prize in Physics in 1903 and in Chemistry in 1911.",
    "Acme Corp acquired Globex in 2019 for 3 billion dollars.",
]
QUESTIONS = [
    "Which river is longer, the Nile or the Amazon?",
    "When did Marie Curie win her first Nobel Prize?",
    "Who acquired Globex?",
]


def retrieve(question: str) -> list[str]:
    words = {w.strip("?,.").lower() for w in question.split() if len(w) > 3}
    return [p for p in PASSAGES if words & {w.strip(",.;").lower() for w in p.split()}]


def gate(ingest: str, question: str, answer: str, documents: list[str]) -> tuple[str, list[str]]:
    """The gate's decision on ``answer`` and why, from ``POST /v1/check`` (lexical kinds, within
    50 ms); a gate that cannot be reached does not pass the answer (fail closed)."""
    event = {"id": os.urandom(8).hex(), "query": question, "answer": answer, "contexts": documents}
    headers = {"content-type": "application/json"}
    if token := os.environ.get("VERDICTFLOW_INGEST_TOKEN"):
        headers["authorization"] = f"Bearer {token}"
    try:
        reply = httpx.post(
            f"{ingest}/v1/check", params={"timeout_ms": 50, "queue": "false"},
            json=event, headers=headers, timeout=2.0,
        )  # fmt: skip
        reply.raise_for_status()
    except httpx.HTTPError as exc:
        return "DEFER", [f"gate unreachable: {exc}"]
    body = reply.json()
    why = [f"{v['kind']} {v['decision']} ({v['reasons'][0]['code']})" for v in body["verdicts"]]
    return body["decision"], why


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ingest", default="http://127.0.0.1:4318")
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--tenant", default="example")
    parser.add_argument("--gate", action="store_true", help="check each answer before showing it")
    args = parser.parse_args()
    provider = TracerProvider(
        resource=Resource.create({"service.name": "traced-rag", "tenant.id": args.tenant})
    )
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{args.ingest}/v1/traces"))
    )
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer("traced-rag")
    client = OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY from the environment
    for question in QUESTIONS:
        with tracer.start_as_current_span("rag") as root:
            root.set_attribute(
                SpanAttributes.OPENINFERENCE_SPAN_KIND, OpenInferenceSpanKindValues.CHAIN.value
            )
            root.set_attribute(SpanAttributes.INPUT_VALUE, question)
            with tracer.start_as_current_span("retrieve") as span:
                span.set_attribute(
                    SpanAttributes.OPENINFERENCE_SPAN_KIND,
                    OpenInferenceSpanKindValues.RETRIEVER.value,
                )
                documents = retrieve(question)
                for i, text in enumerate(documents):
                    prefix = f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.{i}"
                    span.set_attribute(f"{prefix}.{DocumentAttributes.DOCUMENT_CONTENT}", text)
            context = "\n".join(documents)
            reply = client.chat.completions.create(
                model=args.model,
                messages=[
                    {"role": "system", "content": f"Answer from this context:\n{context}"},
                    {"role": "user", "content": question},
                ],
            )
            answer = reply.choices[0].message.content or ""
            root.set_attribute(SpanAttributes.OUTPUT_VALUE, answer)
            if args.gate:
                decision, why = gate(args.ingest, question, answer, documents)
                print(f"gate: {decision}: {'; '.join(why)}")
                if decision != "PASS":
                    answer = "I cannot answer that reliably from the sources I have."
            print(f"{question} -> {answer}")
    provider.force_flush()
    provider.shutdown()


if __name__ == "__main__":
    main()
