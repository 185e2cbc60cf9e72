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
- ``POST /v1/check``: the inline gate (:mod:`verdictflow.ingest.gate`, docs/gate.md): one
  answer event in, the requested kinds' verdicts out, the stream's own (same ids, same bytes);
  the event is also produced to ``answers``, so the stream does the rest.
- ``GET /healthz`` (open), ``GET /metrics``.

``/v1/traces`` and ``/v1/answers`` validate and produce, and reply once the broker has the
records (acks=all): they never wait on scoring. A broker that is down at start does not stop the
server: it connects in the background, ``/healthz`` says 503 until it has, the two producing
endpoints answer 503 ``broker_unavailable``, and the gate still scores (and says the event was
not queued). The API's guard applies (a token when configured: ``VERDICTFLOW_INGEST_TOKEN``,
else ``VERDICTFLOW_API_TOKEN``; a body limit, 16 MiB by default, decompressed bodies
included) and its error shape (``{"error", "detail"}``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import logging
import time
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from pydantic import ValidationError

from verdictflow.evaluators.gate_verdicts import overall
from verdictflow.evaluators.policy import Policy, load_policy
from verdictflow.exceptions import InvalidEvent
from verdictflow.gc_tuning import tune_for_throughput
from verdictflow.ingest.gate import Gate, check_options
from verdictflow.ingest.otlp import OtlpDecodeError, parse_json, parse_protobuf, response, spans_of
from verdictflow.input_files import BOM
from verdictflow.models.codec import decode, encode
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import ReasonCode
from verdictflow.nlp import DEFAULT_VOCAB_LIMIT
from verdictflow.pipelines.traces import keep
from verdictflow.scoring_setup import load_scoring
from verdictflow.settings import Settings
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.replay import make_producer
from verdictflow.streams.topics import ANSWERS, SPANS
from verdictflow.web.errors import error_response as _error
from verdictflow.web.errors import install_error_handlers, json_response
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
#: How long start-up waits for the broker before serving without it (and connecting behind).
BROKER_WAIT_SECONDS = 15.0
#: ``queue=async``: how long the ack of a gated event is awaited (behind the reply) before
#: ``vf_gate_queued`` counts it as a timeout.
ASYNC_ACK_SECONDS = 30.0
GATE_UNFINISHED = frozenset({ReasonCode.GATE_TIMEOUT, ReasonCode.GATE_ERROR})


class GateLoader:
    """The gate's scoring, built once, off the event loop, on first need (start-up or the first
    check): the policy's context and statistics, the same the workers load, so its verdicts carry
    the workers' config digest."""

    def __init__(
        self, policy: Policy, idf_stats: str, vocab_limit: int = DEFAULT_VOCAB_LIMIT
    ) -> None:
        self.policy = policy
        self.idf_stats = idf_stats
        self.vocab_limit = vocab_limit
        self._gate: asyncio.Task[Gate] | None = None

    def loaded(self) -> Gate | None:
        """The gate, if it is loaded."""
        if self._gate is not None and self._gate.done() and not self._gate.cancelled():
            return self._gate.result() if self._gate.exception() is None else None
        return None

    async def get(self) -> Gate:
        if self._gate is None or self._gate.cancelled():
            self._gate = asyncio.ensure_future(self._load())
        return await asyncio.shield(self._gate)

    async def _load(self) -> Gate:
        scoring = await asyncio.to_thread(load_scoring, self.policy, self.idf_stats)
        return Gate(scoring, self.vocab_limit)


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
        self.checks = Counter(
            "vf_gate_checks", "Inline gate checks (POST /v1/check), by overall decision",
            ["decision"], registry=r,
        )  # fmt: skip
        self.check_seconds = Histogram(
            "vf_gate_check_seconds", "Inline gate checks: receipt to reply", registry=r,
            buckets=(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5),
        )  # fmt: skip
        self.unfinished = Counter(
            "vf_gate_unfinished", "Gate verdicts DEFERred because the gate did not finish "
            "them, by reason (gate_timeout, gate_error) and kind", ["reason", "kind"], registry=r,
        )  # fmt: skip
        self.queued = Counter(
            "vf_gate_queued", "Gated events produced to answers, by outcome "
            "(acked, timeout, error, no_broker)", ["outcome"], registry=r,
        )  # fmt: skip
        self.requests = Counter(
            "vf_ingest_requests", "Requests by endpoint and status", ["endpoint", "status"],
            registry=r,
        )  # fmt: skip


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
    tune_gc: bool = False,
) -> FastAPI:
    """The receiver; ``producer`` lets tests and benches hand in their own; ``tune_gc`` (the
    ``ingest`` command) tunes the process's garbage collector once the gate is loaded, as the
    workers do (:mod:`verdictflow.gc_tuning`: it cut the gate's p99)."""
    metrics = IngestMetrics()
    spans_topic = settings.topic_prefix + SPANS
    answers_topic = settings.topic_prefix + ANSWERS

    policy = load_policy(settings.policy)  # a bad policy stops the command, before it binds
    gate_loader = GateLoader(policy, settings.idf_stats, settings.spacy_vocab_limit)

    async def connect() -> AIOKafkaProducer:
        """Declare the topics and start a producer, retrying while the broker is away."""
        delay = 0.5
        while True:
            # linger 0: a request waits for its records' ack (and the gate's reply for it)
            own = make_producer(settings, settings.max_event_bytes, linger_ms=0)
            try:
                await ensure_topics(settings, [SPANS, ANSWERS])
                await own.start()
            except (KafkaError, OSError) as exc:
                await own.stop()
                logger.warning("ingest: broker %s not reachable (%s); retrying in %.1f s",
                               settings.broker, exc, delay)  # fmt: skip
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)
                continue
            logger.info("ingest: producing to %s", settings.broker)
            return own

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        connecting: asyncio.Task[AIOKafkaProducer] | None = None
        if producer is None:
            connecting = asyncio.create_task(connect())
            done, _ = await asyncio.wait({connecting}, timeout=BROKER_WAIT_SECONDS)
            if connecting in done:
                app.state.producer = connecting.result()
            else:
                logger.warning("ingest: starting without a broker; the gate still scores")
                connecting.add_done_callback(
                    lambda task: (
                        setattr(app.state, "producer", task.result())
                        if not task.cancelled() and task.exception() is None
                        else None
                    )
                )
        await gate_loader.get()  # the policy's scoring before the first request, not in it
        if tune_gc:
            tune_for_throughput()
        try:
            yield
        finally:
            if connecting is not None:
                connecting.cancel()
                if app.state.producer is not None:
                    await app.state.producer.stop()

    app = FastAPI(title="verdictflow ingest", lifespan=lifespan, docs_url=None, redoc_url=None)
    install_error_handlers(app)
    app.add_middleware(
        ApiGuard,
        token=token,
        max_body_bytes=max_body_bytes,
        open_paths=frozenset({"/healthz"}),
    )

    app.state.producer = producer

    def broker_down() -> JSONResponse | None:
        if app.state.producer is not None:
            return None
        return _error(503, "broker_unavailable", f"not connected to {settings.broker} yet")

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
        if (down := broker_down()) is not None:
            metrics.requests.labels("traces", "503").inc()
            return down
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
        if (down := broker_down()) is not None:
            metrics.requests.labels("answers", "503").inc()
            return down
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

    @app.post("/v1/check")
    async def check(request: Request) -> Response:
        received = time.monotonic()
        content_type = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
        if content_type != "application/json":
            metrics.requests.labels("check", "415").inc()
            return _error(
                415, "unsupported_media_type", "send one answer event as application/json"
            )
        try:
            options = check_options(request.query_params)
        except ValueError as exc:
            metrics.requests.labels("check", "400").inc()
            return _error(400, "invalid_parameter", str(exc))
        try:
            body = _body(
                await request.body(), request.headers.get("content-encoding"), max_body_bytes
            )
            item = orjson.loads(body.removeprefix(BOM))  # as _items reads it
        except OverflowError as exc:
            return _error(413, "too_large", str(exc))
        except (ValueError, orjson.JSONDecodeError) as exc:
            metrics.requests.labels("check", "400").inc()
            return _error(400, "invalid_json", str(exc)[:300])
        if not isinstance(item, dict):
            metrics.requests.labels("check", "400").inc()
            return _error(400, "invalid_json", "send one answer event, a JSON object")
        value = orjson.dumps(item)  # the bytes /v1/answers would produce, and the gate scores
        try:
            event = decode(value, AnswerEvent, max_bytes=settings.max_event_bytes)
        except InvalidEvent as exc:
            metrics.requests.labels("check", "422").inc()
            return _error(422, "invalid_event", f"{exc.code}: {exc.detail}")
        deadline = received + options.timeout_ms / 1000
        try:  # loaded at start-up; a check that comes first waits for it, within its deadline
            ready = gate_loader.loaded()
            gate = (
                ready
                if ready is not None
                else await asyncio.wait_for(
                    gate_loader.get(), max(0.0, deadline - time.monotonic())
                )
            )
        except TimeoutError:
            metrics.requests.labels("check", "503").inc()
            return _error(503, "gate_starting", "the gate is still loading its scoring; retry")
        queueing = None
        if options.queue != "off" and options.final:
            waits = deadline if options.queue == "ack" else time.monotonic() + ASYNC_ACK_SECONDS
            queueing = asyncio.create_task(
                queue_event(answers_topic, event.group_key.encode(), value, waits)
            )
            if options.queue == "async":  # the outcome is counted when it comes, not awaited
                background.add(queueing)
                queueing.add_done_callback(background.discard)
                queueing = None
        result = await gate.check(event, options, deadline)
        queued: bool | None = None if options.queue == "async" and options.final else False
        queue_error = None
        if queueing is not None:
            queued, queue_error = await queueing
        decision = overall(result.verdicts)
        for verdict in result.verdicts:
            if verdict.reasons[0].code in GATE_UNFINISHED:
                metrics.unfinished.labels(verdict.reasons[0].code.value, verdict.kind.value).inc()
        metrics.checks.labels(decision.value).inc()
        metrics.check_seconds.observe(time.monotonic() - received)
        metrics.requests.labels("check", "200").inc()
        reply = {
            "id": event.id,
            "decision": decision.value,
            "final": options.final,
            "seq": options.seq,
            "queued": queued,
            "queue_error": queue_error,
            "timings_ms": {"lexical": round(result.lexical_ms, 3),
                           "nlp": None if result.nlp_ms is None else round(result.nlp_ms, 3)},
            # the stream's bytes, embedded as they are: byte-identical to the topic's records
            "verdicts": [orjson.Fragment(encode(v)) for v in result.verdicts],
        }  # fmt: skip
        return json_response(reply)

    background: set[asyncio.Task[tuple[bool, str | None]]] = set()

    async def queue_event(
        topic: str, key: bytes, value: bytes, deadline: float
    ) -> tuple[bool, str | None]:
        """Produce one event, waiting for the broker's ack until ``deadline`` at most."""
        prod: AIOKafkaProducer | None = app.state.producer
        if prod is None:
            metrics.queued.labels("no_broker").inc()
            return False, f"not connected to {settings.broker}: the stream will not see it"
        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                await (await prod.send(topic, value=value, key=key))
        except TimeoutError:
            metrics.queued.labels("timeout").inc()
            return False, "no acknowledgement within timeout_ms; it may still be delivered"
        except KafkaError as exc:
            metrics.queued.labels("error").inc()
            return False, f"the broker refused it: {type(exc).__name__}"
        metrics.queued.labels("acked").inc()
        return True, None

    @app.get("/healthz")
    async def healthz() -> Response:
        if app.state.producer is None:
            return JSONResponse({"ready": False, "broker": False, "gate": True}, status_code=503)
        return JSONResponse({"ready": True, "broker": True, "gate": True})

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
    alone, its index counted among the lines that are not blank. A byte order mark before it is
    skipped, as RFC 8259 lets a parser do (a script posting a file Notepad saved sends one)."""
    text = body.removeprefix(BOM).strip()
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
