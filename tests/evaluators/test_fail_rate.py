"""FAIL rate over a window (issue 44, alerts out): windows of verdicts per (kind, model,
tenant), one breach when a closed window's FAIL share is above the bound, ids fixed by the
window, DEFERs counted but not as FAILs; ``verdictflow drift`` turns a breach into an alert
without any calibration record."""

from __future__ import annotations

import orjson

from tests.support.drift import verdicts
from verdictflow.evaluators.drift import DriftMonitor
from verdictflow.evaluators.fail_rate import AlertsPolicy, FailRateMonitor
from verdictflow.models.verdicts import VerdictKind
from verdictflow.monitoring.drift_alerts import DriftWatcher


def test_a_window_over_the_bound_is_one_breach_with_a_fixed_id() -> None:
    policy = AlertsPolicy(fail_rate={"faithfulness": 0.3}, window=10)
    monitor = FailRateMonitor(policy)
    decisions = ["FAIL"] * 3 + ["DEFER"] * 2 + ["PASS"] * 5  # 3 of 10: not above 0.3
    decisions += ["FAIL"] * 4 + ["PASS"] * 6  # 4 of 10
    breaches = [
        b for n, d in enumerate(decisions)
        if (b := monitor.observe("faithfulness", "m", "t", d, float(n))) is not None
    ]  # fmt: skip
    assert [(b.window_index, b.fail_share, b.window_size) for b in breaches] == [(1, 0.4, 10)]
    assert breaches[0].first_ts == 10.0
    assert breaches[0].last_ts == 19.0
    again = FailRateMonitor(policy)
    replayed = [
        again.observe("faithfulness", "m", "t", d, float(n)) for n, d in enumerate(decisions)
    ]
    assert [b.alert_id for b in replayed if b] == [breaches[0].alert_id]
    assert monitor.observe("relevance", "m", "t", "FAIL", 0.0) is None  # no bound: not watched


def test_drift_raises_a_fail_rate_alert_without_a_calibration() -> None:
    records = verdicts(VerdictKind.GROUNDEDNESS, shift=True)
    watcher = DriftWatcher(
        {}, DriftMonitor({}, window=50),
        FailRateMonitor(AlertsPolicy(fail_rate={"groundedness": 0.0}, window=10)),
    )  # fmt: skip
    alerts = [a for value in records for a in watcher.feed_all(value)]
    fails = sum(orjson.loads(v)["decision"] == "FAIL" for v in records[:10])
    assert fails > 0
    assert alerts
    assert {a.alert for a in alerts} == {"fail_rate"}
    assert alerts[0].window_size == 10
