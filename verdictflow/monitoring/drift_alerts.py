"""``verdictflow drift``: watch verdict topics for score drift, and for FAIL rates above the
policy's ``alerts.fail_rate`` bounds (:mod:`~verdictflow.evaluators.fail_rate`), and emit
alerts to ``alerts``.

A plain consumer outside any consumer group (it reads every partition of the verdict topics of
the calibrated kinds; it never takes partitions from workers). Each verdict's score goes to the
window of its (kind, model, tenant) in :class:`~verdictflow.evaluators.drift.DriftMonitor`;
the baseline of a kind is the score distribution stored by ``verdictflow calibrate`` in the
policy's calibration record. A key entering drift produces one :class:`DriftAlert`, keyed by
kind. Window state lives in memory: a restarted monitor starts its windows afresh (replay
with ``--from-beginning`` to rebuild them; alert ids are deterministic, so duplicates collapse).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import orjson
from pydantic import ValidationError

from verdictflow.evaluators.drift import DriftKey, DriftMonitor, DriftTransition
from verdictflow.evaluators.fail_rate import AlertsPolicy, FailRateBreach, FailRateMonitor
from verdictflow.evaluators.kinds import series_name, spec_for
from verdictflow.evaluators.policy import CalibrationRecord, Policy
from verdictflow.exceptions import VerdictflowError
from verdictflow.models.alerts import DriftAlert, FailRateAlert
from verdictflow.models.codec import encode
from verdictflow.models.verdicts import Verdict
from verdictflow.settings import Settings
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.replay import make_producer
from verdictflow.streams.tail import tail
from verdictflow.streams.topics import ALERTS, verdict_topic

logger = logging.getLogger(__name__)


def calibrated_references(policy: Policy) -> dict[str, CalibrationRecord]:
    """The calibration records that carry a score distribution, by calibrated kind."""
    records = {k: r for k, r in sorted(policy.calibration.items()) if r.reference is not None}
    if not records and not policy.alerts.fail_rate:
        raise VerdictflowError(
            "the policy has no calibration record with a score distribution and no "
            "alerts.fail_rate bound: run `verdictflow calibrate` first (or set a bound) and "
            "pass its policy with --policy"
        )
    return records


def fail_rate_alert(b: FailRateBreach) -> FailRateAlert:
    return FailRateAlert(
        alert_id=b.alert_id, kind=b.kind, model=b.model, tenant=b.tenant, value=b.fail_share,
        bound=b.bound, window_index=b.window_index, window_size=b.window_size,
        first_event_ts=b.first_ts, event_ts=b.last_ts,
    )  # fmt: skip


def alert_of(t: DriftTransition, record: CalibrationRecord, monitor: DriftMonitor) -> DriftAlert:
    return DriftAlert(
        alert_id=t.alert_id,
        kind=t.key.kind,
        model=t.key.model,
        tenant=t.key.tenant,
        value=t.psi,
        enter_threshold=monitor.enter_psi,
        exit_threshold=monitor.exit_psi,
        window_index=t.window_index,
        window_size=t.window_size,
        window_mean=t.window_mean,
        deferred_share=t.deferred_share,
        reference_digest=record.golden_digest,
        reference_threshold=record.threshold,
        first_event_ts=t.first_ts,
        event_ts=t.last_ts,
    )


class DriftWatcher:
    """Decodes verdict records and feeds the monitor; malformed records are logged and skipped
    (a monitoring consumer must not die on them, and they are not its input to lose)."""

    def __init__(
        self,
        records: dict[str, CalibrationRecord],
        monitor: DriftMonitor,
        fail_rates: FailRateMonitor | None = None,
    ) -> None:
        self.records = records
        self.monitor = monitor
        self.fail_rates = fail_rates or FailRateMonitor(AlertsPolicy())
        self.seen = 0
        self.skipped = 0

    def feed_all(self, value: bytes) -> list[DriftAlert | FailRateAlert]:
        """Every alert one verdict record raises: score drift, a FAIL-rate window."""
        decoded = self._decode(value)
        if decoded is None:
            return []
        kind, verdict = decoded
        out: list[DriftAlert | FailRateAlert] = []
        drift = self._drift(kind, verdict)
        if drift is not None:
            out.append(drift)
        breach = self.fail_rates.observe(
            kind, verdict.model, verdict.tenant, verdict.decision.value, verdict.event_ts
        )
        if breach is not None:
            out.append(fail_rate_alert(breach))
        return out

    def _decode(self, value: bytes) -> tuple[str, Verdict] | None:
        try:
            raw = orjson.loads(value)
            verdict = Verdict.model_validate(raw)
        except (orjson.JSONDecodeError, ValidationError, TypeError) as exc:
            self.skipped += 1
            logger.warning("skipping a record that is not a verdict: %s", str(exc)[:200])
            return None
        self.seen += 1
        return series_name(verdict.kind.value, raw.get("judge")), verdict

    def _drift(self, kind: str, verdict: Verdict) -> DriftAlert | None:
        if kind not in self.records:
            return None
        key = DriftKey(kind, verdict.model, verdict.tenant)
        transition = self.monitor.observe(key, verdict.score, verdict.event_ts)
        if transition is None:
            return None
        return alert_of(transition, self.records[kind], self.monitor)


def topics_for(kinds: Sequence[str]) -> list[str]:
    """The verdict topics that carry the calibrated ``kinds`` (registry names)."""
    return sorted({verdict_topic(spec_for(k).kind) for k in kinds})


async def run_drift(
    settings: Settings,
    policy: Policy,
    *,
    window: int = 200,
    enter_psi: float = 0.25,
    exit_psi: float = 0.10,
    from_beginning: bool = False,
    timeout: float | None = None,
    on_alert: Callable[[DriftAlert], None] | None = None,
) -> DriftWatcher:
    """Watch until ``timeout`` idle seconds (forever without one); produce every alert."""
    records = calibrated_references(policy)
    monitor = DriftMonitor(
        {k: r.reference for k, r in records.items() if r.reference is not None},
        window=window,
        enter_psi=enter_psi,
        exit_psi=exit_psi,
    )
    watcher = DriftWatcher(records, monitor, FailRateMonitor(policy.alerts))
    await ensure_topics(settings)
    producer = make_producer(settings)
    await producer.start()
    try:
        kinds = sorted({*records, *policy.alerts.fail_rate})
        async for _, value in tail(
            topics_for(kinds), settings, from_beginning=from_beginning, timeout=timeout
        ):
            for alert in watcher.feed_all(value):
                logger.warning("%s: %s %.3f (window %d)", alert.alert, alert.kind, alert.value,
                               alert.window_index)  # fmt: skip
                await producer.send_and_wait(
                    settings.topic_prefix + ALERTS, value=encode(alert), key=alert.kind.encode()
                )
                if on_alert is not None and isinstance(alert, DriftAlert):
                    on_alert(alert)
    finally:
        await producer.stop()
    return watcher
