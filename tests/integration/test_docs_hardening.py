"""Issue 33 through a worker and the API on one broker: a document whose vector overflows
float32 is dead-lettered by the worker and skipped (counted) by the API, which keeps following
and restarts ready; out-of-order versions leave ``/search`` and the last quality row agreeing;
a storm of 500 copies of one text costs at most (kdup + 1) re-scores per copy."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import orjson
import pytest
from asgi_lifespan import LifespanManager

from verdictflow.rerank_api import ApiSettings, create_app
from verdictflow.streams.replay import replay
from verdictflow.streams.tail import tail
from verdictflow.streams.topics import DEAD_LETTERS, DOC_QUALITY, DOC_QUALITY_INTERNAL

pytestmark = pytest.mark.broker

KDUP = 5
COPIES = 500
PENGUINS = "Emperor penguins breed in the Antarctic winter and huddle against the cold wind."


def doc(doc_id: str, text: str, **extra: Any) -> bytes:
    return orjson.dumps({"doc_id": doc_id, "text": text, **extra})


async def read_all(settings, topics: list[str], idle: float = 2.0) -> list[tuple[str, bytes]]:
    out = []
    async for topic, value in tail(topics, settings, from_beginning=True, timeout=idle):
        out.append((topic, value))
    return out


async def wait_for(predicate, timeout: float) -> float:
    started = time.monotonic()
    while not await predicate():
        assert time.monotonic() - started < timeout, f"not within {timeout} s"
        await asyncio.sleep(0.1)
    return time.monotonic() - started


async def search_ids(client: httpx.AsyncClient, q: str) -> dict[str, dict[str, Any]]:
    res = await client.post("/search", json={"q": q, "top_k": 20})
    assert res.status_code == 200, res.text
    return {item["doc_id"]: item for item in res.json()["items"]}


def test_bad_vectors_versions_and_a_duplicate_storm(settings_factory, worker_factory) -> None:
    settings = settings_factory(tier="lexical")
    worker = worker_factory(settings)
    huge = [3.5e38] + [0.0] * 383
    asyncio.run(
        replay(
            [
                doc("f32-overflow", "x", vector=huge),
                doc("normal", PENGUINS),
                doc("v1", PENGUINS + " Version five.", version=5),
                doc("v1", "stale", version=3),
                doc("v6", "Penguins of version two dive for krill.", version=2),
                orjson.dumps({"doc_id": "v6", "op": "delete", "version": 1}),
            ],
            "docs",
            settings,
        )
    )

    async def with_api() -> None:
        api = ApiSettings(source="topics")
        app = create_app(api, settings)
        async with LifespanManager(app, startup_timeout=60):
            client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")

            async def normal_found() -> bool:
                # 503 not_ready until the follower has caught up (under load, seconds): wait
                if (await client.get("/healthz")).status_code != 200:
                    return False
                return "normal" in await search_ids(client, "emperor penguins antarctic")

            await wait_for(normal_found, 120)
            health = (await client.get("/healthz")).json()
            assert health["ready"] is True
            assert health["error"] is None
            metrics = (await client.get("/metrics")).text
            assert 'reason="vector_not_finite",topic="docs"} 1.0' in metrics

            # versions: v1 keeps version 5's text, v6 survives its stale delete, and each
            # is ranked with the quality of its last doc-quality row
            async def quality_settled() -> bool:
                rows = [orjson.loads(v) for _, v in await read_all(settings, [DOC_QUALITY], 1.0)]
                last = {r["doc_id"]: r for r in rows}
                found = await search_ids(client, "penguins")
                return all(
                    d in last and d in found and found[d]["quality"] == last[d]["quality"]
                    for d in ("v1", "v6")
                )

            await wait_for(quality_settled, 120)
            found = await search_ids(client, "penguins")
            assert "Version five" in found["v1"]["concept_text"]
            rows = [orjson.loads(v) for _, v in await read_all(settings, [DOC_QUALITY], 1.0)]
            assert not any(r["doc_id"] == "v6" and r.get("deleted") for r in rows)
            assert all(r.get("doc_version") != 3 for r in rows if r["doc_id"] == "v1")
            await client.aclose()

    asyncio.run(with_api())
    asyncio.run(with_api())  # a restarted API re-reads the bad document and is ready again
    out = asyncio.run(read_all(settings, [DEAD_LETTERS]))
    dead = [orjson.loads(v) for _, v in out]
    assert [d["key"] for d in dead] == ["f32-overflow"]
    assert "float32" in dead[0]["error"]

    # the storm: 500 copies of one text, each with its quality row within 60 s
    started = time.monotonic()
    copies = [
        doc(f"copy-{i:03d}", "Click here to accept the cookie policy.") for i in range(COPIES)
    ]
    asyncio.run(replay(copies, "docs", settings))

    async def every_copy_rated() -> bool:
        rows = [orjson.loads(v) for _, v in await read_all(settings, [DOC_QUALITY], 1.0)]
        last = {r["doc_id"]: r for r in rows if r["doc_id"].startswith("copy-")}
        return len(last) == COPIES and all(
            r["features"]["dup_penalty"] == 1.0 for r in last.values()
        )

    asyncio.run(wait_for(every_copy_rated, 240))
    elapsed = time.monotonic() - started
    internal = asyncio.run(read_all(settings, [DOC_QUALITY_INTERNAL]))
    rescores = [m for _, v in internal if (m := orjson.loads(v))["t"] == "rescore"]
    assert len(rescores) <= (KDUP + 1) * COPIES, len(rescores)
    assert worker.proc.poll() is None, worker.log()[-3000:]
    print(f"storm: {COPIES} copies rated in {elapsed:.1f} s, {len(rescores)} re-score messages")
