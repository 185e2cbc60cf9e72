"""The spec-002 rounding, bands, caps and guard rails, one by one (pure, no spaCy); the
formulas, through both paths, are ``test_rubric.py``'s."""

from __future__ import annotations

import pytest

from verdictflow.evaluators.summary_judges import rubric
from verdictflow.evaluators.summary_judges.keypoints import COVERAGE_BANDS
from verdictflow.evaluators.summary_judges.rules import (
    Caps,
    band,
    clamp_score,
    harmonic_mean,
    round_half_up,
    round_int,
)
from verdictflow.evaluators.summary_judges.segments import RELEVANCE_BANDS


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


def test_harmonic_mean():
    assert harmonic_mean(1.0, 0.5) == pytest.approx(2 / 3)
    assert harmonic_mean(0.0, 1.0) == 0.0


def test_severity_bands_lower_on_edge():
    assert band(0.5, rubric.SEVERITY_BANDS, "minor") == "moderate"
    assert band(0.51, rubric.SEVERITY_BANDS, "minor") == "severe"
    assert band(0.25, rubric.SEVERITY_BANDS, "minor") == "minor"


def test_caps_record_rule_limit_and_before():
    caps = Caps()
    assert caps.cap(8.5, 4.0, "extraneous_claim", True) == 4.0
    assert caps.cap(3.0, 4.0, "other", True) == 3.0  # did not lower: not recorded
    assert caps.cap(9.0, 4.0, "off", False) == 9.0
    assert caps.applied == [{"rule": "extraneous_claim", "limit": 4.0, "before": 8.5}]


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
    rubric.safeguards(metrics, found=False, duplicate_spans=False)
    assert {m["overall_score"] for m in metrics.values()} == {9.0}
    assert metrics["coverage"]["caps"][0]["rule"].startswith("perfect_10_guard_rail")


def test_perfect_10_kept_with_enough_evidence():
    metrics = _perfect_metrics(spans=5)
    rubric.safeguards(metrics, found=False, duplicate_spans=False)
    assert metrics["coverage"]["overall_score"] == 10.0


def test_judge_global_hallucination_cap_and_severe_alignment_cap():
    metrics = _perfect_metrics(spans=5)
    metrics["hallucination"]["severity"] = "severe"
    rubric.safeguards(metrics, found=True, duplicate_spans=False)
    assert metrics["coverage"]["overall_score"] == 3.0
    assert metrics["relevance"]["overall_score"] == 3.0
    assert metrics["alignment"]["overall_score"] == 3.0
    assert metrics["bias_toxicity"]["overall_score"] == 10.0
