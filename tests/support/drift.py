"""Verdict traffic whose scores drift, and the calibrated policy it drifts from: for the drift
tests and the console's alert test."""

from __future__ import annotations

import asyncio

import orjson

from verdictflow.evaluators.answer_verdicts import ScoringContext, VerdictMeta, build_verdict
from verdictflow.evaluators.drift import score_reference
from verdictflow.evaluators.policy import CalibrationRecord, Policy, gate
from verdictflow.models.verdicts import VerdictKind
from verdictflow.settings import Settings
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.replay import make_producer

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
