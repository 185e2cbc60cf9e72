"""The spec-002 formulas, bands, caps and guard rails, one by one (pure, no spaCy)."""

from __future__ import annotations

import pytest

from verdictflow.evaluators.summary_judges import judge_lock, twin_lock
from verdictflow.evaluators.summary_judges.claims import Claim, unsupported_fraction
from verdictflow.evaluators.summary_judges.common import Shared
from verdictflow.evaluators.summary_judges.keypoints import COVERAGE_BANDS, recall
from verdictflow.evaluators.summary_judges.rules import (
    Caps,
    band,
    clamp_score,
    harmonic_mean,
    round_half_up,
    round_int,
)
from verdictflow.evaluators.summary_judges.segments import RELEVANCE_BANDS, Segment


def claims(*labels: str) -> list[Claim]:
    return [Claim(i, f"claim {i}", lab, 1.0, ()) for i, lab in enumerate(labels)]


def shared(labels: tuple[str, ...] = (), extraneous: int = 0, total: int = 10) -> Shared:
    cl = claims(*labels)
    return Shared(
        extraneous=[object()] * extraneous,  # type: ignore[list-item]
        summary_content=total,
        claims=cl,
        unsupported_fraction=unsupported_fraction(cl),
        segments=[Segment("a relevant segment of words", 1.0, "High")],
    )


def test_round_half_up_not_bankers():
    assert round_half_up(2.675, 2) == 2.68
    assert round_int(2.5) == 3
    assert round_int(3.5) == 4
    assert clamp_score(10.4) == 10.0
    assert clamp_score(-1) == 0.0


@pytest.mark.parametrize(
    ("value", "label"),
    [(1.0, "Fully"), (0.76, "Fully"), (0.75, "Partial"), (0.5, "Partial"), (0.25, "Not")],
)
def test_coverage_bands_lower_on_edge(value, label):
    assert band(value, COVERAGE_BANDS, "Not") == label


@pytest.mark.parametrize(("value", "label"), [(0.8, "Some"), (0.81, "High"), (0.3, "None")])
def test_relevance_bands_lower_on_edge(value, label):
    assert band(value, RELEVANCE_BANDS, "None") == label


def test_recall_and_harmonic_mean():
    points = [{"label": "Fully"}, {"label": "Partial"}, {"label": "Not"}, {"label": "Fully"}]
    assert recall(points) == pytest.approx((2 + 0.5) / 4)
    assert harmonic_mean(1.0, 0.5) == pytest.approx(2 / 3)
    assert harmonic_mean(0.0, 1.0) == 0.0


def test_unsupported_fraction_formula():
    assert unsupported_fraction(claims("Supported", "Partially", "Unsupported", "Supported")) == (
        pytest.approx((1 + 0.5) / 4)
    )


def test_twin_hallucination_score_rounds_half_up():
    # uf = 0.25 -> 10 - round(3.5) = 10 - 4 = 6
    assert twin_lock.hallucination(shared(("Partially", "Supported")))["overall_score"] == 6.0
    # uf = (Unsupported + 0.5 Partially) / N = 1.5 / 4 = 0.375 -> 10 - round(5.25) = 5
    out = twin_lock.hallucination(shared(("Unsupported", "Partially", "Supported", "Supported")))
    assert out["overall_score"] == 5.0


def test_judge_hallucination_raw_and_severity():
    s = shared(("Unsupported", "Supported"))  # uf 0.5: exactly on the edge -> moderate
    from verdictflow.evaluators.summary_judges.rules import band as b

    assert b(0.5, judge_lock.SEVERITY_BANDS, "minor") == "moderate"
    assert b(0.51, judge_lock.SEVERITY_BANDS, "minor") == "severe"
    assert b(0.25, judge_lock.SEVERITY_BANDS, "minor") == "minor"
    assert s.unsupported_fraction == 0.5
    # Unsupported exists -> max(0, 4 - round(0.5 * 4)) = 2
    assert max(0, 4 - round_int(0.5 * 4)) == 2


def test_caps_record_rule_limit_and_before():
    caps = Caps()
    assert caps.cap(8.5, 4.0, "extraneous_claim", True) == 4.0
    assert caps.cap(3.0, 4.0, "other", True) == 3.0  # did not lower: not recorded
    assert caps.cap(9.0, 4.0, "off", False) == 9.0
    assert caps.applied == [{"rule": "extraneous_claim", "limit": 4.0, "before": 8.5}]


def test_precision_counts_extraneous_tokens():
    assert shared(extraneous=1, total=20).precision == pytest.approx(0.95)
    assert shared(("Unsupported",)).extraneous_claim
    assert not shared(("Partially",)).extraneous_claim


def _perfect_metrics(spans: int) -> dict:
    return {
        "coverage": {"overall_score": 10.0, "caps": [], "qag": [], "precision": 1.0, "recall": 1.0},
        "alignment": {"overall_score": 9.6, "caps": []},
        "hallucination": {
            "overall_score": 10.0,
            "caps": [],
            "severity": "minor",
            "claims": [{"claim": f"c{i}", "label": "Supported"} for i in range(spans)],
        },
        "relevance": {"overall_score": 10.0, "caps": [], "segments": []},
        "bias_toxicity": {"overall_score": 10.0, "caps": []},
    }


def test_perfect_10_guard_rail_downgrades_to_9():
    metrics = _perfect_metrics(spans=3)
    judge_lock.safeguards(metrics, shared(("Supported",) * 3), [])
    assert {m["overall_score"] for m in metrics.values()} == {9.0}
    assert metrics["coverage"]["caps"][0]["rule"].startswith("perfect_10_guard_rail")


def test_perfect_10_kept_with_enough_evidence():
    metrics = _perfect_metrics(spans=5)
    judge_lock.safeguards(metrics, shared(("Supported",) * 5), [])
    assert metrics["coverage"]["overall_score"] == 10.0


def test_judge_global_hallucination_cap_and_severe_alignment_cap():
    metrics = _perfect_metrics(spans=5)
    metrics["hallucination"]["severity"] = "severe"
    judge_lock.safeguards(metrics, shared(("Unsupported", "Supported")), [])
    assert metrics["coverage"]["overall_score"] == 3.0
    assert metrics["relevance"]["overall_score"] == 3.0
    assert metrics["alignment"]["overall_score"] == 3.0
    assert metrics["bias_toxicity"]["overall_score"] == 10.0
