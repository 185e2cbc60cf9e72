"""On the embedded broker: a verdict replay whose groundedness scores shift halfway raises
exactly one drift alert per affected kind (groundedness, Twin-Lock on 0-10), and none for
relevance, which does not shift; the ledger files every
verdict once by event day and kind, and a second run adds nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.support.drift import DAY2, HALF, WINDOW, calibrated_policy, produce, verdicts
from tests.support.processes import run_verdictflow, settings_env
from verdictflow.models.alerts import DriftAlert
from verdictflow.models.verdicts import VerdictKind
from verdictflow.monitoring.drift_alerts import run_drift
from verdictflow.monitoring.ledger import run_ledger
from verdictflow.settings import Settings
from verdictflow.streams.tail import tail
from verdictflow.streams.topics import ALERTS, verdict_topic

pytestmark = pytest.mark.broker


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
