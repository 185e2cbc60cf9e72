"""The console's routes over a state fed the sample's real records (no broker: ``follow=False``)."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator

import httpx
import orjson
import pytest
from asgi_lifespan import LifespanManager

from verdictflow.console.app import ConsoleOptions, create_console_app
from verdictflow.console.state import ConsoleState
from verdictflow.settings import Settings


def fed_state(lines: list[bytes], verdicts: list[bytes]) -> ConsoleState:
    state = ConsoleState("vf.")
    now = time.time()
    for line in lines:
        state.ingest("vf.answers", line, now)
    for raw in verdicts:
        state.ingest(f"vf.verdicts.{orjson.loads(raw)['kind']}", raw, now)
    return state


@pytest.fixture
async def client(
    sample_lines: list[bytes], sample_verdicts: list[bytes]
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_console_app(
        Settings(), ConsoleOptions(api_url="http://127.0.0.1:9"),  # nothing listens on port 9
        state=fed_state(sample_lines, sample_verdicts), follow=False,
    )  # fmt: skip
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://console") as c:
            yield c


async def test_page_and_its_assets_are_served_from_the_package(client: httpx.AsyncClient) -> None:
    page = await client.get("/")
    assert page.status_code == 200
    assert '<script src="/static/console.js">' in page.text
    assert 'data-search-enabled="true"' in page.text
    for asset, kind in [("console.js", "javascript"), ("console.css", "css")]:
        res = await client.get(f"/static/{asset}")
        assert res.status_code == 200
        assert kind in res.headers["content-type"]
    for path in ("/", "/static/console.js", "/static/console.css"):  # no CDN, nothing remote
        text = (await client.get(path)).text
        assert not re.search(r"(https?:)?//(?!www\.w3\.org/2000/svg)[a-z0-9.-]+\.[a-z]", text)


async def test_stats_failures_and_the_evidence_of_one(
    client: httpx.AsyncClient, sample_verdicts: list[bytes]
) -> None:
    stats = (await client.get("/api/stats", params={"window": 60})).json()
    assert sum(k["window"]["n"] for k in stats["kinds"]) == len(sample_verdicts)
    fails = (
        await client.get("/api/failures", params={"decision": "FAIL", "kind": "hallucination"})
    ).json()
    (lyon,) = [f for f in fails if f["input_id"] == "capital-3"]
    assert any(s["text"] == "Lyon" and s["status"] == "unsupported" for s in lyon["segments"])
    whole = await client.get(f"/api/verdicts/{lyon['verdict_id']}")
    assert whole.status_code == 200
    assert whole.content in sample_verdicts  # the record as it was on the topic
    missing = await client.get("/api/verdicts/nope")
    assert missing.status_code == 404
    assert missing.json()["error"] == "not_found"


async def test_bad_parameters_are_refused(client: httpx.AsyncClient) -> None:
    assert (await client.get("/api/stats", params={"window": 0})).status_code == 422
    assert (await client.get("/api/failures", params={"limit": 5000})).status_code == 422
    assert (await client.post("/api/search", json={"q": ""})).status_code == 422


async def test_search_says_why_when_the_api_is_unreachable(client: httpx.AsyncClient) -> None:
    res = await client.post("/api/search", json={"q": "capital of France", "top_k": 3})
    assert res.status_code == 502
    assert res.json()["error"] == "api_unreachable"


async def test_search_without_an_api_url_is_a_clear_503() -> None:
    app = create_console_app(Settings(), ConsoleOptions(), state=ConsoleState(), follow=False)
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://console") as c:
            res = await c.post("/api/search", json={"q": "x"})
            assert res.status_code == 503
            assert "--api-url" in res.json()["detail"]
            assert 'data-search-enabled="false"' in (await c.get("/")).text
            assert (await c.get("/healthz")).json()["ready"] is True
