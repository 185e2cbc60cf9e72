"""The guard every HTTP listener puts in front of its app: an optional bearer token and a
request body size limit (pure ASGI). The search API's settings for it (which paths are open,
CORS) are in :mod:`verdictflow.rerank_api.guards`.

- **Token** (``VERDICTFLOW_API_TOKEN``): when set, every path except the open ones needs
  ``Authorization: Bearer <token>`` (the scheme name in any case, RFC 7235), the token compared
  in constant time (``hmac.compare_digest``); otherwise 401 with ``WWW-Authenticate: Bearer``.
  ``/healthz`` is always open, because readiness probes carry no secrets (``/openapi.json``
  too); ``/metrics`` is open only with ``VERDICTFLOW_API_METRICS_PUBLIC=true`` (by default
  Prometheus sends the token). :func:`needs_token` tells the OpenAPI document the same.
- **Body size** (``VERDICTFLOW_API_MAX_BODY_BYTES``, 64 KiB): a larger body is refused with 413
  before the app parses it, on every path, whether or not the client declared a
  ``Content-Length``.

Pure ASGI rather than ``BaseHTTPMiddleware``, which re-wraps every request and response and
costs more than the search at hundreds of requests per second.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from typing import Any

import orjson

from verdictflow.web.listeners import bearer_matches

logger = logging.getLogger(__name__)

#: Readiness probes carry no secrets; the schema is public (it is in the repository anyway).
ALWAYS_OPEN = frozenset({"/healthz", "/openapi.json"})


class ApiGuard:
    """ASGI middleware enforcing the token and the body limit on HTTP requests."""

    def __init__(
        self,
        app: Any,
        *,
        token: str | None,
        max_body_bytes: int,
        open_paths: Collection[str] = ALWAYS_OPEN,
    ) -> None:
        self.app = app
        self.expected = token.encode() if token else None
        self.max_body_bytes = max_body_bytes
        self.open_paths = frozenset(open_paths)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if (
            self.expected is not None
            and scope["path"] not in self.open_paths
            and not bearer_matches(_header(scope, b"authorization"), self.expected)
        ):
            await _reply(
                send,
                401,
                "unauthorized",
                "missing or wrong bearer token",
                [(b"www-authenticate", b'Bearer realm="verdictflow"')],
            )
            return
        declared = _header(scope, b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body_bytes):
            await _reply(send, 413, "too_large", f"body over {self.max_body_bytes} bytes")
            return
        body, too_large = await self._read_body(receive)
        if too_large:
            await _reply(send, 413, "too_large", f"body over {self.max_body_bytes} bytes")
            return
        await self.app(scope, _replay(body, receive), send)

    async def _read_body(self, receive: Any) -> tuple[bytes, bool]:
        """The whole body, or (partial, True) once it exceeds the limit."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # disconnect: let the app see it
                return b"".join(chunks), False
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return b"", True
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks), False


def _header(scope: Any, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


def _replay(body: bytes, receive: Any) -> Any:
    """A ``receive`` that hands the app the body already read, then defers to the real one."""
    sent = False

    async def replayed() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def _reply(
    send: Any, status: int, error: str, detail: str, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    payload = orjson.dumps({"error": error, "detail": detail})
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
