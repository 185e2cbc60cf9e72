"""The API's guard (bearer token, body size, CORS), its error shapes, and its OpenAPI document
against its behaviour: the limits, statuses, bodies, media types and security it states are the
ones it enforces and answers, checked directly and by schemathesis with every check on."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import httpx
import numpy as np
import pytest
import schemathesis
from asgi_lifespan import LifespanManager
from hypothesis import HealthCheck, settings
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.config import SchemathesisConfig

from tests.support.api_client import close_all, open_client
from verdictflow.rerank_api import ApiSettings, create_app
from verdictflow.rerank_api.app import build_retriever
from verdictflow.rerank_api.retriever import DocMeta

TOKEN = "s3cret-token"
QUERY = {"q": "Which ocean is the largest?", "top_k": 2}


TEXTS = {
    "ocean": "The Pacific Ocean is the largest ocean on Earth.",
    "bread": "Banana bread needs ripe bananas, flour, butter and sugar.",
    "kafka": "Kafka topics are split into partitions, each an ordered log.",
}


def make_corpus(path: Path) -> Path:
    np.savez(path, doc_ids=np.array(list(TEXTS)), concept_texts=np.array(list(TEXTS.values())))
    return path


@pytest.fixture
async def client_for(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    managers: list[LifespanManager] = []
    npz = make_corpus(tmp_path / "v.npz")

    async def make(**kw: Any) -> httpx.AsyncClient:
        # No heap freeze: its full collection is ~1 s in a test process holding spaCy and
        # torch, and it is tested in test_app.py (test_serving_tunes_the_interpreter_...).
        settings = ApiSettings(source="artifacts", npz=npz, **{"gc_freeze": False, **kw})
        return await open_client(settings, managers)

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


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
async def test_the_bearer_scheme_name_is_case_insensitive(client_for, scheme):
    """RFC 7235: the auth scheme name is case-insensitive (the token itself is not)."""
    client = await client_for(token=TOKEN)
    ok = await client.post("/search", json=QUERY, headers={"Authorization": f"{scheme} {TOKEN}"})
    assert ok.status_code == 200
    swapped = {"Authorization": f"{scheme} {TOKEN.upper()}"}
    assert (await client.post("/search", json=QUERY, headers=swapped)).status_code == 401


@pytest.mark.parametrize(
    "header", ["Basic " + TOKEN, "Bearer", "Bearer ", "Bearer" + TOKEN, "Token " + TOKEN]
)
async def test_other_schemes_and_malformed_credentials_are_refused(client_for, header):
    client = await client_for(token=TOKEN)
    r = await client.post("/search", json=QUERY, headers={"Authorization": header})
    assert r.status_code == 401
    assert r.json()["error"] == "unauthorized"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"q": "caf\xe9"}', "not UTF-8"),  # Latin-1, not UTF-8
        ('{"q": "ocean"}'.encode("utf-16"), "not UTF-8"),  # json.loads would guess and accept
        (b"[" * 2000 + b"]" * 2000, "depth"),
        (b'{"q": "ocean", "w_cos": NaN}', "not valid JSON"),
        (b'{"q": "\\ud800"}', "surrogate"),  # a lone surrogate escape
        (b'{"q": "ocean",', "not valid JSON"),
    ],
)
async def test_unparsable_bodies_are_400_in_the_project_shape(client_for, body, reason):
    client = await client_for()
    r = await client.post("/search", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert set(r.json()) == {"error", "detail"}
    assert r.json()["error"] == "invalid_json"
    assert reason in r.json()["detail"]


async def test_routing_errors_are_in_the_project_shape(client_for):
    client = await client_for()
    missing = await client.get("/nowhere")
    assert (missing.status_code, missing.json()["error"]) == (404, "not_found")
    wrong_method = await client.get("/search")
    assert (wrong_method.status_code, wrong_method.json()["error"]) == (405, "method_not_allowed")
    assert wrong_method.headers["allow"] == "POST"


async def test_the_largest_valid_body_fits_the_default_body_limit(client_for):
    """With the default settings a schema-valid request is never a 413: every character of
    ``q`` and ``lane`` astral and ``\\u``-escaped (12 bytes each) still fits."""
    client = await client_for()
    astral = "\U0001f30a"
    body = {"q": astral * 2000, "top_k": 100, "lane": astral * 128, "mode": "hybrid",
            "w_cos": 0.123456789012345, "w_quality": 0.987654321098765}  # fmt: skip
    raw = json.dumps(body, ensure_ascii=True).encode()
    assert len(raw) > 25_000
    r = await client.post("/search", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 200


def openapi(**kw: Any) -> dict[str, Any]:
    return dict(create_app(ApiSettings(**kw)).openapi())


def test_openapi_limits_are_the_enforced_limits():
    defaults = ApiSettings()
    body = openapi()["components"]["schemas"]["SearchRequest"]
    assert body["properties"]["q"]["maxLength"] == defaults.max_query_chars == 2000
    assert body["properties"]["top_k"]["maximum"] == defaults.max_top_k == 100
    assert body["properties"]["top_k"]["type"] == "integer"
    assert body["additionalProperties"] is False
    for weight in ("w_cos", "w_quality"):
        number = body["properties"][weight]["anyOf"][0]
        assert (number["type"], number["minimum"], number["maximum"]) == ("number", 0, 1)
    configured = openapi(max_query_chars=500, max_top_k=20)["components"]["schemas"]
    assert configured["SearchRequest"]["properties"]["q"]["maxLength"] == 500
    assert configured["SearchRequest"]["properties"]["top_k"]["maximum"] == 20


def test_openapi_documents_every_status_with_the_error_model():
    doc = openapi(token=TOKEN)
    error = {"$ref": "#/components/schemas/Error"}
    assert doc["components"]["schemas"]["Error"]["required"] == ["error", "detail"]
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    statuses = {
        ("post", "/search"): {"200", "400", "401", "413", "422", "503"},
        ("get", "/healthz"): {"200", "413", "503"},
        ("get", "/metrics"): {"200", "401", "413"},
        ("get", "/stats/latency"): {"200", "401", "413", "422"},
    }
    for (method, path), codes in statuses.items():
        responses = doc["paths"][path][method]["responses"]
        assert set(responses) == codes, path
        for code in codes - {"200", "503"} if path == "/healthz" else codes - {"200"}:
            assert responses[code]["content"] == {"application/json": {"schema": error}}
    assert "WWW-Authenticate" in doc["paths"]["/search"]["post"]["responses"]["401"]["headers"]
    health = doc["paths"]["/healthz"]["get"]["responses"]["503"]["content"]["application/json"]
    assert health["schema"] == {"$ref": "#/components/schemas/Health"}


def test_openapi_metrics_is_plain_text():
    metrics = openapi()["paths"]["/metrics"]["get"]["responses"]["200"]
    assert list(metrics["content"]) == ["text/plain"]


def test_openapi_declares_the_bearer_scheme_where_the_token_is_required():
    doc = openapi(token=TOKEN)
    assert doc["components"]["securitySchemes"] == {
        "bearer": {"type": "http", "scheme": "bearer", "description": ANY}
    }
    secured = {
        path for path, ops in doc["paths"].items() for op in ops.values() if op.get("security")
    }
    assert secured == {"/search", "/metrics", "/stats/latency"}
    public_metrics = openapi(token=TOKEN, metrics_public=True)["paths"]["/metrics"]["get"]
    assert "security" not in public_metrics
    assert "401" not in public_metrics["responses"]
    open_doc = openapi()
    assert "securitySchemes" not in open_doc.get("components", {})
    assert all("401" not in op["responses"] for ops in open_doc["paths"].values()
               for op in ops.values())  # fmt: skip


def test_schemathesis_sees_every_operation_and_runs_every_check():
    labels = {result.ok().label for result in api_schema.get_all_operations()}
    assert labels == {"POST /search", "GET /healthz", "GET /metrics", "GET /stats/latency"}
    assert {check.__name__ for check in ALL_CHECKS} >= {
        "not_a_server_error", "status_code_conformance", "content_type_conformance",
        "response_headers_conformance", "response_schema_conformance",
        "negative_data_rejection", "positive_data_acceptance", "missing_required_header",
        "unsupported_method", "ignored_auth",
    }  # fmt: skip


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


def guarded_app() -> Any:
    """The app with the token on, over the corpus in memory (no files: built at import)."""
    retriever = build_retriever(GUARDED)
    retriever.load([DocMeta(doc_id, text) for doc_id, text in TEXTS.items()], None)
    return create_app(GUARDED, retriever=retriever)


# Loaded eagerly: schemathesis's fixture-based (lazy) loader does not work with pytest 9. The
# app's lifespan starts on the first request and lasts for the process; these settings leave
# the interpreter as it is (CPython's switch interval, no heap freeze).
GUARDED = ApiSettings(source="artifacts", token=TOKEN, gc_freeze=False, gil_switch_interval_ms=5)
# The token through schemathesis's auth config (not a header on each call), so that it knows
# where it sends the token and where a case leaves it out on purpose (negative data).
api_schema = schemathesis.openapi.from_asgi(
    "/openapi.json",
    guarded_app(),
    config=SchemathesisConfig.from_dict({"auth": {"openapi": {"bearer": {"bearer": TOKEN}}}}),
)
load_all_checks()
#: Every check schemathesis has (response status, content type, headers and body conformance,
#: positive data accepted, negative data rejected, auth enforced, unsupported methods, ...).
ALL_CHECKS = [check for check in CHECKS.get_all() if not isinstance(check, type)]


@api_schema.parametrize()
@settings(
    max_examples=40,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_every_response_conforms_to_the_schema(case: Any) -> None:
    """Every operation, with the token: examples, coverage (boundaries, missing and unknown
    fields, other methods) and fuzzing (valid and invalid data), with every check on."""
    case.call_and_validate(checks=ALL_CHECKS)
