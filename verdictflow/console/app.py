"""``create_console_app(settings, options) -> FastAPI``: the operator console's web service.

The lifespan starts a :class:`~verdictflow.console.follower.Follower` task that feeds a
:class:`~verdictflow.console.state.ConsoleState`; routes only read that state:

- ``GET /``: the page (HTML, CSS and JavaScript written here, served from the package: no CDN,
  no build step);
- ``GET /api/stream``: server-sent events, one ``tick`` every ``tick_seconds`` with the window's
  figures and whatever failures, alerts, dead letters and quality rows are new since the last
  tick (the first one carries the latest of each), filtered by model and tenant;
- ``GET /api/stats``, ``GET /api/failures``: the same as plain JSON;
- ``GET /api/verdicts/{verdict_id}``: the whole record of a recent FAIL or DEFER verdict;
- ``POST /api/search``: forwards a ``/search`` body (the API's own request model: ``q``,
  ``top_k``, ``lane``, ``mode``, weights, validated the same way) to the retriever named by
  ``--api-url`` (the page cannot call another origin), with the API's bearer token when one is
  configured;
- ``GET /login``, ``POST /login``: the login form, when a token is configured;
- ``GET /healthz``: whether the follower is connected, and what it has read;
- the review queue, labels, agreement and ``/metrics``: :mod:`~verdictflow.console.review_routes`.

Everything but ``/healthz``, ``/login`` and the static assets is behind the console's token
when one is set (:mod:`~verdictflow.console.auth`, which also adds the security headers);
bodies are limited as the API's are (its guard, 64 KiB); errors have the API's shape
(``{"error": code, "detail": message}``, :mod:`~verdictflow.web.errors`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Annotated, Any

import httpx
import orjson
from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from sse_starlette.sse import EventSourceResponse

from verdictflow.console.auth import SESSION_SECONDS, ConsoleGuard, login_page
from verdictflow.console.follower import Follower
from verdictflow.console.review_queue import ReviewQueue
from verdictflow.console.review_routes import install_review_routes
from verdictflow.console.review_writer import ReviewWriter
from verdictflow.console.state import ALL, ConsoleLimits, ConsoleState
from verdictflow.console.users import Users
from verdictflow.evaluators.review_policy import ReviewPolicy
from verdictflow.rerank_api.schemas import SearchRequest
from verdictflow.settings import Settings
from verdictflow.web.errors import error_response as _error
from verdictflow.web.errors import install_error_handlers
from verdictflow.web.errors import json_response as _json
from verdictflow.web.security import ApiGuard

logger = logging.getLogger(__name__)

STATIC = resources.files("verdictflow.console") / "static"


@dataclass(frozen=True)
class ConsoleOptions:
    """How the console runs (the command's flags)."""

    from_beginning: bool = False
    api_url: str | None = None
    #: Sent upstream by the search proxy (``VERDICTFLOW_API_TOKEN``).
    api_token: str | None = None
    #: Asked of every console user (``VERDICTFLOW_CONSOLE_TOKEN``, else the API's); None: open.
    token: str | None = None
    max_body_bytes: int = 64 * 1024
    tick_seconds: float = 0.5
    limits: ConsoleLimits = field(default_factory=ConsoleLimits)
    #: Called with each new verdict: the OpenTelemetry export when ``--otlp-endpoint`` is given.
    on_verdict: Callable[[Any], None] | None = None
    #: The judge tier's budget (``--policy``), which the page compares the judge's spend with.
    judge_budget: dict[str, Any] | None = None
    #: How long a login lasts, and whether its cookie is ``Secure`` even over plain HTTP (a
    #: TLS-terminating proxy in front): ``VERDICTFLOW_CONSOLE_SESSION_SECONDS``,
    #: ``VERDICTFLOW_CONSOLE_SECURE_COOKIE``.
    session_seconds: int = SESSION_SECONDS
    secure_cookie: bool = False
    #: Named users and their roles (``VERDICTFLOW_CONSOLE_USERS``); None: the shared token.
    users: Users | None = None
    #: What comes to the review queue and the agreement bound (``--policy``'s ``review``).
    review: ReviewPolicy = field(default_factory=ReviewPolicy)


WindowQuery = Annotated[
    int, Query(ge=1, description="Sliding window, seconds (at most the console's max_window)")
]
Label = Annotated[
    str, Query(max_length=200, description="A model, tenant, decision or kind; * for all")
]
Limit = Annotated[int, Query(ge=1, le=1000, description="Failures sent at most")]


def _window(request: Request, window: WindowQuery = 300) -> int:
    """The window asked for, refused (422) past the console's ``max_window`` rather than
    silently cut to it."""
    limit: int = request.app.state.max_window
    if window > limit:
        raise RequestValidationError(
            [
                {
                    "type": "less_than_equal",
                    "loc": ("query", "window"),
                    "msg": "too large",
                    "ctx": {"le": limit},
                }
            ]
        )
    return window


Window = Annotated[int, Depends(_window)]


@dataclass(frozen=True)
class Filters:
    """The query parameters that choose what the page sees, shared by the JSON and the stream
    routes."""

    model: Label = ALL
    tenant: Label = ALL
    decision: Label = ALL
    kind: Label = ALL
    limit: Limit = 200

    def failures(self, console: ConsoleState, since: int) -> list[dict[str, Any]]:
        return console.failures_since(
            since, self.model, self.tenant, self.limit, decision=self.decision, kind=self.kind
        )


FiltersDep = Annotated[Filters, Depends()]


def create_console_app(
    settings: Settings,
    options: ConsoleOptions | None = None,
    *,
    state: ConsoleState | None = None,
    follow: bool = True,
) -> FastAPI:
    """The console app. Tests pass their own ``state`` and ``follow=False`` to drive it without
    a broker."""
    opts = options or ConsoleOptions()
    console = state or ConsoleState(  # following: the stored queue is read before new entries
        settings.topic_prefix, opts.limits, review=ReviewQueue(opts.review, restored=not follow)
    )
    console.on_verdict = opts.on_verdict
    console.judge_budget = opts.judge_budget
    follower = Follower(settings, console, from_beginning=opts.from_beginning)
    writer = ReviewWriter(settings, console.review)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        tasks = (
            [asyncio.create_task(follower.run()), asyncio.create_task(writer.run())]
            if follow
            else []
        )
        async with httpx.AsyncClient(timeout=10.0) as client:
            app.state.http = client
            try:
                yield
            finally:
                follower.stop()
                writer.stop()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 5)
                for task in tasks:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task

    app = FastAPI(
        title="verdictflow console",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    install_error_handlers(app)
    # Starlette runs the middleware added last first: the console guard (token, headers), then
    # the API's guard for the body limit (no token of its own).
    app.add_middleware(ApiGuard, token=None, max_body_bytes=opts.max_body_bytes)
    app.add_middleware(
        ConsoleGuard,
        token=opts.token,
        session_seconds=opts.session_seconds,
        secure_cookie=opts.secure_cookie,
        users=opts.users,
    )
    install_review_routes(
        app,
        console.review,
        writer,
        named_users=opts.users is not None,
        loaded=lambda: follower.review_ready or not follow,
    )

    app.state.max_window = console.limits.max_window

    @app.get("/login", response_class=HTMLResponse, include_in_schema=False)
    async def login(failed: bool = False) -> HTMLResponse:
        return HTMLResponse(login_page(failed))

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def page() -> HTMLResponse:
        html = (STATIC / "index.html").read_text(encoding="utf-8")
        return HTMLResponse(html.replace("{{search_enabled}}", "true" if opts.api_url else "false"))

    @app.get("/api/stats")
    async def stats(window: Window, model: Label = ALL, tenant: Label = ALL) -> Response:
        return _json(console.stats(window, model, tenant, time.time()))

    @app.get("/api/failures")
    async def failures(filters: FiltersDep) -> Response:
        return _json(filters.failures(console, 0))

    @app.get("/api/verdicts/{verdict_id}")
    async def verdict(verdict_id: str) -> Response:
        raw = console.verdict(verdict_id)
        if raw is None:
            return _error(
                404, "not_found", f"verdict {verdict_id} is not among the recent failures"
            )
        return Response(raw, media_type="application/json")

    @app.get("/api/stream")
    async def stream(request: Request, filters: FiltersDep, window: Window) -> EventSourceResponse:
        async def ticks() -> AsyncIterator[dict[str, str]]:
            seqs = {"failures": 0, "alerts": 0, "dead_letters": 0, "quality": 0}
            first = True
            while not await request.is_disconnected():
                now = time.time()
                console.tick(now)
                stats = console.stats(window, filters.model, filters.tenant, now)
                payload: dict[str, Any] = {"stats": stats}
                for name, feed in console.feeds():
                    if name == "failures":
                        new = filters.failures(console, seqs[name])
                    else:
                        new = feed.since(seqs[name], 50)
                    if new:
                        seqs[name] = new[-1]["seq"]
                    payload[name] = new
                payload["reset"] = first
                first = False
                yield {"event": "tick", "data": orjson.dumps(payload).decode()}
                await asyncio.sleep(opts.tick_seconds)

        return EventSourceResponse(ticks(), ping=15)

    @app.post("/api/search")
    async def search(body: SearchRequest, request: Request) -> Response:
        if not opts.api_url:
            return _error(503, "no_api", "start the console with --api-url to search")
        headers = {"Authorization": f"Bearer {opts.api_token}"} if opts.api_token else {}
        client: httpx.AsyncClient = request.app.state.http
        try:
            upstream = await client.post(
                opts.api_url.rstrip("/") + "/search",
                json=body.model_dump(exclude_none=True),
                headers=headers,
            )
        except httpx.HTTPError as exc:
            return _error(502, "api_unreachable", f"{opts.api_url}: {exc}")
        return Response(
            upstream.content, status_code=upstream.status_code, media_type="application/json"
        )

    @app.get("/healthz")
    async def healthz(request: Request) -> Response:
        ready = follower.ready or not follow
        if not getattr(request.state, "vf_authenticated", False):
            return _json({"ready": ready})  # per-topic counts and lag only for the logged in
        return _json(
            {"ready": ready, "error": follower.error, "records": dict(console.records),
             "lag": console.lag}
        )  # fmt: skip

    return app
