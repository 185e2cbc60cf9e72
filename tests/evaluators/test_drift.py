"""Drift monitor: PSI against the calibration distribution, per key, with hysteresis."""

from __future__ import annotations

import pytest

from verdictflow.evaluators.drift import (
    DriftKey,
    DriftMonitor,
    histogram,
    psi,
    score_reference,
    window_psi,
)

# Calibration scores spread evenly over [0, 1): every bin of ten holds 10 %.
CALIBRATION = [i / 100 for i in range(100)]
KEY = DriftKey("groundedness", "m1", "t1")


def monitor(**kwargs: object) -> DriftMonitor:
    return DriftMonitor({"groundedness": score_reference(CALIBRATION)}, **kwargs)  # type: ignore[arg-type]


def test_reference_histogram_and_psi_in_closed_form():
    ref = score_reference([*CALIBRATION, None])
    assert ref.proportions == [0.1] * 10
    assert ref.deferred_share == pytest.approx(1 / 101)
    assert histogram([0.0, 0.05, 1.0, 0.95, 1.5, -0.2], ref.edges)[0] == pytest.approx(3 / 6)
    assert psi([0.5, 0.5], [0.5, 0.5]) == 0.0
    # (0.9 - 0.5) ln(0.9/0.5) + (0.1 - 0.5) ln(0.1/0.5)
    assert psi([0.5, 0.5], [0.9, 0.1]) == pytest.approx(0.4 * 0.5877867 + 0.4 * 1.6094379)
    assert window_psi(score_reference(CALIBRATION), CALIBRATION) == pytest.approx(0.0, abs=1e-9)


def test_a_shift_halfway_raises_exactly_one_alert():
    m = monitor(window=100)
    stable = [CALIBRATION[i % 100] for i in range(1000)]
    shifted = [0.9 + (i % 10) / 100 for i in range(1000)]  # everything in the top bin
    transitions = [
        (i, t)
        for i, score in enumerate(stable + shifted)
        if (t := m.observe(KEY, score, float(i))) is not None
    ]
    assert len(transitions) == 1
    i, t = transitions[0]
    assert (i, t.window_index, t.window_size) == (1099, 10, 100)  # the first shifted window
    assert t.psi > 1.0
    assert t.window_mean == pytest.approx(0.945)
    assert (t.first_ts, t.last_ts) == (1000.0, 1099.0)
    assert m.drifting(KEY)


def test_hysteresis_no_flapping_and_a_second_alert_only_after_recovery():
    m = monitor(window=100, enter_psi=0.25, exit_psi=0.10)
    stable = CALIBRATION
    shifted = [0.9 + (i % 10) / 100 for i in range(100)]
    # mildly shifted: half the bins weigh 14 %, the other half 6 %: PSI ~0.13, between the bands
    mild = [b / 10 + j / 1000 for b in range(10) for j in range(14 if b < 5 else 6)]
    assert 0.10 < window_psi(score_reference(CALIBRATION), mild) < 0.25
    alerts = []
    for window in (stable, shifted, mild, shifted, mild, stable, shifted):
        for s in window:
            if (t := m.observe(KEY, s)) is not None:
                alerts.append(t.window_index)
    # enters at window 1; mild windows neither leave nor re-enter; leaves at 5; enters at 6
    assert alerts == [1, 6]


def test_defer_is_a_bin_of_its_own_and_keys_are_separate():
    m = monitor(window=100)
    other = DriftKey("groundedness", "m2", "t1")
    alerts = []
    for i in range(400):
        if (t := m.observe(KEY, None)) is not None:  # every verdict of m1 is a DEFER
            alerts.append(t)
        assert m.observe(other, CALIBRATION[i % 100]) is None
    assert [(a.key, a.deferred_share, a.window_mean) for a in alerts] == [(KEY, 1.0, None)]


def test_uncalibrated_kinds_are_ignored_and_bad_settings_refused():
    m = monitor(window=10)
    assert all(m.observe(DriftKey("relevance", None, None), 0.0) is None for _ in range(100))
    with pytest.raises(ValueError, match="exit_psi"):
        DriftMonitor({}, window=10, enter_psi=0.1, exit_psi=0.2)
