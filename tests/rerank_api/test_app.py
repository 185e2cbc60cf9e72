"""The /search app over artifacts, through httpx with its lifespan running."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import faiss
import httpx
import numpy as np
import pytest
from asgi_lifespan import LifespanManager

from tests.support.api_client import close_all, open_client
from tests.support.neural import needs_neural
from tests.support.retrieval_corpus import TEXTS
from verdictflow.evaluators.embedding import embed_texts
from verdictflow.rerank_api import ApiSettings, create_app
from verdictflow.rerank_api.artifacts import ArtifactError


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "vectors.npz"
    np.savez(
        path,
        doc_ids=np.array(list(TEXTS)),
        concept_texts=np.array(list(TEXTS.values())),
        tmd_codes=np.array(["t1", "t2", "t3", "t4", "t5"]),
        lane_indices=np.array([0, 1, 2, 3, 4]),
    )
    return path


@pytest.fixture
def quality_file(tmp_path: Path) -> Path:
    path = tmp_path / "id_quality.jsonl"
    rows = [("ocean-a", 0.0), ("ocean-b", 0.2), ("ocean-c", 1.0)]
    path.write_text(
        "".join(f'{{"doc_id": "{d}", "quality": {q}, "features": {{}}}}\n' for d, q in rows)
    )
    return path


Client = Callable[..., Any]


@pytest.fixture
async def client_for() -> AsyncIterator[Callable[[ApiSettings], Any]]:
    managers: list[LifespanManager] = []

    async def make(settings: ApiSettings) -> httpx.AsyncClient:
        return await open_client(settings, managers)

    yield make
    await close_all(managers)


def settings(npz: Path, **kw: Any) -> ApiSettings:
    """Artifact-mode settings; the heap is not frozen unless asked for (``gc_freeze``): the
    freeze starts with a full collection, ~1 s in a test process that holds spaCy, WordNet and
    torch, 28 s of this module's 65 s (2026-11-30). The freeze itself is tested once, in
    :func:`test_serving_tunes_the_interpreter_and_restores_it`."""
    return ApiSettings(source="artifacts", npz=npz, **{"gc_freeze": False, **kw})


QUERY = {"q": "Which ocean is the largest?", "top_k": 3}


async def test_response_has_the_spec_shape_and_formula(
    corpus: Path, quality_file: Path, client_for: Any
) -> None:
    client = await client_for(settings(corpus, quality=quality_file))
    r = await client.post("/search", json={**QUERY, "lane": "L1_FACTOID"})
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"lane", "mode", "items", "trace_id"}
    assert body["lane"] == "L1_FACTOID"
    assert body["mode"] == "DENSE"
    assert body["trace_id"]
    item = body["items"][0]
    assert set(item) == {
        "id", "doc_id", "score", "quality", "final_score", "concept_text", "tmd_code",
        "lane_index",
    }  # fmt: skip
    for it in body["items"]:
        assert it["final_score"] == pytest.approx(0.85 * it["score"] + 0.15 * it["quality"])
        assert it["concept_text"] == TEXTS[it["doc_id"]]
    by_id = {it["doc_id"]: it for it in body["items"]}
    assert by_id["ocean-a"]["tmd_code"] == "t1"
    assert by_id["ocean-a"]["lane_index"] == 0
    finals = [it["final_score"] for it in body["items"]]
    assert finals == sorted(finals, reverse=True)


async def test_weights_change_the_ordering_gate_4(
    corpus: Path, quality_file: Path, client_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Acceptance gate 4: LNSP_W_COS / LNSP_W_QUALITY change the order (env and per request)."""
    q = embed_texts([QUERY["q"]])[0]
    cos = {d: float(v @ q) for d, v in zip(TEXTS, embed_texts(list(TEXTS.values())), strict=True)}
    # The corpus is built so that the cosine order and the quality order disagree.
    assert cos["ocean-a"] > cos["ocean-c"]
    monkeypatch.setenv("LNSP_W_COS", "1.0")
    monkeypatch.setenv("LNSP_W_QUALITY", "0.0")
    cos_only = await client_for(settings(corpus, quality=quality_file))
    monkeypatch.setenv("LNSP_W_COS", "0.5")
    monkeypatch.setenv("LNSP_W_QUALITY", "0.5")
    blended = await client_for(settings(corpus, quality=quality_file))
    order_cos = [i["doc_id"] for i in (await cos_only.post("/search", json=QUERY)).json()["items"]]
    order_mix = [i["doc_id"] for i in (await blended.post("/search", json=QUERY)).json()["items"]]
    assert order_cos == sorted(order_cos, key=lambda d: (-cos[d], d))
    assert order_cos.index("ocean-a") < order_cos.index("ocean-c")
    assert order_mix[0] == "ocean-c"  # quality 1.0 lifts it over better cosines
    per_request = await cos_only.post("/search", json={**QUERY, "w_cos": 0.5, "w_quality": 0.5})
    assert [i["doc_id"] for i in per_request.json()["items"]] == order_mix


async def test_overfetch_lets_quality_lift_a_document_from_beyond_top_k(
    corpus: Path, tmp_path: Path, client_for: Any
) -> None:
    quality = tmp_path / "q.jsonl"
    quality.write_text('{"doc_id": "kafka", "quality": 1.0}\n')
    client = await client_for(settings(corpus, quality=quality))
    body = {"q": "Which ocean is the largest?", "top_k": 1, "w_cos": 0.0, "w_quality": 1.0}
    items = (await client.post("/search", json=body)).json()["items"]
    assert [i["doc_id"] for i in items] == ["kafka"]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"q": "", "top_k": 3}, "q:"),
        ({"q": "   ", "top_k": 3}, "non-whitespace"),
        ({"q": "x" * 2001, "top_k": 3}, "at most 2000 characters"),
        ({"q": "ocean", "top_k": 0}, "top_k"),
        ({"q": "ocean", "top_k": 101}, "top_k: at most 100"),
        ({"q": "ocean", "top_k": 10**12}, "top_k: at most 100"),  # the enforced limit
        ({"q": "ocean", "top_k": "5"}, "top_k: Input should be a valid integer"),
        ({"q": "ocean", "top_k": True}, "top_k: Input should be a valid integer"),
        ({"q": "ocean", "top_k": 2.5}, "top_k: Input should be a valid integer"),
        ({"q": "ocean", "topk": 5}, "topk: Extra inputs"),
        ({"q": "ocean", "w_cos": 1.5}, "w_cos: at most 1.0"),
        ({"q": "ocean", "w_cos": True}, "w_cos: Input should be a valid number"),
        ({"q": "ocean", "w_quality": False}, "w_quality: Input should be a valid number"),
        ({"q": "ocean", "w_cos": "0.5"}, "w_cos: Input should be a valid number"),
        ({"q": "ocean", "lane": 7}, "lane: Input should be a valid string"),
        ({"q": "\u3000\t"}, "q: must contain some non-whitespace text"),
        ({"q": "ocean", "mode": "neural"}, "mode"),
        ({"top_k": 3}, "q: Field required"),
    ],
)
async def test_bad_requests_are_422_with_a_clear_message(
    corpus: Path, client_for: Any, body: dict[str, Any], fragment: str
) -> None:
    client = await client_for(settings(corpus))
    r = await client.post("/search", json=body)
    assert r.status_code == 422
    assert set(r.json()) == {"error", "detail"}
    assert r.json()["error"] == "invalid_request"
    assert fragment in r.json()["detail"]


async def test_an_integral_top_k_is_an_integer_as_in_json_schema(
    corpus: Path, client_for: Any
) -> None:
    client = await client_for(settings(corpus))
    r = await client.post("/search", json={"q": "ocean", "top_k": 2.0, "w_cos": 1, "w_quality": 0})
    assert r.status_code == 200
    assert len(r.json()["items"]) == 2


async def test_limits_come_from_the_settings_in_schema_and_enforcement(
    corpus: Path, client_for: Any
) -> None:
    """One source of truth: the OpenAPI document states the configured limits, and exactly
    those are enforced (one over is refused, naming the limit; the limit itself is served)."""
    client = await client_for(settings(corpus, max_query_chars=40, max_top_k=3))
    doc = (await client.get("/openapi.json")).json()
    body = doc["components"]["schemas"]["SearchRequest"]["properties"]
    assert body["q"]["maxLength"] == 40
    assert body["top_k"]["maximum"] == 3
    assert body["top_k"]["default"] == 3  # the default never exceeds the limit
    assert (await client.post("/search", json={"q": "o" * 40, "top_k": 3})).status_code == 200
    over = await client.post("/search", json={"q": "o" * 41})
    assert (over.status_code, over.json()["detail"]) == (422, "q: at most 40 characters")
    over = await client.post("/search", json={"q": "ocean", "top_k": 4})
    assert (over.status_code, over.json()["detail"]) == (422, "top_k: at most 3")
    items = (await client.post("/search", json={"q": "ocean"})).json()["items"]
    assert len(items) == 3


def test_limit_settings_are_bounded_by_the_model_ceilings() -> None:
    from pydantic import ValidationError

    from verdictflow.rerank_api.schemas import MAX_QUERY_CHARS, MAX_TOP_K

    with pytest.raises(ValidationError):
        ApiSettings(max_top_k=MAX_TOP_K + 1)
    with pytest.raises(ValidationError):
        ApiSettings(max_query_chars=MAX_QUERY_CHARS + 1)


async def test_lexical_and_hybrid_modes_rank_the_keyword_match_first(
    corpus: Path, client_for: Any
) -> None:
    client = await client_for(settings(corpus, mode="lexical"))
    for mode in ("LEXICAL", "HYBRID"):
        r = await client.post("/search", json={"q": "banana flour", "mode": mode.lower()})
        body = r.json()
        assert body["mode"] == mode
        assert body["items"][0]["doc_id"] == "bread"
        assert 0.0 < body["items"][0]["score"] <= 1.0
    default = (await client.post("/search", json={"q": "partitions log"})).json()
    assert default["mode"] == "LEXICAL"
    assert default["items"][0]["doc_id"] == "kafka"


@needs_neural
async def test_minilm_finds_a_paraphrase_without_shared_words(
    corpus: Path, client_for: Any
) -> None:
    query = {"q": "How do I bake a sweet loaf from overripe fruit?", "top_k": 1}
    hashing = await client_for(settings(corpus))
    hashed = (await hashing.post("/search", json={**query, "top_k": 5})).json()["items"]
    assert all(item["score"] == 0.0 for item in hashed)  # no shared word: blind
    neural = await client_for(settings(corpus, embedder="sentence-transformers", fusion="combsum"))
    dense = (await neural.post("/search", json=query)).json()["items"][0]
    assert dense["doc_id"] == "bread"
    assert dense["score"] > 0.3
    hybrid = await neural.post("/search", json={**query, "mode": "hybrid"})
    assert hybrid.json()["items"][0]["doc_id"] == "bread"
    health = (await neural.get("/healthz")).json()
    assert health["embedder"].startswith("vf-st/3:all-MiniLM-L6-v2:dim=384:weights=")
    # queries go through the int8 encoder by default; documents keep the fp32 vectors
    assert health["query_encoder"].startswith(health["embedder"] + ":int8=")
    assert health["query_batches"] is None  # micro-batching is off by default


@needs_neural
async def test_queries_arriving_together_share_a_pass_and_rank_as_alone(
    corpus: Path, client_for: Any
) -> None:
    """fp32 micro-batches give each query its lone vector: concurrent searches rank exactly as
    the same searches one after another."""
    client = await client_for(
        settings(
            corpus,
            embedder="sentence-transformers",
            query_encoder="fp32",
            query_cache=0,
            query_batch_max=16,
            query_batch_workers=1,
        )
    )
    queries = [f"{word} question number {i}" for i, word in
               enumerate(["ocean", "bread", "kafka", "tides", "fruit", "streams"] * 4)]  # fmt: skip
    alone = [(await client.post("/search", json={"q": q, "top_k": 5})).json() for q in queries]
    together = await asyncio.gather(
        *(client.post("/search", json={"q": q, "top_k": 5}) for q in queries)
    )
    for one, many in zip(alone, together, strict=True):
        assert [i["doc_id"] for i in one["items"]] == [i["doc_id"] for i in many.json()["items"]]
        assert [i["score"] for i in one["items"]] == [i["score"] for i in many.json()["items"]]
    batches = (await client.get("/healthz")).json()["query_batches"]
    assert batches["queries"] == 2 * len(queries)
    assert batches["largest"] > 1, batches  # the concurrent ones shared passes


async def test_healthz_and_metrics_report_state(
    corpus: Path, quality_file: Path, client_for: Any
) -> None:
    client = await client_for(settings(corpus, quality=quality_file))
    await client.post("/search", json=QUERY)
    health = (await client.get("/healthz")).json()
    assert health["ready"] is True
    assert health["source"] == "artifacts"
    assert health["index_size"] == 5
    assert health["quality_rows"] == 3
    assert health["consumer_lag"] == 0
    assert health["index_kind"] == "flat"
    text = (await client.get("/metrics")).text
    assert 'vf_search_requests_total{mode="dense",status="200"} 1.0' in text
    assert "vf_api_index_documents 5.0" in text
    stats = (await client.get("/stats/latency")).json()
    assert stats["request"]["count"] == 1
    assert stats["blend"]["p99_ms"] >= 0


async def test_vectors_and_an_index_file_from_the_npz_are_used(
    tmp_path: Path, client_for: Any
) -> None:
    vectors = np.eye(8, 384, dtype=np.float32)
    ids = np.array([f"v{i}" for i in range(8)])
    path = tmp_path / "v.npz"
    np.savez(path, doc_ids=ids, concept_texts=np.array(["t"] * 8), vectors=vectors)
    index = faiss.IndexFlatIP(384)
    index.add(vectors)
    faiss.write_index(index, str(tmp_path / "v.index"))
    client = await client_for(settings(path, index=tmp_path / "v.index"))
    # No text overlap: the query "t" embeds to a hashed vector; the ranking comes from vectors.
    health = (await client.get("/healthz")).json()
    assert health["index_kind"] == "file"
    assert health["index_size"] == 8


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"doc_ids": np.array(["a"])}, "missing array 'concept_texts'"),
        (
            {
                "doc_ids": np.array(["a"]),
                "concept_texts": np.array(["x"]),
                "vectors": np.ones((2, 3)),
            },
            "vectors has shape",
        ),
    ],
)
async def test_bad_artifacts_stop_the_start_with_a_clear_error(
    tmp_path: Path, arrays: dict[str, Any], message: str
) -> None:
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(ArtifactError, match=message):
        async with LifespanManager(create_app(settings(path))):
            pass


async def test_quality_out_of_range_in_the_artifact_is_refused(
    corpus: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"doc_id": "ocean-a", "quality": 1.7}\n')
    with pytest.raises(ArtifactError, match=r"q.jsonl:1: quality 1.7 is not in \[0, 1\]"):
        async with LifespanManager(create_app(settings(corpus, quality=bad))):
            pass


async def test_quality_npz_is_read(corpus: Path, tmp_path: Path, client_for: Any) -> None:
    qpath = tmp_path / "id_quality.npz"
    np.savez(qpath, doc_ids=np.array(["bread"]), quality=np.array([0.9]))
    client = await client_for(settings(corpus, quality=qpath))
    items = (await client.post("/search", json={"q": "banana bread"})).json()["items"]
    assert items[0]["doc_id"] == "bread"
    assert items[0]["quality"] == pytest.approx(0.9)


async def test_serving_tunes_the_interpreter_and_restores_it(corpus: Path) -> None:
    """Short GIL switch interval and a frozen heap while serving (tail latency), undone after."""
    import gc
    import sys

    before = sys.getswitchinterval()
    gc.unfreeze()
    tuned = settings(corpus, gil_switch_interval_ms=0.25, gc_freeze=True)
    async with LifespanManager(create_app(tuned)):
        assert sys.getswitchinterval() == pytest.approx(0.00025)
        assert gc.get_freeze_count() > 1000  # the loaded state is in the permanent generation
    assert sys.getswitchinterval() == before
    assert gc.get_freeze_count() == 0
    async with LifespanManager(create_app(settings(corpus, gc_freeze=False))):
        assert gc.get_freeze_count() == 0


async def test_searches_past_the_waiting_bound_are_refused_at_once(corpus: Path) -> None:
    """One search thread and one waiting place: with the thread held, one more request waits
    and the next ones get 503 ``overloaded`` with Retry-After, without waiting; once the thread
    is free the held and the waiting searches are answered and new ones are taken again."""
    import threading

    from verdictflow.rerank_api import create_app

    app = create_app(settings(corpus, search_threads=1, max_waiting_searches=1))
    async with LifespanManager(app, startup_timeout=60) as manager:
        client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=manager.app), base_url="http://t"
        )
        retriever = app.state.vf.retriever
        search, release, entered = retriever.search, threading.Event(), threading.Event()

        def held_search(*args: Any, **kwargs: Any) -> Any:
            entered.set()
            release.wait(30)
            return search(*args, **kwargs)

        retriever.search = held_search
        first = asyncio.create_task(client.post("/search", json=QUERY))
        assert await asyncio.to_thread(entered.wait, 10)
        second = asyncio.create_task(client.post("/search", json=QUERY))
        for _ in range(1000):  # the second request reaches the handler and waits
            if app.state.vf.in_flight == 2:
                break
            await asyncio.sleep(0.01)
        assert app.state.vf.in_flight == 2
        refused = [await client.post("/search", json=QUERY) for _ in range(3)]
        assert [r.status_code for r in refused] == [503] * 3
        assert refused[0].json()["error"] == "overloaded"
        assert refused[0].headers["retry-after"] == "1"
        text = (await client.get("/metrics")).text
        assert "vf_search_in_flight 2.0" in text
        assert 'vf_search_requests_total{mode="dense",status="503"} 3.0' in text
        release.set()
        assert [(await t).status_code for t in (first, second)] == [200, 200]
        assert (await client.post("/search", json=QUERY)).status_code == 200
        stats = (await client.get("/stats/latency")).json()
        assert stats["request"]["count"] == 3  # refusals are counted, not timed
        await client.aclose()
