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
from verdictflow.rerank_api.http_errors import install_error_handlers
from verdictflow.rerank_api.security import ApiGuard
from verdictflow.scoring_jobs.replay import make_producer
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.settings import Settings
from verdictflow.streams.topics import ANSWERS, SPANS

logger = logging.getLogger(__name__)

PROTOBUF = "application/x-protobuf"


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
    """The body, gunzipped when it says so, refused past ``limit`` bytes uncompressed."""
    if (encoding or "").lower() not in ("gzip", "x-gzip"):
        return raw
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(raw, limit + 1)
    except zlib.error as exc:
        raise ValueError(f"not gzip: {exc}") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise OverflowError(f"more than {limit} bytes once decompressed")
    return out


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
            decoded = spans_of(parse_json(body) if json else parse_protobuf(body))
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


def _items(body: bytes) -> tuple[list[Any], str | None]:
    """One JSON object, a JSON array of them, or NDJSON (one object per line)."""
    text = body.strip()
    if not text:
        return [], "empty body"
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        items = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append(orjson.loads(line))
            except orjson.JSONDecodeError as exc:
                return [], f"line {number} is not JSON: {exc}"
        return items, None
    if isinstance(data, list):
        return data, None
    return [data], None


__all__ = ["create_ingest_app", "gzip"]
