"""A worker SIGKILLed mid-stream and restarted loses nothing (at-least-once, idempotent ids).

Groups of variants are open in the changelog-backed table when the worker dies, so this also
checks table recovery on the broker: every group still closes with all its answers.
"""

from __future__ import annotations

import asyncio
import signal
import time

import orjson
import pytest

from tests.integration.test_answers_pipeline import collect
from verdictflow.evaluators.policy import load_policy
from verdictflow.samples.traffic import generate
from verdictflow.scoring_jobs.eval_answers import expected_verdicts
from verdictflow.scoring_jobs.replay import replay
from verdictflow.scoring_jobs.tail import tail
from verdictflow.scoring_setup import load_scoring
from verdictflow.streams.topics import VERDICT_TOPICS

pytestmark = pytest.mark.broker


async def wait_for_some_verdicts(settings, n: int, timeout: float) -> int:
    seen = [0]
    deadline = time.monotonic() + timeout

    def enough() -> bool:
        return seen[0] >= n or time.monotonic() > deadline

    async for _ in tail(list(VERDICT_TOPICS), settings, from_beginning=True, should_stop=enough):
        seen[0] += 1
    return seen[0]


async def distinct_verdicts(settings) -> set[str]:
    ids: set[str] = set()
    async for _, value in tail(list(VERDICT_TOPICS), settings, from_beginning=True, timeout=2):
        ids.add(orjson.loads(value)["verdict_id"])
    return ids


def test_sigkill_mid_stream_then_restart_loses_nothing(settings_factory, worker_factory, tmp_path):
    policy_path = tmp_path / "policy.yaml"
    policy_path.write_text("consistency:\n  window_seconds: 60\n")  # no window closes here
    settings = settings_factory(batch_size=32)
    traffic = generate(3000, seed=5, malformed_every=50, grouped_share=0.15, inline_share=0.1)
    expected = expected_verdicts(traffic.lines, load_scoring(load_policy(policy_path)))
    assert all(b'"closed_by":"window"' not in v for v in expected.values())

    # First half: processed and committed (Faust commits every ~2.8 s). Groups of variants
    # that span the two halves are open in the table when the worker dies.
    half = len(traffic.lines) // 2
    asyncio.run(replay(traffic.lines[:half], "answers", settings))
    first = worker_factory(settings, policy=policy_path)
    got = asyncio.run(wait_for_some_verdicts(settings, 2000, timeout=90))
    assert got >= 2000, first.log()[-3000:]
    time.sleep(5)
    committed = len(asyncio.run(distinct_verdicts(settings)))
    # Second half: killed while it is being processed.
    asyncio.run(replay(traffic.lines[half:], "answers", settings))
    asyncio.run(wait_for_some_verdicts(settings, committed + 300, timeout=60))
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(10)
    before_restart = asyncio.run(distinct_verdicts(settings))
    assert len(before_restart) < len(expected), "the kill came too late to test anything"

    second = worker_factory(settings, policy=policy_path)
    verdicts, dead = asyncio.run(
        collect(
            settings,
            len(expected),
            traffic.malformed,
            180,
            alive=lambda: second.proc.poll() is None,
        )
    )
    assert second.proc.poll() is None, second.log()[-3000:]
    missing = expected.keys() - verdicts.keys()
    assert not missing, f"{len(missing)} missing after restart:\n{second.log()[-3000:]}"
    assert not verdicts.keys() - expected.keys()
    for vid, values in verdicts.items():
        assert set(values) == {expected[vid]}, (
            f"a duplicate differs from the offline verdict:\n{expected[vid]!r}\n"
            + "\n".join(repr(v) for v in set(values))
        )
    assert len({(d["partition"], d["offset"]) for d in dead}) == traffic.malformed
    duplicates = sum(len(v) - 1 for v in verdicts.values())
    assert duplicates <= len(expected) - committed, "committed work was redone"
    print(
        f"{committed} verdicts committed, killed after {len(before_restart)}/{len(expected)}; "
        f"{duplicates} duplicate records after restart, all byte-identical"
    )
