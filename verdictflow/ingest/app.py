"""``verdictflow ingest``: traffic in without code changes (issue 30).

- ``POST /v1/traces``: an OTLP/HTTP trace receiver (protobuf ``application/x-protobuf`` or
  ``application/json``, ``Content-Encoding: gzip`` accepted). The spans assembly needs (root
  spans, and OpenInference or GenAI LLM, retriever and reranker spans) go to
  ``internal.spans`` keyed by trace id; others are ignored and counted. The reply is the OTLP
  ``ExportTraceServiceResponse`` in the request's encoding, with ``partial_success`` naming
  rejected spans (bad ids, too large).
- ``POST /v1/answers``: answer events as one JSON object, a JSON array, or NDJSON; each valid
  one goes to ``answers`` keyed by ``request_id`` (else ``id``), as sent; the reply says how
  many were accepted and why any were refused.
- ``GET /healthz`` (open), ``GET /metrics``.

It validates and produces, and replies once the broker has the records (acks=all): it never
waits on scoring. The API's guard applies (a token when configured: ``VERDICTFLOW_INGEST_TOKEN``,
else ``VERDICTFLOW_API_TOKEN``; a body limit, 16 MiB by default, decompressed bodies
included) and its error shape (``{"error", "detail"}``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import logging
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
from aiokafka import AIOKafkaProducer
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CollectorRegistry, Counter, generate_latest
from pydantic import ValidationError

from verdictflow.ingest.otlp import OtlpDecodeError, parse_json, parse_protobuf, response, spans_of
from verdictflow.models.events import AnswerEvent
from verdictflow.pipelines.traces import keep
from verdictflow.settings import Settings
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.replay import make_producer
from verdictflow.streams.topics import ANSWERS, SPANS
from verdictflow.web.errors import install_error_handlers
from verdictflow.web.security import ApiGuard

logger = logging.getLogger(__name__)

PROTOBUF = "application/x-protobuf"
GZIP_MAGIC = b"\x1f\x8b"
#: Content types ``/v1/answers`` takes: JSON and NDJSON only, so that a web page cannot post
#: events to a loopback ingest with a "simple" (preflight-free) ``text/plain`` or form request.
ANSWER_CONTENT_TYPES = frozenset(
    {"application/json", "application/x-ndjson", "application/ndjson", "application/jsonl",
     "application/x-jsonlines"}
)  # fmt: skip
#: Spans taken from one request at most, and per trace per request (the trace assembler keeps
#: 1,000 spans per trace); the rest are rejected in the reply's ``partial_success``, unread.
MAX_SPANS_PER_REQUEST = 10_000
MAX_SPANS_PER_TRACE = 1_000


class IngestMetrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.spans = Counter(
            "vf_ingest_spans", "Spans received, by outcome (kept, ignored, rejected)",
            ["outcome"], registry=r,
        )  # fmt: skip
        self.answers = Counter(
            "vf_ingest_answers", "Answer events posted, by outcome (accepted, refused)",
            ["outcome"], registry=r,
        )  # fmt: skip
        self.requests = Counter(
            "vf_ingest_requests", "Requests by endpoint and status", ["endpoint", "status"],
            registry=r,
        )  # fmt: skip


def _error(status: int, code: str, detail: str) -> JSONResponse:
    return JSONResponse({"error": code, "detail": detail}, status_code=status)


def _body(raw: bytes, encoding: str | None, limit: int) -> bytes:
    """The body, gunzipped when it says so, refused past ``limit`` bytes uncompressed.

    Every gzip member is decoded (RFC 1952 allows several, concatenated; ``gzip.decompress``
    reads them all, and so does this), within one limit for all of them together; bytes after
    the last member that are not another member are refused (``ValueError``), never ignored.
    """
    if (encoding or "").lower() not in ("gzip", "x-gzip"):
        return raw
    out = bytearray()
    rest = raw
    while True:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out += inflater.decompress(rest, limit + 1 - len(out))
        except zlib.error as exc:
            raise ValueError(f"not gzip: {exc}") from None
        if len(out) > limit or inflater.unconsumed_tail:
            raise OverflowError(f"more than {limit} bytes once decompressed")
        if not inflater.eof:
            raise ValueError("not gzip: the stream ends inside a member")
        rest = inflater.unused_data
        if not rest:
            return bytes(out)
        if not rest.startswith(GZIP_MAGIC):
            raise ValueError(f"not gzip: {len(rest)} bytes of trailing data after the last member")


def create_ingest_app(
    settings: Settings,
    *,
    token: str | None,
    max_body_bytes: int = 16 * 1024 * 1024,
    producer: AIOKafkaProducer | None = None,
) -> FastAPI:
    """The receiver; ``producer`` lets tests and benches hand in their own."""
    metrics = IngestMetrics()
    spans_topic = settings.topic_prefix + SPANS
    answers_topic = settings.topic_prefix + ANSWERS

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await ensure_topics(settings, [SPANS, ANSWERS])
        own = producer is None
        app.state.producer = producer or make_producer(settings, settings.max_event_bytes)
        if own:
            await app.state.producer.start()
        try:
            yield
        finally:
            if own:
                await app.state.producer.stop()

    app = FastAPI(title="verdictflow ingest", lifespan=lifespan, docs_url=None, redoc_url=None)
    install_error_handlers(app)
    app.add_middleware(
        ApiGuard,
        token=token,
        max_body_bytes=max_body_bytes,
        open_paths=frozenset({"/healthz"}),
    )

    async def send_all(records: list[tuple[str, bytes, bytes]]) -> None:
        """Produce and wait until the broker has every record (acks=all)."""
        prod: AIOKafkaProducer = app.state.producer
        futures = [await prod.send(topic, value=value, key=key) for topic, key, value in records]
        if futures:
            await asyncio.gather(*futures)

    @app.post("/v1/traces")
    async def traces(request: Request) -> Response:
        content_type = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
        json = content_type == "application/json"
        if not json and content_type != PROTOBUF:
            metrics.requests.labels("traces", "415").inc()
            return _error(415, "unsupported_media_type", f"send {PROTOBUF} or application/json")
        try:
            body = _body(
                await request.body(), request.headers.get("content-encoding"), max_body_bytes
            )
            decoded = spans_of(
                parse_json(body) if json else parse_protobuf(body),
                max_spans=MAX_SPANS_PER_REQUEST,
                max_per_trace=MAX_SPANS_PER_TRACE,
            )
        except OverflowError as exc:
            metrics.requests.labels("traces", "413").inc()
            return _error(413, "too_large", str(exc))
        except (OtlpDecodeError, ValueError) as exc:
            metrics.requests.labels("traces", "400").inc()
            return _error(400, "invalid_otlp", str(exc)[:300])
        records = []
        for span in decoded.spans:
            if not keep(span):
                metrics.spans.labels("ignored").inc()
                continue
            value = orjson.dumps(span.model_dump(mode="json"))
            if len(value) > settings.max_event_bytes:
                decoded.rejected += 1
                decoded.errors.append(f"span over {settings.max_event_bytes} bytes")
                continue
            records.append((spans_topic, span.trace_id.encode(), value))
        metrics.spans.labels("rejected").inc(decoded.rejected)
        await send_all(records)
        metrics.spans.labels("kept").inc(len(records))
        metrics.requests.labels("traces", "200").inc()
        return Response(
            response(decoded, json), media_type="application/json" if json else PROTOBUF
        )

    @app.post("/v1/answers")
    async def answers(request: Request) -> Response:
        content_type = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
        if content_type not in ANSWER_CONTENT_TYPES:
            metrics.requests.labels("answers", "415").inc()
            return _error(
                415, "unsupported_media_type", "send application/json or application/x-ndjson"
            )
        try:
            body = _body(
                await request.body(), request.headers.get("content-encoding"), max_body_bytes
            )
        except OverflowError as exc:
            return _error(413, "too_large", str(exc))
        except ValueError as exc:
            return _error(400, "invalid_body", str(exc))
        items, problem = _items(body)
        if problem is not None:
            metrics.requests.labels("answers", "400").inc()
            return _error(400, "invalid_json", problem)
        records = []
        refused: list[dict[str, Any]] = []
        for index, item in enumerate(items):
            if isinstance(item, LineError):
                refused.append({"index": index, "error": item.error})
                continue
            try:
                event = AnswerEvent.model_validate(item)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "event"
                refused.append({"index": index, "error": f"{where}: {first['msg']}"[:300]})
                continue
            value = orjson.dumps(item)
            if len(value) > settings.max_event_bytes:
                refused.append({"index": index, "error": f"over {settings.max_event_bytes} bytes"})
                continue
            records.append((answers_topic, event.group_key.encode(), value))
        await send_all(records)
        metrics.answers.labels("accepted").inc(len(records))
        metrics.answers.labels("refused").inc(len(refused))
        status = 200 if records or not refused else 422
        metrics.requests.labels("answers", str(status)).inc()
        return JSONResponse({"accepted": len(records), "refused": refused}, status_code=status)

    @app.get("/healthz")
    async def healthz() -> Response:
        return JSONResponse({"ready": True})

    @app.get("/metrics")
    async def metrics_page() -> Response:
        return Response(generate_latest(metrics.registry), media_type="text/plain; version=0.0.4")

    app.state.metrics = metrics
    return app


@dataclass(frozen=True)
class LineError:
    """An NDJSON line that is not a JSON value: refused alone, as a schema error is."""

    error: str


def _items(body: bytes) -> tuple[list[Any], str | None]:
    """One JSON object, a JSON array of them, or NDJSON (one object per line). A body that is
    neither refuses the request; in NDJSON a bad line (invalid UTF-8 included) is refused
    alone, its index counted among the lines that are not blank."""
    text = body.strip()
    if not text:
        return [], "empty body"
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) < 2:
            return [], "not JSON, and not NDJSON (one JSON object per line)"
        items: list[Any] = []
        for number, line in enumerate(lines, start=1):
            try:
                items.append(orjson.loads(line))
            except orjson.JSONDecodeError as exc:
                items.append(LineError(f"line {number} is not JSON: {exc}"[:300]))
        return items, None
    if isinstance(data, list):
        return data, None
    return [data], None


__all__ = ["create_ingest_app", "gzip"]
