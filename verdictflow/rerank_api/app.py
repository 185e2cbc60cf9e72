"""``create_app(api_settings, stream_settings) -> FastAPI``: the ``/search`` service.

The lifespan builds typed state (:class:`ServiceState`): the retriever, filled from artifacts
or by a :class:`TopicFollower` task, plus a BM25 refresh task and a compaction trigger; it tears
them down after ``yield``. Routes are thin: validate, run the retriever's synchronous search on
a small thread pool (FAISS and numpy release the GIL; the event loop keeps serving), shape the
response. Errors have one JSON shape (:class:`schemas.Error`): ``{"error": code, "detail":
message}``, whether the guard, FastAPI's validation, the JSON parser or Starlette's routing
(404, 405) refuses the request. The OpenAPI document is generated from the same models and
settings (the request model carries the app's limits; see ``openapi.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any

import faiss
import numpy as np
import numpy.typing as npt
import orjson
from fastapi import Depends, FastAPI, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.routing import APIRoute
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from verdictflow.embedders import make_embedder
from verdictflow.rerank_api import artifacts, runtime
from verdictflow.rerank_api.blend import Weights
from verdictflow.rerank_api.follower import TopicFollower
from verdictflow.rerank_api.guards import install_guards
from verdictflow.rerank_api.metrics import ApiMetrics
from verdictflow.rerank_api.openapi import (
    error_responses,
    install_openapi,
    security_requirement,
)
from verdictflow.rerank_api.query_batcher import BatchStats, QueryBatcher
from verdictflow.rerank_api.retriever import Retriever, SearchLimits, result_id
from verdictflow.rerank_api.schemas import (
    Health,
    LatencySummary,
    SearchRequest,
    SearchResponse,
    search_request_model,
)
from verdictflow.rerank_api.settings import ApiSettings
from verdictflow.settings import Settings
from verdictflow.web.errors import error_response, install_error_handlers, json_response

logger = logging.getLogger(__name__)


class NotReadyError(Exception):
    """The state is still being built; answering now would rank an incomplete corpus."""


class OverloadedError(Exception):
    """More /search requests are waiting than ``max_waiting_searches``: past the replica's
    capacity a queue only grows, so a request refused now (and retried, or sent to another
    replica) is better served than one answered after seconds."""


@dataclass
class ServiceState:
    settings: ApiSettings
    retriever: Retriever
    metrics: ApiMetrics
    executor: ThreadPoolExecutor
    batcher: QueryBatcher | None = None
    follower: TopicFollower | None = None
    loaded: bool = False
    #: /search requests past the readiness check and not yet answered (the event loop's count)
    in_flight: int = 0
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _compaction: asyncio.Task[bool] | None = None

    @property
    def ready(self) -> bool:
        """Loaded (artifacts), or caught up with the topics and still following them."""
        if self.follower is not None:
            return self.follower.ready.is_set() and self.follower.error is None
        return self.loaded

    def maybe_compact(self) -> None:
        """Start a background index rebuild when one is due and none is running."""
        busy = self._compaction is not None and not self._compaction.done()
        if not busy and self.retriever.index.needs_compaction():
            self._compaction = asyncio.get_running_loop().create_task(
                asyncio.to_thread(self.retriever.index.compact)
            )


async def get_state(request: Request) -> ServiceState:
    """The app's state. ``async`` on purpose: FastAPI runs a plain ``def`` dependency in its
    thread pool, one thread hop per request (9 % of the event loop's time at 160 req/s)."""
    state: ServiceState = request.app.state.vf
    return state


StateDep = Annotated[ServiceState, Depends(get_state)]


def build_retriever(api: ApiSettings) -> Retriever:
    limits = SearchLimits(api.overfetch, api.min_candidates, api.max_candidates)
    embedder = make_embedder(api.embedder, api.dim, api.embed_model_dir, api.embed_threads)
    queries = embedder
    if api.embedder != "hashing" and api.query_encoder != "fp32":
        queries = make_embedder(
            api.embedder, api.dim, api.embed_model_dir, api.embed_threads, api.query_encoder
        )
    return Retriever(embedder, api.index_config, limits, api.fusion, api.query_cache, queries)


def build_batcher(api: ApiSettings, retriever: Retriever) -> QueryBatcher | None:
    """The query micro-batcher, when the query embedder can batch and batching is on."""
    encoder = retriever.query_embedder
    embed_batch = getattr(encoder, "embed_batch", None)
    if api.query_batch_max < 2 or embed_batch is None or not getattr(encoder, "batches", False):
        return None
    return QueryBatcher(
        embed_batch,
        max_batch=api.query_batch_max,
        max_wait=api.query_batch_wait_ms / 1000.0,
        workers=api.query_batch_workers,
    )


def load_artifacts(api: ApiSettings, retriever: Retriever) -> None:
    """Fill the retriever from the NPZ (+ quality, + index); raises ArtifactError."""
    if api.npz is None:
        raise artifacts.ArtifactError("artifact mode needs a vectors NPZ (--npz)")
    corpus = artifacts.load_npz(api.npz)
    index = artifacts.load_index(api.index) if api.index else None
    if index is not None and corpus.vectors is None:
        raise artifacts.ArtifactError(f"{api.index}: an index file needs 'vectors' in the NPZ")
    retriever.load(corpus.metas, corpus.vectors, index)
    if api.quality is not None:
        n = retriever.load_quality(artifacts.load_quality(api.quality))
        logger.info("loaded %d quality rows from %s", n, api.quality)
    logger.info("loaded %d documents from %s", len(corpus.metas), api.npz)


async def _lexical_refresher(state: ServiceState) -> None:
    """Rebuild the BM25 snapshot when documents changed, at most once per interval."""
    while True:
        await asyncio.sleep(state.settings.lexical_refresh_seconds)
        if state.retriever.lexical_stale:
            await asyncio.to_thread(state.retriever.rebuild_lexical)
            if state.settings.gc_freeze:
                runtime.freeze_heap(collect=False)


async def _freeze_when_ready(follower: TopicFollower) -> None:
    """Freeze the heap once the follower has caught up (before that, pauses cost nothing)."""
    await follower.ready.wait()
    runtime.freeze_heap(collect=True)


def create_app(
    api: ApiSettings | None = None,
    streams: Settings | None = None,
    retriever: Retriever | None = None,
) -> FastAPI:
    """The app; ``retriever`` lets tests and benchmarks hand in prepared state."""
    api = api or ApiSettings()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        faiss.omp_set_num_threads(api.faiss_threads)
        metrics = ApiMetrics(api.latency_window)
        executor = ThreadPoolExecutor(api.search_threads, thread_name_prefix="vf-search")
        state = ServiceState(api, retriever or build_retriever(api), metrics, executor)
        state.batcher = build_batcher(api, state.retriever)
        app.state.vf = state
        previous_interval = runtime.set_gil_switch_interval(api.gil_switch_interval_ms)
        try:
            if retriever is not None or api.source == "artifacts":
                if retriever is None:
                    await asyncio.to_thread(load_artifacts, api, state.retriever)
                if api.gc_freeze:
                    runtime.freeze_heap(collect=True)
                state.loaded = True
            else:
                follower = TopicFollower(
                    streams or Settings(),
                    state.retriever,
                    metrics,
                    ready_idle_seconds=api.ready_idle_seconds,
                    on_docs_applied=state.maybe_compact,
                )
                await follower.start()
                state.follower = follower
                state.tasks.append(asyncio.create_task(follower.run(), name="vf-follow"))
                state.tasks.append(asyncio.create_task(_lexical_refresher(state), name="vf-bm25"))
                if api.gc_freeze:
                    state.tasks.append(
                        asyncio.create_task(_freeze_when_ready(follower), name="vf-freeze")
                    )
            yield
        finally:
            for task in state.tasks:
                task.cancel()
            await asyncio.gather(*state.tasks, return_exceptions=True)
            if state.follower is not None:
                await state.follower.stop()
            executor.shutdown(wait=False, cancel_futures=True)
            if state.batcher is not None:
                state.batcher.close()
            runtime.set_gil_switch_interval(previous_interval)
            if api.gc_freeze:
                runtime.unfreeze_heap()

    app = FastAPI(
        title="verdictflow retriever",
        description="Dense, lexical or hybrid search blended with live document quality.",
        version=_version(),
        lifespan=lifespan,
    )
    app.router.route_class = JsonRoute
    _install_error_handlers(app)
    _install_timing(app)
    install_guards(app, api)
    _install_routes(app, api)
    install_openapi(app, api)
    return app


def _version() -> str:
    try:
        return version("verdictflow")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0"


class JsonRequest(Request):
    """A request whose JSON body is parsed by orjson: RFC 8259 only (UTF-8, no ``NaN``), at
    most 1,024 levels deep. Any failure is a ``JSONDecodeError``, which FastAPI reports as a
    ``json_invalid`` validation error (400 ``invalid_json`` here) rather than a bare 400, and
    UTF-16/32 bodies, which ``json.loads`` would guess and accept, are refused."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError as exc:  # named as such rather than by orjson's guess
                raise json.JSONDecodeError(f"not UTF-8 ({exc.reason})", "", exc.start) from None
            self._json = orjson.loads(text)
        return self._json


class JsonRoute(APIRoute):
    """Routes whose handlers see a :class:`JsonRequest` (FastAPI's custom-request pattern)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def with_orjson(request: Request) -> Response:
            return await handler(JsonRequest(request.scope, request.receive))

        return with_orjson


def _count_refusal(request: Request, status: int, body: Any = None) -> None:
    """Count a refused /search in ``vf_search_requests_total`` (mode: the requested one if
    valid, else the default)."""
    state: ServiceState | None = getattr(request.app.state, "vf", None)
    if state is None or request.url.path != "/search":
        return
    mode = body.get("mode") if isinstance(body, dict) else None
    if mode not in ("dense", "lexical", "hybrid"):
        mode = state.settings.mode
    state.metrics.searches.labels(mode, str(status)).inc()


def _install_error_handlers(app: FastAPI) -> None:
    install_error_handlers(app, on_refusal=_count_refusal)

    @app.exception_handler(NotReadyError)
    async def not_ready(request: Request, exc: NotReadyError) -> JSONResponse:
        return error_response(503, "not_ready", str(exc))

    @app.exception_handler(OverloadedError)
    async def overloaded(request: Request, exc: OverloadedError) -> JSONResponse:
        return JSONResponse(
            {"error": "overloaded", "detail": str(exc)},
            status_code=503,
            headers={"Retry-After": "1"},
        )


class SearchTiming:
    """Pure ASGI middleware timing ``/search`` from request start to the last body byte.

    Not ``@app.middleware("http")``: Starlette's BaseHTTPMiddleware re-wraps every request and
    response in streams and costs more than the search itself at hundreds of requests/s.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/search":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = 0

        async def send_status(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            state: ServiceState | None = getattr(scope["app"].state, "vf", None)
            if state is not None and status == 200:  # refusals are counted, not timed
                elapsed = time.perf_counter() - t0
                state.metrics.request_seconds.observe(elapsed)
                state.metrics.window.add("request", elapsed)


def _install_timing(app: FastAPI) -> None:
    app.add_middleware(SearchTiming)


async def _query_vector(
    state: ServiceState, query: str, mode: str
) -> tuple[npt.NDArray[np.float32] | None, float]:
    """The query's vector through the micro-batcher (None when there is none, or for lexical
    mode, or when the cache has it: the search thread then looks it up), and the seconds spent."""
    if state.batcher is None or mode == "lexical":
        return None, 0.0
    t0 = time.perf_counter()
    cache = state.retriever.query_cache
    vector = cache.get(query)
    if vector is None:
        vector = cache.put(query, await state.batcher.vector(query))  # the first cached wins
    return vector, time.perf_counter() - t0


def _install_routes(app: FastAPI, api: ApiSettings) -> None:
    async def search(body: SearchRequest, state: StateDep) -> Response:
        """Rank documents by ``w_cos * score + w_quality * quality``, ties by doc_id."""
        api = state.settings
        mode = body.mode or api.mode
        if not state.ready:
            state.metrics.searches.labels(mode, "503").inc()
            raise NotReadyError("the index is still being built from the topics; retry shortly")
        limit = api.search_threads + api.max_waiting_searches
        if api.max_waiting_searches and state.in_flight >= limit:
            state.metrics.searches.labels(mode, "503").inc()
            raise OverloadedError(
                f"{state.in_flight} searches in flight (at most {limit}); retry shortly"
            )
        weights = Weights(
            api.w_cos if body.w_cos is None else body.w_cos,
            api.w_quality if body.w_quality is None else body.w_quality,
        )
        loop = asyncio.get_running_loop()
        state.in_flight += 1
        state.metrics.in_flight.set(state.in_flight)
        try:
            qvec, waited = await _query_vector(state, body.q, mode)
            outcome = await loop.run_in_executor(
                state.executor,
                lambda: state.retriever.search(
                    body.q, body.top_k, lane=body.lane, mode=mode, weights=weights, qvec=qvec
                ),
            )
        finally:
            state.in_flight -= 1
            state.metrics.in_flight.set(state.in_flight)
        if qvec is not None:  # embedded here: its time is the wait for the batched pass
            outcome.timings["embed"] = waited
        for stage in ("embed", "retrieve", "blend"):
            state.metrics.observe_stage(stage, outcome.timings[stage])
        state.metrics.window.add("search", outcome.timings["total"])
        state.metrics.searches.labels(mode, "200").inc()
        items = [
            {
                "id": result_id(b.doc_id),
                "doc_id": b.doc_id,
                "score": b.score,
                "quality": b.quality,
                "final_score": b.final_score,
                "concept_text": meta.text,
                "tmd_code": meta.tmd_code,
                "lane_index": meta.lane_index,
            }
            for b, meta in outcome.hits
        ]
        # Built as plain data and encoded once with orjson (the shape is SearchResponse, which
        # documents it in OpenAPI): re-validating our own output would double the app's cost.
        payload = {"lane": body.lane, "mode": mode.upper(), "items": items}
        payload["trace_id"] = uuid.uuid4().hex
        return json_response(payload)

    # FastAPI validates the body with, and documents, the annotated model: this app's own, whose
    # Field constraints are the limits of its settings.
    search.__annotations__["body"] = search_request_model(api.max_query_chars, api.max_top_k)
    app.post(
        "/search",
        response_model=SearchResponse,
        responses=error_responses(api, "/search", 400, 422, 503),
        openapi_extra=security_requirement(api, "/search"),
    )(search)

    @app.get(
        "/healthz",
        response_model=Health,
        responses={
            503: {"model": Health, "description": "Not ready yet (same body)."},
            **error_responses(api, "/healthz"),
        },
        openapi_extra=security_requirement(api, "/healthz"),
    )
    async def healthz(state: StateDep, response: Response) -> Health:
        r = state.retriever
        lag = state.follower.lag if state.follower is not None else 0
        m = state.metrics
        m.index_size.set(len(r.index))
        m.quality_rows.set(len(r.quality))
        m.ready.set(1 if state.ready else 0)
        response.status_code = 200 if state.ready else 503
        return Health(
            ready=state.ready,
            source="artifacts" if state.follower is None else "topics",
            index_size=len(r.index),
            index_kind=r.index.kind,
            quality_rows=len(r.quality),
            consumer_lag=lag,
            default_mode=state.settings.mode,
            weights={"w_cos": state.settings.w_cos, "w_quality": state.settings.w_quality},
            embedder=r.embedder.version,
            index=r.index.stats(),
            query_cache=r.query_cache_stats(),
            query_encoder=r.query_embedder.version,
            query_batches=state.batcher.stats.as_dict() if state.batcher is not None else None,
            error=state.follower.error if state.follower is not None else None,
        )

    @app.get(
        "/metrics",
        response_class=PlainTextResponse,
        response_description="Prometheus text exposition format.",
        responses=error_responses(api, "/metrics"),
        openapi_extra=security_requirement(api, "/metrics"),
    )
    async def metrics(state: StateDep) -> Response:
        r = state.retriever
        state.metrics.index_size.set(len(r.index))
        state.metrics.quality_rows.set(len(r.quality))
        state.metrics.ready.set(1 if state.ready else 0)
        if state.follower is not None:
            state.metrics.lag.set(state.follower.lag)
            newest = state.follower.newest_quality_ts
            if newest is not None:  # wall clock, for a gauge only
                state.metrics.quality_freshness.set(max(0.0, time.time() - newest))
        return Response(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get(
        "/stats/latency",
        response_model=LatencySummary,
        response_model_exclude_none=True,
        responses=error_responses(api, "/stats/latency", 422),
        openapi_extra=security_requirement(api, "/stats/latency"),
    )
    async def latency(state: StateDep, reset: bool = False) -> dict[str, Any]:
        """Exact server-side percentiles over the last samples (``reset=true`` clears them and
        the micro-batcher's counts)."""
        summary: dict[str, Any] = state.metrics.window.summary()
        if reset:
            state.metrics.window.reset()
            if state.batcher is not None:
                state.batcher.stats = BatchStats()
        return summary
