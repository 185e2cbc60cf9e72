"""The search API's guard settings: its token, the paths open without it (``/healthz``,
``/openapi.json``, and ``/metrics`` when public), and CORS, installed around
:class:`~verdictflow.web.security.ApiGuard`."""

from __future__ import annotations

import logging
from typing import Any

from starlette.middleware.cors import CORSMiddleware

from verdictflow.rerank_api.settings import ApiSettings
from verdictflow.web.security import ALWAYS_OPEN, ApiGuard

logger = logging.getLogger(__name__)


def configured_token(api: ApiSettings) -> str | None:
    """The token, or None when unset (an empty token leaves the API open too)."""
    if api.token is None:
        return None
    return api.token.get_secret_value() or None


def open_paths(api: ApiSettings) -> frozenset[str]:
    """Paths served without the token when one is set."""
    return (ALWAYS_OPEN | {"/metrics"}) if api.metrics_public else ALWAYS_OPEN


def needs_token(api: ApiSettings, path: str) -> bool:
    """Whether the guard asks ``path`` for the bearer token (what the OpenAPI document states)."""
    return configured_token(api) is not None and path not in open_paths(api)


def install_guards(app: Any, api: ApiSettings) -> None:
    """Add the guard, and CORS only when origins are configured (off by default).

    Starlette runs the middleware added last first: CORS answers preflight requests (which
    carry no token) before the guard, and the guard runs before the timing middleware.
    """
    token = configured_token(api)
    app.add_middleware(
        ApiGuard, token=token, max_body_bytes=api.max_body_bytes, open_paths=open_paths(api)
    )
    if api.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=api.cors_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["authorization", "content-type"],
        )
    if token is None:
        logger.warning("API token not set: /search and /metrics are open to whoever reaches them")
