"""The review queue's routes on the console (issue 44); the page is ``/review``.

- ``GET /review``: the page (keyboard: ``j``/``k`` next/previous input, ``↑``/``↓`` the
  verdict in focus, ``r``/``w`` right/wrong, ``p``/``f`` what it should be, ``n`` a note);
- ``GET /api/review``: who you are, whether the stored queue and labels have been read,
  your progress (entries, finished, where to resume);
- ``GET /api/review/entries/{index}``: one entry (question, answer and contexts cut along
  the evidence's marks, each verdict with its reasons and your label);
- ``POST /api/review/labels``: label one verdict; 403 for a viewer, and for everyone when
  the console has no users file (labels need a named reviewer); 503 while the broker is away;
- ``GET /api/review/agreement``: agreement per kind and tier, per window, and kappa;
- ``GET /metrics``: the same as Prometheus gauges (``vf_review_*``), behind the token.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from typing import Annotated, Literal

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from prometheus_client import CollectorRegistry, generate_latest
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from verdictflow.console.review_metrics import ReviewCollector
from verdictflow.console.review_queue import ReviewError, ReviewQueue
from verdictflow.console.review_writer import LabelNotWrittenError, ReviewWriter
from verdictflow.console.users import User
from verdictflow.models.events import MAX_ID_CHARS
from verdictflow.models.labels import MAX_NOTE_CHARS
from verdictflow.web.errors import error_response as _error
from verdictflow.web.errors import json_response as _json

STATIC = resources.files("verdictflow.console") / "static"


class LabelRequest(BaseModel):
    """One label from the page: what the verdict should have decided, or whether it was
    right; and an optional note."""

    model_config = ConfigDict(extra="forbid")

    input_id: Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS)]
    verdict_id: Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS)]
    expected: Literal["pass", "fail"] | None = None
    judgement: Literal["right", "wrong"] | None = None
    note: Annotated[str, Field(max_length=MAX_NOTE_CHARS)] = ""


def _user(request: Request) -> User | None:
    user: User | None = getattr(request.state, "vf_user", None)
    return user


def install_review_routes(
    app: FastAPI,
    queue: ReviewQueue,
    writer: ReviewWriter,
    *,
    named_users: bool,
    loaded: Callable[[], bool],
) -> None:
    registry = CollectorRegistry(auto_describe=True)
    registry.register(ReviewCollector(queue))

    def reviewer(request: Request) -> str | None:
        user = _user(request)
        return user.name if user is not None and named_users else None

    @app.get("/review", response_class=HTMLResponse, include_in_schema=False)
    async def page() -> HTMLResponse:
        return HTMLResponse((STATIC / "review.html").read_text(encoding="utf-8"))

    @app.get("/api/review")
    async def summary(request: Request) -> Response:
        user = _user(request)
        return _json(
            {
                "me": None if user is None else {"name": user.name, "role": user.role},
                "may_label": bool(named_users and user is not None and user.may_label),
                "named_users": named_users,
                "loaded": loaded(),
                **queue.progress(reviewer(request)),
            }
        )

    @app.get("/api/review/entries/{index}")
    async def entry(index: int, request: Request) -> Response:
        try:
            return _json(queue.view(index, reviewer(request)))
        except IndexError:
            return _error(404, "not_found", f"the review queue has no entry {index}")

    @app.post("/api/review/labels")
    async def label(body: LabelRequest, request: Request) -> Response:
        user = _user(request)
        if not named_users:
            return _error(
                403, "forbidden",
                "labels need a named reviewer: start the console with VERDICTFLOW_CONSOLE_USERS",
            )  # fmt: skip
        if user is None or not user.may_label:
            role = user.role if user is not None else "none"
            return _error(403, "forbidden", f"a {role} cannot label; ask an admin for reviewer")
        try:
            made = queue.make_label(
                reviewer=user.name,
                role=user.role,
                input_id=body.input_id,
                verdict_id=body.verdict_id,
                expected=body.expected,
                judgement=body.judgement,
                note=body.note,
            )
        except ReviewError as exc:
            return _error(exc.status, "cannot_label", str(exc))
        try:
            await writer.label(made)
        except LabelNotWrittenError as exc:
            return _error(503, "broker_unavailable", str(exc))
        return _json(made.model_dump(mode="json"))

    @app.get("/api/review/agreement")
    async def agreement() -> Response:
        return _json(queue.agreement())

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(generate_latest(registry), media_type="text/plain; version=0.0.4")
