"""Traffic in: spans per second through ``verdictflow ingest`` (one process, OTLP/HTTP
protobuf in, spans produced to the embedded broker), next to a raw aiokafka produce loop of the
same span records in the same run; and traces per second assembled by one worker.

Each trace is a RAG request as OpenInference instrumentations write it: a CHAIN root, a
RETRIEVER with two documents, an LLM span with its messages (three spans, ~1.5 KB). Requests
carry ``--batch`` traces each, as the SDK's batch span processor sends them.

    python bench/ingest_throughput.py [--traces 2000] [--batch 64]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import tempfile
import time
from pathlib import Path

import httpx
import orjson
from harness import fresh_settings, machine, run_process, worker_cmd
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from verdictflow.dev_servers import start_server, stop_server
from verdictflow.ingest.otlp import spans_of
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.broker import EmbeddedBroker
from verdictflow.streams.replay import make_producer
from verdictflow.streams.tail import tail

NILE = "The Nile is 6,650 km long. " * 8
AMAZON = "The Amazon is 6,400 km long. " * 8


def kv(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def trace(rng: random.Random, i: int) -> list[Span]:
    trace_id = rng.randbytes(16)
    root, retriever, llm = (rng.randbytes(8) for _ in range(3))
    q = f"Which river is longer, question {i}?"
    t = 1_700_000_000_000_000_000 + i * 1_000_000
    return [
        Span(trace_id=trace_id, span_id=root, name="rag", start_time_unix_nano=t,
             end_time_unix_nano=t + 900, attributes=[kv("openinference.span.kind", "CHAIN"),
                                                     kv("input.value", q)]),
        Span(trace_id=trace_id, span_id=retriever, parent_span_id=root, name="retrieve",
             start_time_unix_nano=t + 10, end_time_unix_nano=t + 100,
             attributes=[kv("openinference.span.kind", "RETRIEVER"),
                         kv("retrieval.documents.0.document.content", NILE),
                         kv("retrieval.documents.1.document.content", AMAZON)]),
        Span(trace_id=trace_id, span_id=llm, parent_span_id=root, name="llm",
             start_time_unix_nano=t + 200, end_time_unix_nano=t + 800,
             attributes=[kv("openinference.span.kind", "LLM"), kv("llm.model_name", "m"),
                         kv("llm.input_messages.0.message.role", "user"),
                         kv("llm.input_messages.0.message.content", q),
                         kv("llm.output_messages.0.message.role", "assistant"),
                         kv("llm.output_messages.0.message.content", "The Nile is longer.")]),
    ]  # fmt: skip


def requests(traces: int, batch: int) -> list[bytes]:
    rng = random.Random(1)
    bodies = []
    for start in range(0, traces, batch):
        spans = [s for i in range(start, min(traces, start + batch)) for s in trace(rng, i)]
        request = ExportTraceServiceRequest(
            resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])]
        )
        bodies.append(request.SerializeToString())
    return bodies


async def raw_loop(settings, bodies: list[bytes]) -> float:
    """The same span records produced by a bare aiokafka producer (decoding included)."""
    topic = settings.topic_prefix + "internal.spans"
    producer = make_producer(settings, settings.max_event_bytes)
    await producer.start()
    started = time.perf_counter()
    for body in bodies:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        futures = [
            await producer.send(topic, key=s.trace_id.encode(), value=orjson.dumps(s.model_dump()))
            for s in spans_of(request).spans
        ]
        await asyncio.gather(*futures)
    took = time.perf_counter() - started
    await producer.stop()
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    print(f"machine: {machine()} | load {os.getloadavg()[0]:.2f}")
    bodies = requests(args.traces, args.batch)
    spans = 3 * args.traces
    with (
        tempfile.TemporaryDirectory() as tmp,
        EmbeddedBroker(log_path=Path(tmp) / "b.log") as broker,
    ):
        settings = fresh_settings(broker.url, Path(tmp), "embedded", 4)
        asyncio.run(ensure_topics(settings))
        raw_s = asyncio.run(raw_loop(settings, bodies))
        settings = fresh_settings(broker.url, Path(tmp), "embedded", 4).model_copy(
            update={"trace_quiet_seconds": 0.5}
        )
        env = {
            **os.environ,
            **{f"VERDICTFLOW_{k.upper()}": str(v)
               for k, v in settings.model_dump(exclude_none=True).items()},
        }  # fmt: skip
        proc, url = start_server(["ingest"], env, Path(tmp) / "ingest.log")
        try:
            for _ in range(150):
                try:
                    if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.2)
            started = time.perf_counter()
            with httpx.Client(timeout=60) as client:
                for body in bodies:
                    r = client.post(f"{url}/v1/traces", content=body,
                                    headers={"content-type": "application/x-protobuf"})  # fmt: skip
                    r.raise_for_status()
            ingest_s = time.perf_counter() - started
        finally:
            stop_server(proc)
        worker = run_process(worker_cmd("lexical"), settings, Path(tmp) / "worker.log")
        try:
            assemble_s = asyncio.run(count_answers(settings, args.traces))
        finally:
            worker.terminate()
            worker.wait(30)
    print(f"{args.traces} traces ({spans} spans) in requests of {args.batch} traces")
    print(
        f"ingest          : {spans / ingest_s:8.0f} spans/s ({args.traces / ingest_s:.0f} traces/s)"
    )
    print(f"raw aiokafka    : {spans / raw_s:8.0f} spans/s (decode + produce, no HTTP): "
          f"ingest at {raw_s / ingest_s:.2f}x")  # fmt: skip
    print(f"one worker      : {args.traces / assemble_s:8.0f} traces/s assembled into answer "
          f"events (first to last answer event, {assemble_s:.1f} s)")  # fmt: skip


async def count_answers(settings, want: int) -> float:
    """Seconds from the first answer event to the ``want``-th (the worker's start excluded)."""
    seen = 0
    first = 0.0
    async for _ in tail(["answers"], settings, from_beginning=True, timeout=120):
        seen += 1
        if seen == 1:
            first = time.perf_counter()
        if seen >= want:
            return time.perf_counter() - first
    raise SystemExit(f"only {seen} of {want} answer events")


if __name__ == "__main__":
    main()
