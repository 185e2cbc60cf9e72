"""A worker with a backlog exits within 15 s of SIGTERM (abandoning the batch in hand), and a
restarted worker then gives every verdict: nothing is lost."""

from __future__ import annotations

import asyncio
import random
import signal
import time

import orjson
import pytest

from tests.support.reliability import OutputCollector
from verdictflow.evaluators.answer_verdicts import verdict_id
from verdictflow.evaluators.kinds import Tier, answer_kinds
from verdictflow.evaluators.policy import Policy
from verdictflow.samples.heavy_records import facts
from verdictflow.scoring_setup import load_scoring
from verdictflow.streams.replay import replay

pytestmark = pytest.mark.broker

ANSWERS = 48


def backlog() -> list[bytes]:
    """Answers that take the NLP tier a while: ~3,000 characters against 12,000 of context."""
    rng = random.Random(3)
    return [
        orjson.dumps({"id": f"a{i}", "answer": facts(3_000, rng), "contexts": [facts(12_000, rng)]})
        for i in range(ANSWERS)
    ]


def test_sigterm_with_a_backlog_exits_in_time_and_loses_nothing(
    settings_factory, worker_factory
) -> None:
    settings = settings_factory(tier="nlp", batch_size=8, shutdown_seconds=8)
    lines = backlog()
    digest = load_scoring(Policy()).ctx.config_digest
    kinds = [spec.kind for spec in answer_kinds(Tier.NLP)]
    expected = {verdict_id(f"a{i}", kind, digest) for i in range(ANSWERS) for kind in kinds}
    worker = worker_factory(settings)
    with OutputCollector(settings) as out:
        asyncio.run(replay(lines, "answers", settings))
        assert out.wait_until(lambda: len(out.verdicts) >= 8, timeout=180, alive=lambda: True)
        assert len(out.verdicts) < len(expected), "the backlog was done before the signal"
        signalled = time.monotonic()
        worker.proc.send_signal(signal.SIGTERM)
        worker.proc.wait(30)
        took = time.monotonic() - signalled
        assert took < 15, f"{took:.1f} s from SIGTERM to exit"
        again = worker_factory(settings)
        done = out.wait_until(
            lambda: out.verdicts.keys() >= expected,
            timeout=300,
            alive=lambda: again.proc.poll() is None,
        )
        assert done, (
            f"{len(expected - out.verdicts.keys())} verdicts missing:\n{again.log()[-2000:]}"
        )
    print(f"SIGTERM to exit: {took:.1f} s; {len(expected)} verdicts after the restart")
