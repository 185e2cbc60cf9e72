"""The console behind a token (bearer or login cookie), its headers, body limit and error
shape, and the search proxy's forwarding to a real upstream HTTP server."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from asgi_lifespan import LifespanManager
from fastapi import FastAPI, Request

from verdictflow.console.app import ConsoleOptions, create_console_app
from verdictflow.console.auth import SESSION_COOKIE
from verdictflow.console.state import ConsoleState
from verdictflow.dev_servers import free_port
from verdictflow.settings import Settings

TOKEN = "s3cret-console"
API_TOKEN = "s3cret-api"


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A real HTTP server standing in for the API: records each /search it gets."""
    seen: list[dict[str, Any]] = []
    app = FastAPI()

    @app.post("/search")
    async def search(request: Request) -> dict[str, Any]:
        seen.append({"body": await request.json(), "auth": request.headers.get("authorization")})
        return {"lane": None, "mode": "dense", "items": [], "trace_id": "t"}

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        threading.Event().wait(0.02)
    yield f"http://127.0.0.1:{port}", seen
    server.should_exit = True
    thread.join(5)


@pytest.fixture
async def console(upstream: tuple[str, list[dict[str, Any]]]) -> AsyncIterator[httpx.AsyncClient]:
    options = ConsoleOptions(api_url=upstream[0], api_token=API_TOKEN, token=TOKEN)
    app = create_console_app(Settings(), options, state=ConsoleState(), follow=False)
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://console") as c:
            yield c


PROTECTED = [
    ("GET", "/api/stats"),
    ("GET", "/api/failures"),
    ("GET", "/api/stream"),
    ("GET", "/api/verdicts/abc"),
    ("POST", "/api/search"),
    ("GET", "/static/../api/stats"),
]


@pytest.mark.parametrize(("method", "path"), PROTECTED)
async def test_without_credentials_everything_with_traffic_is_401(
    console: httpx.AsyncClient, upstream: tuple[str, list[dict[str, Any]]], method: str, path: str
) -> None:
    before = len(upstream[1])
    res = await console.request(method, path, json={"q": "x"} if method == "POST" else None)
    assert res.status_code == 401
    assert res.json()["error"] == "unauthorized"
    assert len(upstream[1]) == before  # the API's token never left for an anonymous caller


async def test_the_page_redirects_to_the_login_and_the_probe_stays_open(
    console: httpx.AsyncClient,
) -> None:
    page = await console.get("/")
    assert (page.status_code, page.headers["location"]) == (303, "/login")
    assert (await console.get("/healthz")).status_code == 200
    assert (await console.get("/login")).status_code == 200
    assert (await console.get("/static/console.css")).status_code == 200


async def test_a_wrong_token_is_refused_and_the_right_one_sets_a_strict_cookie(
    console: httpx.AsyncClient,
) -> None:
    wrong = await console.post("/login", data={"token": "nope"})
    assert wrong.headers["location"] == "/login?failed=1"
    assert SESSION_COOKIE not in wrong.cookies
    right = await console.post("/login", data={"token": TOKEN})
    cookie = right.headers["set-cookie"]
    assert right.headers["location"] == "/"
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    assert TOKEN not in cookie
    assert (await console.get("/api/stats")).status_code == 200  # the client keeps the cookie
    assert (await console.get("/")).status_code == 200


async def test_a_bearer_token_opens_the_api_and_search_forwards_the_api_token(
    console: httpx.AsyncClient, upstream: tuple[str, list[dict[str, Any]]]
) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert (await console.get("/api/stats", headers=auth)).status_code == 200
    body = {"q": "penguins", "top_k": 3, "mode": "hybrid", "lane": "L1"}
    res = await console.post("/api/search", json=body, headers=auth)
    assert res.status_code == 200
    assert upstream[1][-1] == {"body": body, "auth": f"Bearer {API_TOKEN}"}


async def test_pages_carry_the_security_headers(console: httpx.AsyncClient) -> None:
    for res in (await console.get("/login"), await console.get("/api/stats")):
        assert "frame-ancestors 'none'" in res.headers["content-security-policy"]
        assert res.headers["x-frame-options"] == "DENY"
        assert res.headers["cache-control"] == "no-store"


async def test_bodies_are_limited_and_errors_do_not_echo_the_input(
    console: httpx.AsyncClient,
) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    big = await console.post(
        "/api/search", content=b'{"q": "' + b"x" * 200_000 + b'"}', headers=auth
    )
    assert big.status_code == 413
    assert len(big.content) < 200
    bad = await console.post("/api/search", json={"q": "x" * 3000, "top_k": "5"}, headers=auth)
    assert bad.status_code == 422
    assert set(bad.json()) == {"error", "detail"}
    assert "xxxx" not in bad.text
    window = await console.get("/api/stats", params={"window": 3600}, headers=auth)
    assert window.status_code == 422
    assert "at most 900" in window.json()["detail"]
    missing = await console.get("/api/nothing", headers=auth)
    assert (missing.status_code, missing.json()["error"]) == (404, "not_found")


def test_the_cli_refuses_to_listen_beyond_loopback_without_a_token(tmp_path) -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("VERDICTFLOW_")}
    for command in (["console"], ["api"], ["monitor"]):
        result = subprocess.run(
            [sys.executable, "-m", "verdictflow", *command, "--host", "0.0.0.0"],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert result.returncode == 2, (command, result.stderr)
        assert "without a token" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


@pytest.fixture
async def clocked(
    upstream: tuple[str, list[dict[str, Any]]],
) -> AsyncIterator[tuple[httpx.AsyncClient, list[float]]]:
    """A console whose guard reads a clock the test moves."""
    from verdictflow.console.auth import ConsoleGuard

    now = [1_800_000_000.0]
    options = ConsoleOptions(api_url=upstream[0], token=TOKEN, session_seconds=3600)
    app = create_console_app(Settings(), options, state=ConsoleState(), follow=False)
    for middleware in app.user_middleware:
        if middleware.cls is ConsoleGuard:
            middleware.kwargs["clock"] = lambda: now[0]
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app, client=("10.1.2.3", 5000))
        async with httpx.AsyncClient(transport=transport, base_url="http://console") as c:
            yield c, now


async def test_failed_logins_are_throttled_per_client_and_logged_without_the_token(
    clocked: tuple[httpx.AsyncClient, list[float]], caplog: pytest.LogCaptureFixture
) -> None:
    client, now = clocked
    for _ in range(5):
        assert (await client.post("/login", data={"token": "guess-xyz"})).status_code == 303
    throttled = await client.post("/login", data={"token": TOKEN})  # even the right one
    assert throttled.status_code == 429
    assert 1 <= int(throttled.headers["retry-after"]) <= 60
    assert "10.1.2.3" in caplog.text
    assert "guess-xyz" not in caplog.text
    now[0] += 61
    assert (await client.post("/login", data={"token": TOKEN})).headers["location"] == "/"


async def test_sessions_expire_and_logout_ends_them(
    clocked: tuple[httpx.AsyncClient, list[float]],
) -> None:
    client, now = clocked
    login = await client.post("/login", data={"token": TOKEN})
    assert "Max-Age=3600" in login.headers["set-cookie"]
    assert (await client.get("/api/stats")).status_code == 200
    now[0] += 3601
    assert (await client.get("/api/stats")).status_code == 401  # expired
    await client.post("/login", data={"token": TOKEN})
    stolen = client.cookies[SESSION_COOKIE]
    out = await client.post("/logout")
    assert (out.status_code, out.headers["location"]) == (303, "/login")
    assert "Max-Age=0" in out.headers["set-cookie"]
    client.cookies.set(SESSION_COOKIE, stolen)
    replayed = await client.get("/api/stats")
    assert replayed.status_code == 401  # a copy of the cookie is worthless after logout


async def test_the_cookie_is_secure_behind_a_tls_proxy_and_healthz_hides_details(
    upstream: tuple[str, list[dict[str, Any]]],
) -> None:
    options = ConsoleOptions(api_url=upstream[0], token=TOKEN, secure_cookie=True)
    app = create_console_app(Settings(), options, state=ConsoleState(), follow=False)
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://console") as c:
            assert (await c.get("/healthz")).json() == {"ready": True}
            auth = {"Authorization": f"Bearer {TOKEN}"}
            assert set((await c.get("/healthz", headers=auth)).json()) >= {"records", "lag"}
            login = await c.post("/login", data={"token": TOKEN})
            assert "; Secure" in login.headers["set-cookie"]
