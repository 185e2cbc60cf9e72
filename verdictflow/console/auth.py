"""The console's guard: a token for everything that shows traffic, and headers that keep the
page from being framed, cached or fed foreign scripts (pure ASGI).

- **Token** (``VERDICTFLOW_CONSOLE_TOKEN``, else ``VERDICTFLOW_API_TOKEN``): when one is set,
  every path but ``/healthz``, the login page and the page's static assets (code, no data)
  needs either ``Authorization: Bearer <token>`` (scripts, curl) or the session cookie the
  login form sets (browsers: ``HttpOnly``, ``SameSite=Strict``, ``Secure`` over HTTPS). The
  cookie holds an HMAC of the token, never the token, so it is worthless elsewhere, and
  rotating the token ends every session. Unauthenticated, the page redirects to ``/login`` and
  everything else answers 401 in the API's error shape. The search proxy sends the API's
  token upstream only from behind this guard.
- **Headers**, on every response: a Content-Security-Policy that allows only the console's own
  scripts, styles and connections and no framing (``frame-ancestors 'none'``, and
  ``X-Frame-Options: DENY`` for older browsers), ``Cache-Control: no-store`` (answers and
  evidence must not stay in shared or browser caches), ``X-Content-Type-Options: nosniff`` and
  ``Referrer-Policy: no-referrer``.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any
from urllib.parse import parse_qs

import orjson

from verdictflow.listeners import bearer_matches

SESSION_COOKIE = "vf_console"
#: Paths open without the token: readiness probes, the login form and the page's own code.
OPEN_PATHS = frozenset({"/healthz", "/login", "/favicon.ico"})
OPEN_PREFIXES = ("/static/",)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)


def session_value(token: str) -> str:
    """The cookie value for ``token``: an HMAC, so the cookie never carries the token."""
    return hmac.new(token.encode(), b"verdictflow-console-session/1", hashlib.sha256).hexdigest()


class ConsoleGuard:
    """ASGI middleware: security headers on every response; the token where one is set."""

    def __init__(self, app: Any, *, token: str | None) -> None:
        self.app = app
        self.token = token
        self.expected = token.encode() if token else None
        self.session = session_value(token).encode() if token else None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                names = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(n, v) for n, v in SECURITY_HEADERS if n not in names]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        path = scope["path"]
        if scope["method"] == "POST" and path == "/login":
            await self._login(receive, with_headers, secure=scope.get("scheme") == "https")
            return
        if self.expected is None or path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
            await self.app(scope, receive, with_headers)
            return
        if self.authenticated(scope):
            await self.app(scope, receive, with_headers)
            return
        if path == "/" and scope["method"] == "GET":
            await _respond(with_headers, 303, b"", [(b"location", b"/login")])
            return
        body = orjson.dumps(
            {"error": "unauthorized", "detail": "log in at /login or send the bearer token"}
        )
        await _respond(
            with_headers,
            401,
            body,
            [
                (b"content-type", b"application/json"),
                (b"www-authenticate", b'Bearer realm="verdictflow console"'),
            ],
        )

    def authenticated(self, scope: Any) -> bool:
        assert self.expected is not None
        assert self.session is not None
        headers = dict(scope["headers"])
        if bearer_matches(headers.get(b"authorization"), self.expected):
            return True
        given = _cookie(headers.get(b"cookie", b""), SESSION_COOKIE)
        return given is not None and hmac.compare_digest(given, self.session)

    async def _login(self, receive: Any, send: Any, *, secure: bool) -> None:
        """The login form's POST: the token in a urlencoded body (at most 4 KiB)."""
        if self.expected is None or self.session is None:
            await _respond(send, 303, b"", [(b"location", b"/")])
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > 4096 or not message.get("more_body", False):
                break
        given = parse_qs(body[:4096].decode("utf-8", "replace")).get("token", [""])[0]
        if not hmac.compare_digest(given.encode(), self.expected):
            await _respond(send, 303, b"", [(b"location", b"/login?failed=1")])
            return
        cookie = f"{SESSION_COOKIE}={self.session.decode()}; Path=/; HttpOnly; SameSite=Strict" + (
            "; Secure" if secure else ""
        )
        await _respond(send, 303, b"", [(b"location", b"/"), (b"set-cookie", cookie.encode())])


def _cookie(header: bytes, name: str) -> bytes | None:
    for part in header.split(b";"):
        key, _, value = part.strip().partition(b"=")
        if key == name.encode():
            return value
    return None


async def _respond(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


LOGIN_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>verdictflow console: log in</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/console.css">
</head>
<body>
<main class="login">
  <h1>verdictflow <span>console</span></h1>
  <form method="post" action="/login">
    <label>token <input id="token" name="token" type="password" autocomplete="current-password"
      required autofocus></label>
    <button type="submit">log in</button>
  </form>
  {message}
</main>
</body>
</html>
"""


def login_page(failed: bool) -> str:
    message = '<p id="login-failed" class="error">wrong token</p>' if failed else ""
    return LOGIN_PAGE.replace("{message}", message)
