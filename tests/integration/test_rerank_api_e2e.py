"""The /search service following real topics: documents and quality rows replayed through the
broker, then a quality update visible (new quality, new order) within one second."""

from __future__ import annotations

import time
from typing import Any

import httpx
import orjson
import pytest
from aiokafka import AIOKafkaProducer
from asgi_lifespan import LifespanManager

from verdictflow.rerank_api import ApiSettings, create_app
from verdictflow.settings import Settings
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.replay import make_producer
from verdictflow.streams.topics import DOC_QUALITY, DOCS

pytestmark = pytest.mark.broker

DOCS_TEXT = {
    "d-pacific": "The Pacific Ocean is the largest ocean on Earth.",
    "d-largest": "The largest ocean on Earth is the Pacific, covering a third of the planet.",
    "d-facts": "Ocean facts for kids: seas, tides, coral reefs, whales and the largest waves.",
    "d-bread": "Banana bread needs ripe bananas, flour, butter and sugar.",
    "d-kafka": "Kafka topics are split into partitions, each an ordered log.",
}
QUERY = {"q": "Which ocean is the largest?", "top_k": 3}


async def send(producer: AIOKafkaProducer, settings: Settings, topic: str, key: str, value: Any):
    raw = value if isinstance(value, bytes) else orjson.dumps(value)
    # One record per batch and awaited: the embedded broker misreports multi-record batches.
    await (await producer.send(settings.topic_prefix + topic, key=key.encode(), value=raw))


async def wait_for(predicate: Any, timeout: float, interval: float = 0.02) -> float:
    """Poll an async predicate until true; return the seconds it took, fail at the deadline."""
    start = time.monotonic()
    while not await predicate():
        if time.monotonic() - start > timeout:
            pytest.fail(f"condition not met within {timeout} s")
        await _sleep(interval)
    return time.monotonic() - start


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


async def test_replayed_state_then_a_quality_update_within_one_second(settings_factory) -> None:
    settings = settings_factory(partitions=2)
    await ensure_topics(settings, [DOCS, DOC_QUALITY])
    producer = make_producer(settings)
    await producer.start()
    try:
        for i, (doc_id, text) in enumerate(DOCS_TEXT.items()):
            lane = "L2" if doc_id == "d-kafka" else None
            await send(
                producer,
                settings,
                DOCS,
                doc_id,
                {"doc_id": doc_id, "text": text, "lane": lane, "version": 1, "ts": i},
            )
        await send(producer, settings, DOCS, "junk", b"{not json")
        await send(producer, settings, DOCS, "short", {"doc_id": "short", "vector": [0.1, 0.2]})
        for doc_id, q in (("d-pacific", 0.1), ("d-largest", 0.3), ("d-facts", 0.2)):
            row = {"doc_id": doc_id, "quality": q, "version": 1,
                   "features": {"text": 0.5, "graph": 0.0, "dup_penalty": 0.0}}  # fmt: skip
            await send(producer, settings, DOC_QUALITY, doc_id, row)
        await send(producer, settings, DOC_QUALITY, "x", {"doc_id": "x", "quality": "high"})

        api = ApiSettings(source="topics", w_cos=0.5, w_quality=0.5)
        app = create_app(api, settings)
        async with LifespanManager(app):
            client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")

            async def ready() -> bool:
                return (await client.get("/healthz")).status_code == 200

            await wait_for(ready, timeout=30)
            health = (await client.get("/healthz")).json()
            assert health["source"] == "topics"
            assert health["index_size"] == 5
            assert health["quality_rows"] == 3
            assert health["consumer_lag"] == 0

            async def search() -> list[dict[str, Any]]:
                r = await client.post("/search", json=QUERY)
                assert r.status_code == 200
                return list(r.json()["items"])

            before = await search()
            assert [i["doc_id"] for i in before] == ["d-pacific", "d-largest", "d-facts"]
            assert [i["quality"] for i in before] == [0.1, 0.3, 0.2]

            # The update: d-facts becomes the best document (and a stale row must not win).
            row_ts = time.time() - 120  # produced two minutes ago: the freshness gauge's basis
            row = {"doc_id": "d-facts", "quality": 1.0, "version": 2, "ts": row_ts,
                   "features": {"text": 1.0, "graph": 1.0, "dup_penalty": 0.0}}  # fmt: skip
            t0 = time.monotonic()
            await send(producer, settings, DOC_QUALITY, "d-facts", row)

            async def updated() -> bool:
                items = await search()
                return items[0]["doc_id"] == "d-facts" and items[0]["quality"] == 1.0

            await wait_for(updated, timeout=5)
            assert time.monotonic() - t0 <= 1.0, "the update took more than a second to show"
            stale = {**row, "quality": 0.0, "version": 1}
            await send(producer, settings, DOC_QUALITY, "d-facts", stale)

            # Documents: a delete and a new document are followed too.
            await send(producer, settings, DOCS, "d-pacific",
                       {"doc_id": "d-pacific", "op": "delete", "version": 2})  # fmt: skip
            new_doc = {"doc_id": "d-new", "text": "Which ocean is the largest? The Pacific."}
            await send(producer, settings, DOCS, "d-new", new_doc)

            async def docs_followed() -> bool:
                ids = [i["doc_id"] for i in await search()]
                return "d-pacific" not in ids and "d-new" in ids

            await wait_for(docs_followed, timeout=5)
            items = await search()
            assert items[0]["doc_id"] == "d-facts"
            assert items[0]["quality"] == 1.0

            lanes = await client.post("/search", json={"q": "kafka partitions", "lane": "L1"})
            assert "d-kafka" not in [i["doc_id"] for i in lanes.json()["items"]]
            lanes = await client.post("/search", json={"q": "kafka partitions", "lane": "L2"})
            assert lanes.json()["items"][0]["doc_id"] == "d-kafka"

            metrics = (await client.get("/metrics")).text
            assert 'vf_api_bad_records_total{reason="not_json",topic="docs"} 1.0' in metrics
            assert 'vf_api_bad_records_total{reason="vector_dimension",topic="docs"} 1.0' in metrics
            assert 'vf_api_bad_records_total{reason="schema",topic="doc-quality"} 1.0' in metrics
            assert 'vf_api_stale_records_total{topic="doc-quality"} 1.0' in metrics
            freshness = next(
                float(line.split()[1])
                for line in metrics.splitlines()
                if line.startswith("vf_api_quality_freshness_seconds ")
            )
            assert freshness == pytest.approx(time.time() - row_ts, abs=30)
            await client.aclose()
    finally:
        await producer.stop()


async def test_ready_is_reported_only_once_caught_up(settings_factory) -> None:
    """Readiness is reported, not assumed: every /healthz that says ready has every document,
    and a /search before that is a 503 ``not_ready``, never a ranking of a partial corpus."""
    n = 1000
    settings = settings_factory(partitions=1)
    await ensure_topics(settings, [DOCS, DOC_QUALITY])
    producer = make_producer(settings)
    await producer.start()
    try:
        for i in range(n):
            await send(producer, settings, DOCS, f"d{i}", {"doc_id": f"d{i}", "text": f"doc {i}"})
    finally:
        await producer.stop()
    app = create_app(ApiSettings(source="topics"), settings)
    samples: list[tuple[int, bool, int]] = []
    async with LifespanManager(app):
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")

        async def ready() -> bool:
            # /healthz first: readiness only ever goes from false to true, so a search after a
            # ready health check must be served (the reverse order races with catching up).
            health = await client.get("/healthz")
            search = await client.post("/search", json={"q": "doc 7"})
            body = health.json()
            samples.append((search.status_code, body["ready"], body["index_size"]))
            assert health.status_code == (200 if body["ready"] else 503)
            if search.status_code == 503:
                assert search.json()["error"] == "not_ready"
                assert not body["ready"]
            return bool(body["ready"])

        await wait_for(ready, timeout=30, interval=0.0)
        await client.aclose()
    assert samples[-1][1:] == (True, n)
    for status, _, _ in samples[:-1]:
        assert status in (200, 503)
    assert all(size == n for _, is_ready, size in samples if is_ready)
