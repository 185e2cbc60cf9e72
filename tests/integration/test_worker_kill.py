"""A worker SIGKILLed at two seeded moments of an 800-answer replay (four moments of 4,000
answers with ``VERDICTFLOW_TEST_SOAK=1``), restarted each time, loses nothing: every valid input
gets its verdicts, and duplicates share a verdict_id and bytes.

Groups of variants are open in the changelog-backed table when the worker dies, so this also
checks table recovery on the broker: every group still closes with all its answers. The kill
moments are progress points (distinct verdicts seen) drawn by a seeded RNG, so the test is
reproducible without timing anything: each kill waits for a condition, never a clock.
"""

from __future__ import annotations

import asyncio
import random
import signal

import orjson
import pytest

from tests.support.reliability import (
    OutputCollector,
    Supervisor,
    describe_missing,
    expected_verdicts_by_id,
    rss_kib,
    soak_size,
)
from verdictflow.evaluators.answer_verdicts import verdict_id
from verdictflow.evaluators.policy import load_policy
from verdictflow.models.verdicts import VerdictKind
from verdictflow.samples.traffic import generate
from verdictflow.scoring_jobs.batch.eval_answers import expected_verdicts
from verdictflow.scoring_setup import load_scoring
from verdictflow.streams.replay import replay

pytestmark = pytest.mark.broker

ANSWERS = soak_size(full=4_000, quick=800)
#: Each kill costs a worker start (45-60 s on a slow 2-core VM), which dominated this test.
KILLS = soak_size(full=4, quick=2)
KILL_SEED = 20261122
#: No output record for this long while verdicts are missing: the pipeline stalled.
STALL_SECONDS = 120
#: Requests whose verdicts are also compared byte for byte with the offline evaluation.
SAMPLED_REQUESTS = soak_size(full=200, quick=100)


def grouped_consistency_ids(lines: list[bytes], config_digest: str) -> set[str]:
    """Consistency verdict ids of requests collected across events (the table's work)."""
    keys = {k for k in map(request_key, lines) if k and k.startswith("rg")}
    return {verdict_id(k, VerdictKind.CONSISTENCY, config_digest) for k in keys}


def kill_points(total: int, seed: int = KILL_SEED) -> list[int]:
    """Distinct-verdict counts at which to kill: seeded gaps of 5-17 % of the total, so every
    kill lands mid-stream and after the restarted worker has made progress."""
    rng = random.Random(seed)
    points, at = [], 0
    for _ in range(KILLS):
        at += int(total * rng.uniform(0.05, 0.17))
        points.append(at)
    return points


def request_key(line: bytes) -> str | None:
    """The group key (request_id, else id) of a line that parses, else None."""
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        return None
    key = data.get("request_id") or data["id"]
    return key if isinstance(key, str) else None


def sample_lines(lines: list[bytes], seed: int = KILL_SEED) -> list[bytes]:
    """Every line of a seeded sample of requests (whole groups, so they close offline too)."""
    keys = [request_key(line) for line in lines]
    chosen = set(random.Random(seed).sample(sorted({k for k in keys if k}), SAMPLED_REQUESTS))
    return [line for line, key in zip(lines, keys, strict=True) if key in chosen]


@pytest.mark.timeout(1200)
def test_sigkill_at_seeded_moments_of_a_replay_loses_nothing(
    settings_factory, worker_factory, tmp_path
):
    policy_path = tmp_path / "policy.yaml"
    policy_path.write_text("consistency:\n  window_seconds: 900\n")  # no window closes here
    settings = settings_factory(batch_size=64)
    traffic = generate(ANSWERS, seed=5, malformed_every=50, grouped_share=0.15, inline_share=0.1)
    scoring = load_scoring(load_policy(policy_path))
    expected_by_id = expected_verdicts_by_id(traffic.lines, scoring.ctx.config_digest)
    expected = set(expected_by_id)
    sample = expected_verdicts(sample_lines(traffic.lines), scoring)
    assert sample.keys() <= expected
    assert all(b'"closed_by":"window"' not in v for v in sample.values())
    points = kill_points(len(expected))

    sup = Supervisor(lambda: worker_factory(settings, policy=policy_path))
    killed_at: list[int] = []
    peak_rss_kib = 0
    with OutputCollector(settings) as out:
        asyncio.run(replay(traffic.lines, "answers", settings))
        for at in points:
            assert out.wait_until(
                lambda at=at: len(out.verdicts) >= at, timeout=600, alive=sup.alive
            ), f"no progress to {at} verdicts:\n{sup.worker.log()[-3000:]}"
            peak_rss_kib = max(peak_rss_kib, rss_kib(sup.worker.proc.pid)["VmHWM"])
            sup.worker.proc.send_signal(signal.SIGKILL)
            sup.worker.proc.wait(10)
            killed_at.append(len(out.verdicts))
            sup.restart()
        # Fail in minutes, not at the timeout, when the pipeline stalls with verdicts missing.
        progressing = lambda: sup.alive() and out.quiet_for() < STALL_SECONDS  # noqa: E731
        if not out.wait_until(
            lambda: out.verdicts.keys() >= expected and len(out.dead) >= traffic.malformed,
            timeout=900,
            alive=progressing,
        ):
            pytest.fail(
                f"{describe_missing(expected - out.verdicts.keys(), expected_by_id, settings)}; "
                f"{len(out.dead)} of {traffic.malformed} dead letters\n{sup.worker.log()[-3000:]}"
            )
        out.settle()
        peak_rss_kib = max(peak_rss_kib, rss_kib(sup.worker.proc.pid)["VmHWM"])
    assert sup.alive(), sup.worker.log()[-3000:]
    assert killed_at[-1] < len(expected), "the last kill came after the end: nothing tested"
    assert not out.verdicts.keys() - expected, "a verdict id that no input explains"
    differing = [vid for vid, values in out.verdicts.items() if len(set(values)) > 1]
    assert not differing, f"{len(differing)} duplicates differ from their first record"
    for vid, value in sample.items():
        if vid in out.verdicts:
            assert out.verdicts[vid][0] == value, f"verdict {vid} differs from offline eval"
    assert len({(d["partition"], d["offset"]) for d in out.dead}) == traffic.malformed
    duplicates = sum(len(v) - 1 for v in out.verdicts.values())
    assert duplicates > 0, "no kill interrupted uncommitted work"
    grouped = grouped_consistency_ids(traffic.lines, scoring.ctx.config_digest)
    print(
        f"{len(traffic.lines)} events replayed ({traffic.malformed} malformed), "
        f"{KILLS} SIGKILLs at {killed_at} of {len(expected)} verdicts "
        f"({len(grouped)} from request groups collected across events); "
        f"{duplicates} duplicate verdict records, all byte-identical; "
        f"{len(out.dead)} dead-letter records; peak worker RSS {peak_rss_kib // 1024} MiB; "
        f"{sup.restarts} restarts after an exit with code 75"
    )
