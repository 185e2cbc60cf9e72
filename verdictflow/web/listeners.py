"""Every network listener closed by default: the rule each command applies before it binds.

A listener (``api``, ``console``, ``monitor``, the worker's ``/metrics``) may bind loopback
freely. Anything else (``0.0.0.0``, a LAN address, a host name that is not only loopback) is
refused at start, one line and exit 2, unless a token guards it, or ``--insecure`` says out
loud that an open listener is meant (a private network, a sidecar proxy doing the auth). The
console and the API serve answers, queries, tenants and evidence: an accidental
``--host 0.0.0.0`` must not publish them.

**Host header** (DNS rebinding: a web page whose name a hostile resolver points at 127.0.0.1
reaches a loopback listener from the user's browser): a listener bound to loopback answers only
requests whose ``Host`` is a loopback name (``localhost``, ``127.0.0.1``, ``[::1]``), the
address it was bound to, or a name in ``VERDICTFLOW_ALLOWED_HOSTS`` (comma-separated; ``*``
turns the check off); others get 400 ``invalid_host`` (:func:`host_checked`,
:func:`allowed_hosts`). A listener bound beyond loopback (opened on purpose, behind a token or
``--insecure``; reached by service names and probe IPs) checks ``Host`` only when
``VERDICTFLOW_ALLOWED_HOSTS`` names the hosts it serves.

The metrics servers (``monitor``, worker ``--metrics-port``) answer ``/metrics`` with
Prometheus' exposition and, when a token is set, ask for it as a bearer token (Prometheus'
``authorization: {credentials: ...}`` scrape setting).
"""

from __future__ import annotations

import hmac
import logging
import os
import socket
import threading
from collections.abc import Callable, Iterable
from ipaddress import ip_address
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from verdictflow.exceptions import VerdictflowError

logger = logging.getLogger(__name__)


class InsecureListenerError(VerdictflowError):
    """A listener asked to bind beyond loopback without a token or ``--insecure``."""


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback address (``localhost``, 127.0.0.0/8,
    ``::1``); the wildcard and unresolvable names are not."""
    if host == "localhost":
        return True
    try:
        return ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ip_address(info[4][0]).is_loopback for info in infos)


def check_bind(what: str, host: str, *, token: str | None, insecure: bool, token_env: str) -> None:
    """Refuse to bind ``host`` beyond loopback without a token unless ``insecure``."""
    if is_loopback(host) or token:
        return
    if insecure:
        logger.warning(
            "%s listens on %s without a token (--insecure): anyone who reaches it can read it",
            what,
            host,
        )
        return
    raise InsecureListenerError(
        f"{what} will not listen on {host} without a token: set {token_env}, bind 127.0.0.1, "
        "or pass --insecure to serve it open"
    )


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (0: a free port) for uvicorn, created with its
    protocol named (``IPPROTO_TCP``): asyncio turns Nagle's algorithm off (``TCP_NODELAY``) only
    on connections of such sockets, and a plain ``socket.socket()`` left every reply of the
    ingest and the console waiting ~40 ms for the client's delayed ACK (the gate's latency
    bench found it: 47 ms a reply at any rate, against 2.5 ms with the flag). Raises
    ``OSError`` when it cannot bind."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host.strip("[]"), port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock


def bearer_matches(header: bytes | str | None, token: bytes) -> bool:
    """``Bearer <token>`` (the scheme in any case, RFC 7235), compared in constant time."""
    if header is None:
        return False
    given = header.encode("latin-1") if isinstance(header, str) else header
    scheme, _, credentials = given.partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.lstrip(b" "), token)


#: Host names every loopback listener answers to.
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
ALLOWED_HOSTS_ENV = "VERDICTFLOW_ALLOWED_HOSTS"


def allowed_hosts(bind_host: str) -> frozenset[str] | None:
    """The ``Host`` names a listener bound to ``bind_host`` answers (lower case, no port), or
    None when the check is off (``VERDICTFLOW_ALLOWED_HOSTS=*``)."""
    extra = {h.strip().lower() for h in os.environ.get(ALLOWED_HOSTS_ENV, "").split(",")}
    if "*" in extra or (extra == {""} and not is_loopback(bind_host)):
        return None  # off, or a listener opened on purpose (a token or --insecure guards it)
    bound = (
        {bind_host.lower(), f"[{bind_host.lower()}]"}
        if bind_host not in ("0.0.0.0", "::")
        else set()
    )
    return frozenset(LOOPBACK_HOSTS | bound | (extra - {""}))


def host_allowed(header: bytes | str | None, allowed: frozenset[str] | None) -> bool:
    """Whether a request's ``Host`` header (``name[:port]``) names an allowed host."""
    if allowed is None:
        return True
    if header is None:
        return False
    host = header.decode("latin-1") if isinstance(header, bytes) else header
    host = host.strip().lower()
    name = host.rsplit(":", 1)[0] if not host.endswith("]") and host.count(":") == 1 else host
    if name.startswith("[") and "]:" in name:
        name = name.split("]:", 1)[0] + "]"
    return name in allowed


_INVALID_HOST = b'{"error": "invalid_host", "detail": "this listener does not serve that Host"}'


def host_checked(app: Any, bind_host: str) -> Any:
    """``app`` (ASGI) answering 400 ``invalid_host`` to requests for other hosts (module doc)."""
    allowed = allowed_hosts(bind_host)
    if allowed is None:
        return app

    async def checked(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            header = next((v for k, v in scope["headers"] if k == b"host"), None)
            if not host_allowed(header, allowed):
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                await send({"type": "http.response.start", "status": 400, "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(_INVALID_HOST)).encode()),
                ]})  # fmt: skip
                await send({"type": "http.response.body", "body": _INVALID_HOST})
                return
        await app(scope, receive, send)

    return checked


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _ThreadingServer6(_ThreadingServer):
    address_family = socket.AF_INET6


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes every few seconds are not worth a log line each."""


def serve_metrics(registry: Any, host: str, port: int, token: str | None) -> Any:
    """Serve ``registry`` on ``host:port`` from a daemon thread: ``/metrics`` (and ``/``),
    behind the bearer ``token`` when one is given, and an open ``/healthz`` for liveness
    probes (which cannot carry a secret). Returns the server (``shutdown()`` stops
    it); its port is ``server.server_port``."""
    from prometheus_client import make_wsgi_app

    app = make_wsgi_app(registry)
    expected = token.encode() if token else None
    allowed = allowed_hosts(host)

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not host_allowed(environ.get("HTTP_HOST"), allowed):
            start_response("400 Bad Request", [("Content-Type", "application/json")])
            return [_INVALID_HOST]
        if environ.get("PATH_INFO") == "/healthz":  # liveness probes carry no token
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [b"ok\n"]
        if expected is not None and not bearer_matches(environ.get("HTTP_AUTHORIZATION"), expected):
            start_response(
                "401 Unauthorized",
                [
                    ("Content-Type", "application/json"),
                    ("WWW-Authenticate", 'Bearer realm="verdictflow"'),
                ],
            )
            return [b'{"error": "unauthorized", "detail": "missing or wrong bearer token"}']
        result: Iterable[bytes] = app(environ, start_response)
        return result

    server_class = _ThreadingServer6 if ":" in host else _ThreadingServer
    server = make_server(
        host, port, guarded, server_class=server_class, handler_class=_QuietHandler
    )
    threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True).start()
    return server
