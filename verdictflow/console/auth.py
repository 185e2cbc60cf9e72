"""The console's guard: a token for everything that shows traffic, and headers that keep the
page from being framed, cached or fed foreign scripts (pure ASGI).

- **Token** (``VERDICTFLOW_CONSOLE_TOKEN``, else ``VERDICTFLOW_API_TOKEN``): when one is set,
  every path but ``/healthz``, the login page and the page's static assets (code, no data)
  needs either ``Authorization: Bearer <token>`` (scripts, curl) or the session cookie the
  login form sets (browsers: ``HttpOnly``, ``SameSite=Strict``, ``Secure`` over HTTPS or
  when ``VERDICTFLOW_CONSOLE_SECURE_COOKIE=true`` says a TLS-terminating proxy is in front).
  The cookie holds its issue time and an HMAC of it keyed by the token, never the token, so it
  is worthless elsewhere, it expires (``VERDICTFLOW_CONSOLE_SESSION_SECONDS``, 12 hours; the
  cookie's ``Max-Age`` says the same), ``POST /logout`` ends it (cleared in the browser and
  refused by this process from then on), and rotating the token ends every session.
  Unauthenticated, the page redirects to ``/login`` and everything else answers 401 in the
  API's error shape. The search proxy sends the API's token upstream only from behind this
  guard.
- **Named users** (``VERDICTFLOW_CONSOLE_USERS``, :mod:`~verdictflow.console.users`): when a
  users file is given, each user logs in (or sends ``Authorization: Bearer``) with their own
  token, and the shared token is not accepted. Their session cookie holds their name, its
  issue time and an HMAC keyed by their token's digest (re-tokening a user ends their
  sessions). The request's ``state`` carries the user (``vf_user``), whose role decides what
  they may do (a viewer cannot label).
- **Login throttle**: after :data:`MAX_FAILURES` wrong tokens from one client address within
  :data:`FAILURE_WINDOW_SECONDS`, ``POST /login`` answers 429 with ``Retry-After`` until the
  window has passed, whatever the token; each failure is logged with the client's address and
  count, never the token given.
- ``/healthz`` says only whether the console is ready, unless the caller is authenticated
  (then also what it has read and its lag): the request's ``state`` carries
  ``vf_authenticated``.
- **Headers**, on every response: a Content-Security-Policy that allows only the console's own
  scripts, styles and connections and no framing (``frame-ancestors 'none'``, and
  ``X-Frame-Options: DENY`` for older browsers), ``Cache-Control: no-store`` (answers and
  evidence must not stay in shared or browser caches), ``X-Content-Type-Options: nosniff`` and
  ``Referrer-Policy: no-referrer``.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

import orjson

from verdictflow.console.users import User, Users
from verdictflow.web.listeners import bearer_matches

logger = logging.getLogger(__name__)

SESSION_COOKIE = "vf_console"
#: How long a login lasts by default (``VERDICTFLOW_CONSOLE_SESSION_SECONDS``).
SESSION_SECONDS = 12 * 3600
#: Wrong tokens one client may send per window before ``POST /login`` answers 429.
MAX_FAILURES = 5
FAILURE_WINDOW_SECONDS = 60.0
#: Client addresses whose failures are remembered at most (the oldest are forgotten).
MAX_CLIENTS_TRACKED = 10_000
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


def session_value(token: str, issued: int) -> str:
    """The cookie value for a login at ``issued`` (Unix seconds): the time and an HMAC of it
    keyed by ``token``, so the cookie never carries the token and cannot be re-dated."""
    message = f"verdictflow-console-session/2:{issued}".encode()
    return f"{issued}.{hmac.new(token.encode(), message, hashlib.sha256).hexdigest()}"


def user_session_value(user: User, issued: int) -> str:
    """The cookie value of a named user's login: their name, the time and an HMAC of both keyed
    by their token's digest (which only the users file holds)."""
    message = f"verdictflow-console-session/3:{user.name}:{issued}".encode()
    mac = hmac.new(bytes.fromhex(user.token_sha256), message, hashlib.sha256).hexdigest()
    return f"{user.name}.{issued}.{mac}"


#: Who a console without a users file takes a caller with the shared token (or anyone, when
#: it has no token) to be: they may look and act, but labels need a named reviewer.
SHARED = User("console", "admin", "")


class ConsoleGuard:
    """ASGI middleware: security headers on every response; the token where one is set."""

    def __init__(
        self,
        app: Any,
        *,
        token: str | None,
        session_seconds: int = SESSION_SECONDS,
        secure_cookie: bool = False,
        clock: Callable[[], float] = time.time,
        users: Users | None = None,
    ) -> None:
        self.app = app
        self.users = users
        self.token = token
        self.expected = token.encode() if token else None
        self.session_seconds = session_seconds
        self.secure_cookie = secure_cookie
        self.clock = clock
        self._failures: dict[str, deque[float]] = {}
        self._ended: set[bytes] = set()  # sessions logged out (until they would expire)

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
        secure = self.secure_cookie or scope.get("scheme") == "https"
        if scope["method"] == "POST" and path == "/login":
            await self._login(scope, receive, with_headers, secure=secure)
            return
        if scope["method"] == "POST" and path == "/logout":
            await self._logout(scope, with_headers, secure=secure)
            return
        user = self.user(scope)
        authenticated = user is not None
        scope.setdefault("state", {})["vf_authenticated"] = authenticated
        scope["state"]["vf_user"] = user
        if authenticated or path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
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

    def user(self, scope: Any) -> User | None:
        """Who the request comes from: a named user, :data:`SHARED`, or None (refused)."""
        if self.users is not None:
            return self._named_user(dict(scope["headers"]))
        if self.expected is None or self.authenticated(scope):
            return SHARED
        return None

    def _named_user(self, headers: dict[bytes, bytes]) -> User | None:
        assert self.users is not None
        scheme, _, credentials = headers.get(b"authorization", b"").partition(b" ")
        if scheme.lower() == b"bearer":
            return self.users.by_token(credentials.strip())
        given = _cookie(headers.get(b"cookie", b""), SESSION_COOKIE)
        if given is None or given in self._ended:
            return None
        name, issued_text = [*given.split(b".", 2), b"", b""][:2]
        user = self.users.by_name.get(name.decode("utf-8", "replace"))
        if user is None or not issued_text.isdigit():
            return None
        issued = int(issued_text)
        expected = user_session_value(user, issued).encode()
        age = self.clock() - issued
        if hmac.compare_digest(given, expected) and -60 <= age < self.session_seconds:
            return user
        return None

    def authenticated(self, scope: Any) -> bool:
        assert self.expected is not None
        headers = dict(scope["headers"])
        if bearer_matches(headers.get(b"authorization"), self.expected):
            return True
        given = _cookie(headers.get(b"cookie", b""), SESSION_COOKIE)
        return given is not None and self._valid_session(given)

    def _valid_session(self, given: bytes) -> bool:
        assert self.token is not None
        issued_text, _, _ = given.partition(b".")
        if not issued_text.isdigit() or given in self._ended:
            return False
        issued = int(issued_text)
        expected = session_value(self.token, issued).encode()
        age = self.clock() - issued
        return hmac.compare_digest(given, expected) and -60 <= age < self.session_seconds

    def _client(self, scope: Any) -> str:
        client = scope.get("client")
        return str(client[0]) if client else "unknown"

    def _throttled(self, client: str) -> float:
        """Seconds until ``client`` may try again (0: now)."""
        now = self.clock()
        failures = self._failures.get(client)
        while failures and now - failures[0] >= FAILURE_WINDOW_SECONDS:
            failures.popleft()
        if not failures or len(failures) < MAX_FAILURES:
            return 0.0
        return FAILURE_WINDOW_SECONDS - (now - failures[0])

    def _failed(self, client: str) -> int:
        if client not in self._failures and len(self._failures) >= MAX_CLIENTS_TRACKED:
            self._failures.pop(next(iter(self._failures)))
        failures = self._failures.setdefault(client, deque())
        failures.append(self.clock())
        return len(failures)

    async def _login(self, scope: Any, receive: Any, send: Any, *, secure: bool) -> None:
        """The login form's POST: the token in a urlencoded body (at most 4 KiB)."""
        if self.users is None and (self.expected is None or self.token is None):
            await _respond(send, 303, b"", [(b"location", b"/")])
            return
        client = self._client(scope)
        wait = self._throttled(client)
        if wait > 0:
            body = orjson.dumps(
                {"error": "too_many_attempts", "detail": "too many failed logins; wait and retry"}
            )
            headers = [(b"content-type", b"application/json")]
            headers.append((b"retry-after", str(max(1, round(wait))).encode()))
            await _respond(send, 429, body, headers)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > 4096 or not message.get("more_body", False):
                break
        given = parse_qs(body[:4096].decode("utf-8", "replace")).get("token", [""])[0]
        named = self.users.by_token(given.encode()) if self.users is not None else None
        if named is None and (
            self.users is not None
            or self.expected is None
            or not hmac.compare_digest(given.encode(), self.expected)
        ):
            count = self._failed(client)
            logger.warning(
                "console login failed from %s (%d in %.0f s)", client, count, FAILURE_WINDOW_SECONDS
            )
            await _respond(send, 303, b"", [(b"location", b"/login?failed=1")])
            return
        self._failures.pop(client, None)
        issued = int(self.clock())
        if named is not None:
            value = user_session_value(named, issued)
            logger.info("console login: %s (%s) from %s", named.name, named.role, client)
        else:
            assert self.token is not None
            value = session_value(self.token, issued)
        cookie = (
            f"{SESSION_COOKIE}={value}; Path=/; Max-Age={self.session_seconds}; HttpOnly; "
            "SameSite=Strict" + ("; Secure" if secure else "")
        )
        await _respond(send, 303, b"", [(b"location", b"/"), (b"set-cookie", cookie.encode())])

    async def _logout(self, scope: Any, send: Any, *, secure: bool) -> None:
        """End the session: refused here from now on, and cleared in the browser."""
        given = _cookie(dict(scope["headers"]).get(b"cookie", b""), SESSION_COOKIE)
        if given is not None and (
            (self.users is not None and self._named_user(dict(scope["headers"])) is not None)
            or (self.users is None and self.token is not None and self._valid_session(given))
        ):
            self._ended.add(given)
        cookie = f"{SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict" + (
            "; Secure" if secure else ""
        )
        await _respond(send, 303, b"", [(b"location", b"/login"), (b"set-cookie", cookie.encode())])


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
