"""The inline gate's own behaviour (issue 46), through the real ingest app in process: options
parsed or refused with the project's error shape, a timeout that DEFERs ``gate_timeout`` (never a
PASS, never under the stream's verdict id), a failing scorer that DEFERs ``gate_error``, a
streamed answer's chunks scored as what is known, and a gate whose broker is dead that still
answers and says the event was not queued. That the gate's verdicts are the stream's, byte for
byte, is ``tests/integration/test_ingest.py``'s (a real broker and worker)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import orjson
import pytest
from fastapi.testclient import TestClient

from tests.ingest.test_hardening import RecordingProducer
from verdictflow.evaluators.answer_verdicts import verdict_id
from verdictflow.ingest import app as ingest_app
from verdictflow.ingest import gate as gate_module
from verdictflow.ingest.app import create_ingest_app
from verdictflow.ingest.gate import check_options
from verdictflow.settings import Settings

EVENT = {
    "id": "g1",
    "query": "How long is the Nile?",
    "answer": "The Nile is about 6,650 km long and it is the longest river.",
    "contexts": ["The Nile is about 6,650 km long.", "The Amazon is about 6,400 km long."],
}
JSON = {"content-type": "application/json"}
DEAD = Settings(broker="kafka://127.0.0.1:1")


def checks(*requests: tuple[str, Any]) -> tuple[list[httpx.Response], RecordingProducer]:
    """POST each (query string, body) to /v1/check of one app, in order."""
    producer = RecordingProducer()
    app = create_ingest_app(DEAD, token=None)
    app.state.producer = producer

    async def go() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return [
                await client.post(
                    f"/v1/check{query}",
                    content=body if isinstance(body, bytes) else orjson.dumps(body),
                    headers=JSON,
                    timeout=120,
                )
                for query, body in requests
            ]

    return asyncio.run(go()), producer


def test_options_name_kinds_by_tier_or_name_in_the_streams_order() -> None:
    assert [k.name for k in check_options({}).kinds] == [
        "groundedness", "relevance", "completeness",
    ]  # fmt: skip
    assert [k.name for k in check_options({"kinds": "faithfulness,lexical"}).kinds] == [
        "groundedness", "relevance", "completeness", "faithfulness",
    ]  # fmt: skip
    assert check_options({"seq": "3", "final": "false"}).final is False
    for bad, why in [
        ({"kinds": "consistency"}, "not a kind the gate scores"),
        ({"timeout_ms": "0"}, "outside 1..60000"),
        ({"final": "false"}, "needs seq"),
        ({"final": "maybe", "seq": "1"}, "not true or false"),
        ({"timeout": "5"}, "unknown parameter"),
    ]:
        with pytest.raises(ValueError, match=why):
            check_options(bad)


def test_lexical_verdicts_inline_and_nlp_past_the_timeout_defer_under_their_own_ids() -> None:
    (lexical, late, bad_kind, not_json, bad_event, marked), producer = checks(
        ("?timeout_ms=60000", EVENT),  # the first check waits for the gate to load
        ("?kinds=all&timeout_ms=1", {**EVENT, "id": "g2"}),  # spaCy alone loads in seconds
        ("?kinds=judge.twin_lock", EVENT),
        ("", b"{not json"),
        ("", {"id": "g3"}),  # no answer
        ("", b"\xef\xbb\xbf" + orjson.dumps(EVENT)),  # a BOM, as RFC 8259 lets a parser skip
    )
    assert lexical.status_code == 200, lexical.text
    reply = lexical.json()
    assert [v["kind"] for v in reply["verdicts"]] == ["groundedness", "relevance", "completeness"]
    assert reply["queued"] is True
    assert reply["final"] is True
    assert reply["decision"] in ("PASS", "FAIL")
    digest = reply["verdicts"][0]["config_digest"]
    for v in reply["verdicts"]:  # the stream's ids
        assert v["verdict_id"] == verdict_id("g1", gate_module.GATE_KINDS[v["kind"]].kind, digest)
    timed_out = late.json()
    assert late.status_code == 200
    nlp = [v for v in timed_out["verdicts"] if v["kind"] in ("hallucination", "faithfulness")]
    assert [v["decision"] for v in nlp] == ["DEFER", "DEFER"]
    assert {v["reasons"][0]["code"] for v in nlp} == {"gate_timeout"}
    for v in nlp:
        kind = gate_module.GATE_KINDS[v["kind"]].kind
        assert v["verdict_id"] != verdict_id("g2", kind, digest)  # never the stream's id
        assert v["verdict_id"] == verdict_id("g2", kind, digest, "gate_timeout")
    assert timed_out["decision"] != "PASS"
    assert [r.status_code for r in (bad_kind, not_json, bad_event)] == [400, 400, 422]
    assert set(bad_event.json()) == {"error", "detail"}
    assert "answer" in bad_event.json()["detail"]
    assert marked.status_code == 200, marked.text  # was 400 invalid_json
    assert marked.json()["verdicts"] == reply["verdicts"]
    assert [key for _, key, _ in producer.sent] == [b"g1", b"g2", b"g1"]  # refused: not queued


def test_a_failing_scorer_defers_gate_error_and_never_passes(monkeypatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(gate_module, "score_answers", broken)
    (reply,), _ = checks(("?timeout_ms=60000", EVENT))
    body = reply.json()
    assert reply.status_code == 200
    assert body["decision"] == "DEFER"
    assert {v["reasons"][0]["code"] for v in body["verdicts"]} == {"gate_error"}
    assert all("RuntimeError" in v["reasons"][0]["detail"] for v in body["verdicts"])


def test_a_streamed_answer_is_checked_chunk_by_chunk_and_only_the_final_is_queued() -> None:
    words = EVENT["answer"].split()
    first = {**EVENT, "answer": " ".join(words[:4])}
    (part, final), producer = checks(
        ("?seq=1&final=false&timeout_ms=60000", first), ("?seq=2&final=true", EVENT)
    )
    partial = part.json()
    assert partial["final"] is False
    assert partial["seq"] == 1
    assert partial["queued"] is False
    by_kind = {v["kind"]: v for v in partial["verdicts"]}
    assert by_kind["completeness"]["decision"] == "DEFER"
    assert by_kind["completeness"]["reasons"][0]["code"] == "partial_answer"
    assert by_kind["groundedness"]["reasons"][-1]["code"] == "partial_answer"
    assert by_kind["groundedness"]["score"] == 1.0  # "The Nile is about": all in the context
    whole = final.json()
    assert whole["final"] is True
    assert whole["seq"] == 2
    assert whole["queued"] is True
    assert not {v["verdict_id"] for v in whole["verdicts"]} & set(
        v["verdict_id"] for v in partial["verdicts"]
    )
    assert all(r["code"] != "partial_answer" for v in whole["verdicts"] for r in v["reasons"])
    assert len(producer.sent) == 1  # the final chunk only


def test_with_its_broker_dead_the_gate_still_answers_and_says_the_event_was_not_queued(
    monkeypatch,
) -> None:
    monkeypatch.setattr(ingest_app, "BROKER_WAIT_SECONDS", 0.5)
    app = create_ingest_app(DEAD, token=None)
    with TestClient(app, base_url="http://127.0.0.1") as client:  # runs the lifespan
        health = client.get("/healthz")
        assert health.status_code == 503
        assert health.json()["broker"] is False
        posted = client.post("/v1/answers", content=orjson.dumps(EVENT), headers=JSON)
        assert posted.status_code == 503
        assert posted.json()["error"] == "broker_unavailable"
        reply = client.post("/v1/check", content=orjson.dumps(EVENT), headers=JSON)
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert body["queued"] is False
        assert "not connected" in body["queue_error"]
        assert [v["kind"] for v in body["verdicts"]] == [
            "groundedness",
            "relevance",
            "completeness",
        ]
        metrics = client.get("/metrics").text
        assert 'vf_gate_queued_total{outcome="no_broker"} 1.0' in metrics


def test_an_overloaded_nlp_lane_sheds_what_it_cannot_finish_at_once_not_at_the_deadline() -> None:
    from verdictflow.evaluators.policy import Policy
    from verdictflow.ingest.gate import NlpLane
    from verdictflow.models.events import AnswerEvent
    from verdictflow.scoring_setup import load_scoring

    lane = NlpLane(load_scoring(Policy(), "none"))
    lane.seconds_per_answer = 100.0  # as if each parse took 100 s
    event = AnswerEvent.model_validate(EVENT)

    async def go() -> tuple[object, float]:
        deadline = time.monotonic() + 30
        got = await lane.score(event, gate_module.KIND_GROUPS["nlp"], deadline)
        return got, deadline - time.monotonic()

    got, left = asyncio.run(go())
    assert got is None
    assert lane.shed == 1
    assert left > 20  # answered when shed, not when its 30 s ran out
