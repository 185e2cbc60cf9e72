"""Agent logic through Faust's test_context (memory store, no broker)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools

import orjson
import pytest

from verdictflow.agents.worker_app import create_app
from verdictflow.evaluators.kinds import Tier
from verdictflow.evaluators.policy import Policy
from verdictflow.settings import Settings
from verdictflow.streams.outbox import RecordingOutbox

_ids = itertools.count()


@pytest.fixture
def built():
    """A fresh app per test, with a recording outbox instead of the producer."""
    outbox = RecordingOutbox()
    settings = Settings(
        app_id=f"vf-agent-test-{next(_ids)}",
        broker="kafka://127.0.0.1:1",
        batch_window_seconds=0.01,
    )
    policy = Policy(consistency={"window_seconds": 0.2})
    app = create_app(settings, policy, outbox_factory=lambda app, topics: outbox)
    app.finalize()
    app.flow_control.resume()
    # test_context runs no producer: record the table's changelog writes instead of sending them.
    table = app.tables["consistency-groups-v2"]
    # Each write also records the changelog partition Faust's own rule picks for it (raises when
    # no event is current, as it would in the worker).
    table.changelog = []
    table.write_partitions = []

    def record(key, value):
        table.changelog.append((key, value))
        table.write_partitions.append((key, table.partition_for_key(key)))

    table.on_key_set = record
    table.on_key_del = lambda key: record(key, None)
    return app, outbox


async def wait_for(outbox: RecordingOutbox, n: int, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while len(outbox.sent) < n:
        assert asyncio.get_running_loop().time() < deadline, f"only {outbox.sent} after {timeout}s"
        await asyncio.sleep(0.01)


def agent(app, name):
    return next(a for a in app.agents.values() if a.name == name)


def sent_json(outbox, topic):
    return [orjson.loads(v) for v in outbox.values(topic)]


async def test_lexical_answers_agent_scores_and_dead_letters(built):
    app, outbox = built
    good = {
        "id": "a1",
        "answer": "The cat sat on the mat.",
        "contexts": ["A cat is on a mat.", "The dog sat."],
    }
    async with agent(app, "vf-answers").test_context() as ctx:
        await ctx.put(orjson.dumps(good), key=b"a1")
        await ctx.put(b'{"id": "bad", "answer": ', key=b"bad")
        await wait_for(outbox, 5)
        await asyncio.sleep(0.05)
    assert [t for t, _, _ in outbox.sent] == [
        "verdicts.groundedness",
        "verdicts.relevance",
        "verdicts.completeness",
        "verdicts.consistency",
        "dead-letters",
    ], "the lexical tier computes no hallucination verdict"
    grounded = sent_json(outbox, "verdicts.groundedness")
    assert [(v["input_id"], v["score"], v["decision"]) for v in grounded] == [("a1", 1.0, "PASS")]
    consistency = sent_json(outbox, "verdicts.consistency")
    assert consistency[0]["reasons"][0]["code"] == "fewer_than_two_variants"
    (dead,) = sent_json(outbox, "dead-letters")
    assert dead["error_code"] == "not_json"
    assert dead["offset"] == 1
    assert dead["raw"] == '{"id": "bad", "answer": '


async def test_nlp_answers_agent_emits_its_kinds_only_and_leaves_dead_letters_to_lexical():
    """The NLP tier is its own app and consumer group (``<app id>-nlp``); a malformed record
    is dead-lettered once, by the lexical tier."""
    outbox = RecordingOutbox()
    settings = Settings(app_id=f"vf-agent-test-{next(_ids)}", broker="kafka://127.0.0.1:1")
    app = create_app(settings, Policy(), outbox_factory=lambda a, t: outbox, tier=Tier.NLP)
    app.finalize()
    app.flow_control.resume()
    assert app.conf.id == f"{settings.app_id}-nlp"
    good = {"id": "a1", "answer": "Paris is in France.", "contexts": ["Paris is in France."]}
    async with agent(app, "vf-answers-nlp").test_context() as ctx:
        await ctx.put(orjson.dumps(good), key=b"a1")
        await ctx.put(b'{"id": "bad", "answer": ', key=b"bad")
        await wait_for(outbox, 2, timeout=30)
        await asyncio.sleep(0.2)
    assert [t for t, _, _ in outbox.sent] == ["verdicts.hallucination", "verdicts.faithfulness"]
    for topic in ("verdicts.hallucination", "verdicts.faithfulness"):
        (verdict,) = sent_json(outbox, topic)
        assert (verdict["input_id"], verdict["decision"]) == ("a1", "PASS")


async def test_answers_agent_forwards_events_that_need_collection(built):
    app, outbox = built
    event = {
        "id": "v1",
        "request_id": "r1",
        "answer": "x y",
        "contexts": ["x"],
        "expected_variants": 2,
    }
    async with agent(app, "vf-answers").test_context() as ctx:
        await ctx.put(orjson.dumps(event), key=b"r1")
        await wait_for(outbox, 4)
    kinds = [topic for topic, _, _ in outbox.sent]
    assert kinds == [
        "verdicts.groundedness",
        "verdicts.relevance",
        "verdicts.completeness",
        "internal.consistency-groups",
    ]
    _topic, key, value = outbox.sent[3]
    assert key == "r1"
    forwarded = orjson.loads(value)
    assert forwarded["type"] == "answer"
    assert "contexts" not in forwarded["event"]


async def test_consistency_agent_collects_across_events_and_ignores_duplicates(built):
    app, outbox = built

    def msg(i):
        return orjson.dumps(
            {
                "type": "answer",
                "event": {
                    "id": f"v{i}",
                    "request_id": "r1",
                    "answer": ["cat sits on mat", "the cat sat on the mat"][i],
                    "expected_variants": 3,
                    "variants": ["the cat sits on the mat"] if i == 0 else [],
                },
            }
        )

    async with agent(app, "vf-consistency").test_context() as ctx:
        await ctx.put(msg(0), key=b"r1")
        await ctx.put(msg(0), key=b"r1")  # redelivered: must not count twice
        await asyncio.sleep(0.05)
        assert outbox.sent == []
        await ctx.put(msg(1), key=b"r1")
        await wait_for(outbox, 1)
        await ctx.put(msg(1), key=b"r1")  # late duplicate after close: ignored
        await asyncio.sleep(0.05)
    (verdict,) = sent_json(outbox, "verdicts.consistency")
    assert verdict["input_id"] == "r1"
    assert round(verdict["score"], 4) == 0.6556
    assert verdict["evidence"]["closed_by"] == "complete"
    changelog = app.tables["consistency-groups-v2"].changelog
    assert [len(v["answers"]) for _, v in changelog] == [
        2,
        0,
    ]  # open (the duplicate writes nothing), closed
    assert changelog[-1][1]["done"]


async def test_group_state_is_written_to_the_partition_of_its_messages(built):
    """Issue 19: in a batch that mixes partitions, each group's changelog record goes to the
    partition its messages came from (the old code hashed the JSON-quoted key instead)."""
    app, outbox = built

    def msg(request, i):
        event = {"id": f"{request}-{i}", "request_id": request, "answer": f"answer {i}"}
        return orjson.dumps({"type": "answer", "event": {**event, "expected_variants": 2}})

    requests = {f"rq-{n:02d}": n % 4 for n in range(8)}
    async with agent(app, "vf-consistency").test_context() as ctx:
        for i in range(2):
            for request, partition in requests.items():
                await ctx.put(msg(request, i), key=request.encode(), partition=partition)
        await wait_for(outbox, len(requests))
    table = app.tables["consistency-groups-v2"]
    # One or two writes per group (the open state and the closed marker coalesce when both of
    # its messages fall in one batch), each in the partition of the group's messages.
    assert {key for key, _ in table.write_partitions} == set(requests)
    assert len(table.write_partitions) <= 2 * len(requests)
    assert all(partition == requests[key] for key, partition in table.write_partitions)


def test_table_writes_outside_a_record_are_refused(built):
    """A timer or callback that wrote a table would put state in no record's partition."""
    app, _ = built
    with pytest.raises(TypeError, match="outside of stream iteration"):
        app.tables["consistency-groups-v2"]["rq-1"] = {"answers": []}


async def test_consistency_window_closes_on_the_watermark_with_defer(built):
    """The window is in log time: a close decided at a watermark before the window's end
    does nothing however late it is processed; one at or past the end closes the group."""
    app, outbox = built
    event = {"id": "v", "request_id": "r9", "answer": "a", "expected_variants": 2}
    lone = orjson.dumps({"type": "answer", "event": event, "log_time": 100.0})

    def close(watermark):
        return orjson.dumps({"type": "close", "key": "r9", "watermark": watermark})

    async with agent(app, "vf-consistency").test_context() as ctx:
        await ctx.put(lone, key=b"r9")
        await ctx.put(close(100.1), key=b"r9")  # the window (0.2 s) has not ended at 100.1
        await asyncio.sleep(0.3)
        assert outbox.sent == []
        await ctx.put(close(100.2), key=b"r9")
        await wait_for(outbox, 1)
    (verdict,) = sent_json(outbox, "verdicts.consistency")
    assert verdict["decision"] == "DEFER"
    assert verdict["reasons"][0]["code"] == "fewer_than_two_variants"
    assert verdict["evidence"]["closed_by"] == "window"


@pytest.mark.parametrize("faithfulness", [True, False], ids=["faithfulness", "switched-off"])
async def test_summaries_agent_sends_judge_then_faithfulness_verdicts(faithfulness):
    """Each summary's judge verdicts, then (policy ``faithfulness.summaries``) its
    faithfulness verdict, keyed by the summary id; a malformed record, one dead letter."""
    outbox = RecordingOutbox()
    settings = Settings(
        app_id=f"vf-agent-test-{next(_ids)}",
        broker="kafka://127.0.0.1:1",
        batch_window_seconds=0.01,
    )
    policy = Policy(faithfulness={"summaries": faithfulness})
    app = create_app(settings, policy, outbox_factory=lambda a, t: outbox)
    app.finalize()
    app.flow_control.resume()
    summary = {
        "id": "s1",
        "article": "The council of Paris approved a budget of 5 million euros on Monday. The "
        "mayor said the money will fund three new schools in the north of the city.",
        "summary": "The council of Lyon approved a budget of 5 million euros on Monday.",
    }
    want = ["verdicts.judge", "verdicts.judge"] + (
        ["verdicts.faithfulness"] if faithfulness else []
    )
    async with agent(app, "vf-summaries").test_context() as ctx:
        await ctx.put(orjson.dumps(summary), key=b"s1")
        await ctx.put(b"{not json", key=b"bad")
        await wait_for(outbox, len(want) + 1, timeout=60)
        await asyncio.sleep(0.2)
    assert [(t, k) for t, k, _ in outbox.sent] == [
        *((topic, "s1") for topic in want),
        ("dead-letters", "vf.summaries"),
    ]
    if faithfulness:
        (verdict,) = sent_json(outbox, "verdicts.faithfulness")
        assert verdict["decision"] == "FAIL"
        assert "Lyon" in [f["text"] for f in verdict["evidence"]["findings"]]


async def test_summaries_setup_failure_stops_without_acking(built, monkeypatch):
    """A failure that is not the input's fault (here: judging setup) must reach
    stop_without_commit instead of escaping the agent, which would let take_events ack the
    batch and lose those summaries."""
    from verdictflow.agents import summaries
    from verdictflow.streams import batch_agent

    app, outbox = built
    stopped: list[str] = []
    stop = asyncio.Event()

    def failing_judge(*args, **kwargs):
        raise MemoryError("model load failed")

    def record_stop(where, exc):
        stopped.append(where)
        stop.set()

    monkeypatch.setattr(summaries, "judge_records", failing_judge)
    monkeypatch.setattr(batch_agent, "stop_without_commit", record_stop)
    summary = {"id": "s1", "source": "The cat sat on the mat.", "summary": "A cat sat."}
    async with agent(app, "vf-summaries").test_context() as ctx:
        await ctx.put(orjson.dumps(summary), key=b"s1")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 10)
    assert stopped == ["vf-summaries"]
    assert outbox.sent == []


async def test_group_state_waits_for_its_verdict_to_be_delivered(built, monkeypatch):
    """A closed group's marker must not reach the changelog before its verdict reaches its
    topic: a worker killed in between would come back to a group marked done whose verdict
    was never sent (the same fault lost a document-quality row in CI)."""
    from verdictflow.streams import batch_agent

    app, outbox = built
    stopped = asyncio.Event()
    monkeypatch.setattr(batch_agent, "stop_without_commit", lambda where, exc: stopped.set())

    async def failing_drain() -> None:
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr(outbox, "drain", failing_drain)
    event = {"id": "v", "request_id": "r5", "answer": "a", "expected_variants": 1}
    async with agent(app, "vf-consistency").test_context() as ctx:
        await ctx.put(orjson.dumps({"type": "answer", "event": event}), key=b"r5")
        await asyncio.wait_for(stopped.wait(), 10)
    assert len(outbox.sent) == 1, "the verdict was handed to the outbox"
    assert app.tables["consistency-groups-v2"].changelog == [], "state written before delivery"
