"""The API's guard (bearer token, body size, CORS) and schemathesis over its OpenAPI schema:
whatever a client sends that the schema allows or not, the service never answers 5xx."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import schemathesis
from asgi_lifespan import LifespanManager
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from tests.unit.api_client import close_all, open_client
from verdictflow.rerank_api import ApiSettings, create_app

TOKEN = "s3cret-token"
QUERY = {"q": "Which ocean is the largest?", "top_k": 2}


def make_corpus(path: Path) -> Path:
    texts = {
        "ocean": "The Pacific Ocean is the largest ocean on Earth.",
        "bread": "Banana bread needs ripe bananas, flour, butter and sugar.",
        "kafka": "Kafka topics are split into partitions, each an ordered log.",
    }
    np.savez(path, doc_ids=np.array(list(texts)), concept_texts=np.array(list(texts.values())))
    return path


@pytest.fixture
async def client_for(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    managers: list[LifespanManager] = []
    npz = make_corpus(tmp_path / "v.npz")

    async def make(**kw: Any) -> httpx.AsyncClient:
        return await open_client(ApiSettings(source="artifacts", npz=npz, **kw), managers)

    yield make
    await close_all(managers)


async def test_without_a_token_everything_is_open(client_for):
    client = await client_for()
    assert (await client.post("/search", json=QUERY)).status_code == 200
    assert (await client.get("/metrics")).status_code == 200


async def test_token_guards_search_and_metrics_but_not_healthz(client_for):
    client = await client_for(token=TOKEN)
    refused = await client.post("/search", json=QUERY)
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"].startswith("Bearer")
    assert refused.json() == {"error": "unauthorized", "detail": "missing or wrong bearer token"}
    wrong = {"Authorization": f"Bearer {TOKEN}x"}
    assert (await client.post("/search", json=QUERY, headers=wrong)).status_code == 401
    assert (await client.get("/metrics", headers={"Authorization": TOKEN})).status_code == 401
    ok = {"Authorization": f"Bearer {TOKEN}"}
    assert (await client.post("/search", json=QUERY, headers=ok)).status_code == 200
    assert (await client.get("/metrics", headers=ok)).status_code == 200
    assert (await client.get("/healthz")).status_code == 200
    assert (await client.get("/openapi.json")).status_code == 200


async def test_metrics_can_be_left_public(client_for):
    client = await client_for(token=TOKEN, metrics_public=True)
    assert (await client.get("/metrics")).status_code == 200
    assert (await client.post("/search", json=QUERY)).status_code == 401


async def test_body_over_the_limit_is_413_declared_or_streamed(client_for):
    client = await client_for(max_body_bytes=1024)
    big = {"q": "ocean " * 400, "top_k": 2}
    declared = await client.post("/search", json=big)
    assert declared.status_code == 413
    assert declared.json()["error"] == "too_large"

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: chunked upload
        for _ in range(8):
            yield b" " * 200

    streamed = await client.post(
        "/search", content=chunks(), headers={"content-type": "application/json"}
    )
    assert streamed.status_code == 413
    small = await client.post("/search", json=QUERY)
    assert small.status_code == 200


async def test_cors_is_off_unless_origins_are_configured(client_for):
    preflight = {
        "Origin": "https://app.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
    }
    off = await client_for()
    response = await off.options("/search", headers=preflight)
    assert "access-control-allow-origin" not in response.headers
    on = await client_for(token=TOKEN, cors_origins=["https://app.example"])
    response = await on.options("/search", headers=preflight)
    assert response.status_code == 200  # a preflight carries no token
    assert response.headers["access-control-allow-origin"] == "https://app.example"
    other = await on.options("/search", headers={**preflight, "Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers


def test_no_request_gets_a_server_error(tmp_path: Path) -> None:
    """Every operation, 60 generated requests each (valid and not), with the guard on."""
    npz = make_corpus(tmp_path / "v.npz")
    app = create_app(ApiSettings(source="artifacts", npz=npz, token=TOKEN, max_body_bytes=4096))
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.path for op in operations} >= {"/search", "/healthz", "/metrics"}
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=60,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        )
        def call(case: Any) -> None:
            case.call_and_validate(
                headers={"Authorization": f"Bearer {TOKEN}"}, checks=[not_a_server_error]
            )

        call()
