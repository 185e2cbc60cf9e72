"""Reading every verdict and dead letter a replay produced, and the 1,000-answer pipeline check
(run on the embedded broker and, where Docker runs, on Apache Kafka)."""

from __future__ import annotations

import asyncio
import time

import orjson

from verdictflow.evaluators.policy import load_policy
from verdictflow.samples.traffic import generate
from verdictflow.scoring_jobs.batch.eval_answers import expected_verdicts
from verdictflow.scoring_setup import load_scoring
from verdictflow.streams.replay import replay
from verdictflow.streams.tail import tail
from verdictflow.streams.topics import DEAD_LETTERS, VERDICT_TOPICS


async def collect(settings, want_verdicts: int, want_dead: int, timeout: float, alive=None):
    """All verdict records (verdict_id -> list of raw values) and dead letters, read until the
    wanted counts are reached and the topics then stay idle for 3 s, or ``timeout``."""
    verdicts: dict[str, list[bytes]] = {}
    dead: list[dict] = []
    deadline = time.monotonic() + timeout
    complete_since: list[float] = []

    def done() -> bool:
        now = time.monotonic()
        if alive is not None and not alive():
            return True
        if len(verdicts) >= want_verdicts and len(dead) >= want_dead:
            complete_since.append(now)
            return now - complete_since[0] > 3.0  # keep reading a while: catch extras
        return now > deadline

    async for topic, value in tail(
        [*VERDICT_TOPICS, DEAD_LETTERS], settings, from_beginning=True, should_stop=done
    ):
        if topic.endswith(DEAD_LETTERS):
            dead.append(orjson.loads(value))
        else:
            verdicts.setdefault(orjson.loads(value)["verdict_id"], []).append(value)
    return verdicts, dead


def check_thousand_answers(settings_factory, worker_factory, tmp_path) -> None:
    """1,000 answers (malformed, grouped, windowed, inline) through a worker: exactly their
    verdicts, byte-identical to the offline evaluation, and a dead letter per malformed one."""
    policy_path = tmp_path / "policy.yaml"
    policy_path.write_text("consistency:\n  window_seconds: 2\n")
    settings = settings_factory()
    traffic = generate(
        1000, seed=11, malformed_every=12, grouped_share=0.08, windowed_share=0.03, inline_share=0.1
    )
    assert len(traffic.lines) == 1000
    assert traffic.malformed > 50
    assert traffic.windowed_requests > 5

    expected = expected_verdicts(traffic.lines, load_scoring(load_policy(policy_path)))
    kinds = {orjson.loads(v)["kind"] for v in expected.values()}
    assert kinds == {
        "groundedness",
        "consistency",
        "relevance",
        "completeness",
        "hallucination",
        "faithfulness",
    }

    worker = worker_factory(settings, policy=policy_path)
    asyncio.run(replay(traffic.lines, "answers", settings))
    verdicts, dead = asyncio.run(
        collect(
            settings,
            len(expected),
            traffic.malformed,
            360,  # minutes of margin: a slower 2-core CI VM took over 120 s
            alive=lambda: worker.proc.poll() is None,
        )
    )
    assert worker.proc.poll() is None, worker.log()[-3000:]

    missing = expected.keys() - verdicts.keys()
    extra = verdicts.keys() - expected.keys()
    assert not missing, f"{len(missing)} verdicts missing; worker log:\n{worker.log()[-3000:]}"
    assert not extra
    for vid, values in verdicts.items():
        assert set(values) == {expected[vid]}, f"verdict {vid} differs from offline eval"
    windowed = [
        orjson.loads(expected[v])
        for v in expected
        if orjson.loads(expected[v])["evidence"].get("closed_by") == "window"
    ]
    assert len(windowed) == traffic.windowed_requests

    assert len(dead) == traffic.malformed
    assert len({(d["partition"], d["offset"]) for d in dead}) == traffic.malformed
    assert {d["error_code"] for d in dead} == {"not_json", "schema", "invalid_utf8", "not_object"}
    assert all(d["source_topic"] == f"{settings.topic_prefix}answers" for d in dead)
