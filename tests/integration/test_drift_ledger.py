"""On the embedded broker: a verdict replay whose groundedness scores shift halfway raises
exactly one drift alert per affected kind (groundedness, Twin-Lock on 0-10), and none for
relevance, which does not shift; the ledger files every
verdict once by event day and kind, and a second run adds nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest

from tests.support.processes import run_verdictflow, settings_env
from verdictflow.evaluators.answer_verdicts import ScoringContext, VerdictMeta, build_verdict
from verdictflow.evaluators.drift import score_reference
from verdictflow.evaluators.policy import CalibrationRecord, Policy, gate
from verdictflow.models.alerts import DriftAlert
from verdictflow.models.verdicts import VerdictKind
from verdictflow.scoring_jobs.drift import run_drift
from verdictflow.scoring_jobs.ledger import run_ledger
from verdictflow.scoring_jobs.replay import make_producer
from verdictflow.scoring_jobs.tail import tail
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.settings import Settings
from verdictflow.streams.topics import ALERTS, verdict_topic

pytestmark = pytest.mark.broker

WINDOW = 50
HALF = 300
DAY1, DAY2 = 1_767_225_600.0, 1_767_312_000.0  # 2026-01-01 and 2026-01-02, 00:00 UTC
CALIBRATION = [i / 100 for i in range(100)]


def verdicts(kind: VerdictKind, shift: bool, scale: float = 1.0) -> list[bytes]:
    """2 * HALF verdicts of one kind: the first half spread like the calibration set, the
    second half the same or (``shift``) all in the bottom bin; halves on consecutive days.
    Judge verdicts (``scale`` 10) are Twin-Lock's."""
    ctx = ScoringContext(Policy())
    out = []
    for i in range(2 * HALF):
        second = i >= HALF
        unit = (i % 10) / 100 if (second and shift) else CALIBRATION[(i * 37) % 100]
        score = unit * scale
        meta = VerdictMeta(model="m", tenant="t", event_ts=(DAY2 if second else DAY1) + i)
        v = build_verdict(ctx, kind, f"{kind.value}-{i}", score, 0.5, gate(score, 0.5), {}, meta)
        record = v.model_dump(mode="json")
        if kind is VerdictKind.JUDGE:
            record.update(judge="twin_lock", metrics={})
        out.append(orjson.dumps(record))
    return out


def calibrated_policy() -> Policy:
    record = CalibrationRecord(
        golden_digest="g" * 64, golden_rows=100, deferred_rows=0, objective="cost",
        cost_fp=1.0, cost_fn=1.0, max_fpr=None, raw_threshold=0.5, margin=0.0,
        margin_quantile=0.95, threshold=0.5, expected_tpr=1.0, expected_fpr=0.0,
        reference=score_reference(CALIBRATION),
    )  # fmt: skip
    judge = record.model_copy(
        update={"threshold": 5.0, "raw_threshold": 5.0, "reference": score_reference(
            [10 * c for c in CALIBRATION], scale=10.0)}
    )  # fmt: skip
    return Policy(
        calibration={"groundedness": record, "relevance": record, "judge.twin_lock": judge}
    )


async def produce(settings: Settings, records: dict[str, list[bytes]]) -> None:
    """Send each topic's records in order to partition 0 (one record per batch)."""
    await ensure_topics(settings)
    producer = make_producer(settings)
    await producer.start()
    try:
        for topic, values in records.items():
            sends = [
                await producer.send(settings.topic_prefix + topic, value=v, partition=0)
                for v in values
            ]
            await asyncio.gather(*sends)
    finally:
        await producer.stop()


async def read_alerts(settings: Settings) -> list[DriftAlert]:
    return [
        DriftAlert.model_validate_json(value)
        async for _, value in tail([ALERTS], settings, from_beginning=True, timeout=2)
    ]


@pytest.mark.timeout(240)
def test_shift_halfway_raises_one_alert_and_the_ledger_is_idempotent(settings_factory, tmp_path):
    settings = settings_factory()
    grounded = verdicts(VerdictKind.GROUNDEDNESS, shift=True)
    relevant = verdicts(VerdictKind.RELEVANCE, shift=False)
    judged = verdicts(VerdictKind.JUDGE, shift=True, scale=10.0)
    topic_g = verdict_topic(VerdictKind.GROUNDEDNESS)
    topic_r = verdict_topic(VerdictKind.RELEVANCE)
    topic_j = verdict_topic(VerdictKind.JUDGE)
    # a redelivered verdict (same id and bytes) and a record that is not a verdict
    asyncio.run(
        produce(
            settings,
            {topic_g: [*grounded, grounded[0], b"not json"], topic_r: relevant, topic_j: judged},
        )
    )

    watcher = asyncio.run(
        run_drift(settings, calibrated_policy(), window=WINDOW, from_beginning=True, timeout=3)
    )
    assert (watcher.seen, watcher.skipped) == (6 * HALF + 1, 1)
    alerts = sorted(asyncio.run(read_alerts(settings)), key=lambda a: a.kind)
    assert [(a.kind, a.model, a.tenant) for a in alerts] == [
        ("groundedness", "m", "t"),
        ("judge.twin_lock", "m", "t"),
    ]
    assert alerts[1].window_index == HALF // WINDOW
    assert alerts[1].reference_threshold == 5.0
    alert = alerts[0]
    assert alert.window_index == HALF // WINDOW  # the first window after the shift
    assert alert.event_ts is not None
    assert alert.event_ts >= DAY2
    assert alert.value > 0.25
    assert alert.reference_digest == "g" * 64

    ledger_dir = tmp_path / "ledger"
    first = asyncio.run(run_ledger(settings, ledger_dir, [topic_g, topic_r], timeout=3))
    assert (first.written, first.duplicates, first.skipped) == (4 * HALF, 1, 1)
    files = sorted(str(p.relative_to(ledger_dir)) for p in ledger_dir.rglob("*.jsonl"))
    assert files == [
        "2026-01-01/groundedness.jsonl",
        "2026-01-01/relevance.jsonl",
        "2026-01-02/groundedness.jsonl",
        "2026-01-02/relevance.jsonl",
    ]
    day1 = (ledger_dir / "2026-01-01" / "groundedness.jsonl").read_bytes().splitlines()
    assert day1 == grounded[:HALF]  # the records as they were on the topic, in order
    # A second run, through the command line in another process, adds nothing.
    second = run_verdictflow(
        "ledger", "--out", ledger_dir, "--topic", topic_g, "--topic", topic_r,
        "--timeout", 3, env=settings_env(settings),
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    summary = " ".join(second.stderr.split())
    assert f"0 verdicts written, {4 * HALF + 1} already there, 1 records skipped" in summary
    assert (
        sum(len(Path(p).read_bytes().splitlines()) for p in ledger_dir.rglob("*.jsonl")) == 4 * HALF
    )
