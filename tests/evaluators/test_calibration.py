"""Calibration: closed-form thresholds, cost trade-offs, per-group FPR budget, margins, CLI."""

from __future__ import annotations

import orjson
import pytest

from tests.support.processes import run_verdictflow
from verdictflow.evaluators.calibration import choose_threshold, variance_margin
from verdictflow.evaluators.policy import load_policy

FAIL_LOW = [0.2, 0.5]
PASS_HIGH = [0.4, 0.8]


def test_separable_set_gives_the_lowest_error_free_threshold():
    scores = [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9]
    positives = [False] * 4 + [True] * 4
    choice = choose_threshold(scores, positives)
    assert (choice.threshold, choice.tpr, choice.fpr, choice.cost) == (0.6, 1.0, 0.0, 0.0)


@pytest.mark.parametrize(
    ("cost_fp", "cost_fn", "expected"),
    [
        (1.0, 1.0, 0.8),  # t=0.8 and t=0.4 both cost 1: the stricter one wins (fail closed)
        (1.0, 3.0, 0.4),  # missing a good answer is dearer: accept one false positive
        (3.0, 1.0, 0.8),
    ],
)
def test_cost_trade_off_in_closed_form(cost_fp, cost_fn, expected):
    scores = FAIL_LOW + PASS_HIGH
    positives = [False, False, True, True]
    assert (
        choose_threshold(scores, positives, cost_fp=cost_fp, cost_fn=cost_fn).threshold == expected
    )


def test_one_group_forces_a_stricter_threshold():
    scores = [0.3, 0.5, 0.6, 0.9, 0.7, 0.8, 0.95]
    positives = [False, False, True, True, False, True, True]
    groups = ["A", "A", "A", "A", "B", "B", "B"]
    pooled = choose_threshold(scores, positives, max_fpr=0.5, cost_fn=2.0)
    fair = choose_threshold(scores, positives, groups, max_fpr=0.5, cost_fn=2.0)
    assert pooled.threshold == 0.6
    assert fair.threshold == 0.8
    assert fair.worst_group == "B"
    assert all(f <= 0.5 for f in fair.group_fpr.values())


def test_impossible_budget_is_an_error():
    with pytest.raises(ValueError, match="no threshold meets"):
        choose_threshold([1.0, 1.0], [False, True], max_fpr=0.0)


def test_variance_margin_is_the_upper_quantile():
    spreads = [0.0] * 90 + [0.01] * 5 + [0.05] * 5
    assert variance_margin(spreads, 0.95) == 0.01
    assert variance_margin(spreads, 0.99) == 0.05
    assert variance_margin([], 0.95) == 0.0


def golden_row(covered: int, label: str, group: str = "all") -> bytes:
    context = "a b c d e f g h i j"
    answer = " ".join(list("abcdefghij")[:covered] + [f"x{i}" for i in range(10 - covered)])
    return orjson.dumps(
        {
            "id": f"{label}-{covered}-{group}",
            "answer": answer,
            "contexts": [context],
            "label": label,
            "group": group,
        }
    )


def test_cli_calibrates_groundedness_and_the_policy_takes_effect(tmp_path):
    golden = tmp_path / "golden.jsonl"
    rows = [golden_row(c, "fail") for c in (2, 3, 4, 5)] + [
        golden_row(c, "pass") for c in (7, 8, 9, 10)
    ]
    golden.write_bytes(b"\n".join(rows) + b"\n")
    out, report = tmp_path / "policy.yaml", tmp_path / "report"
    result = run_verdictflow(
        "calibrate",
        str(golden),
        "--kind",
        "groundedness",
        "--out",
        str(out),
        "--report",
        str(report),
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    policy = load_policy(out)
    assert policy.groundedness.threshold == 0.7  # Q1 = covered/10; no perturbation moves it
    record = policy.calibration["groundedness"]
    assert (record.margin, record.expected_tpr, record.expected_fpr) == (0.0, 1.0, 0.0)
    assert (report / "groundedness_roc_det.png").stat().st_size > 10_000
    assert "| threshold | 0.7000 |" in (report / "groundedness_report.md").read_text()
    assert load_policy(out).digest() != load_policy(None).digest()


@pytest.mark.parametrize(
    ("lines", "args", "message"),
    [
        (
            [b'{"id": "a", "answer": "x", "label": "maybe"}'],
            ["--kind", "groundedness"],
            "label must",
        ),
        ([b'{"id": "a", "answer": "x", "label": "pass"}'], ["--kind", "groundedness"], "both pass"),
        (
            [
                b'{"id": "a", "answer": "x", "label": "pass"}',
                b'{"id": "b", "answer": "y", "label": "fail"}',
            ],
            ["--kind", "judge.coverage"],
            "cannot be calibrated",
        ),
    ],
)
def test_cli_rejects_unusable_golden_sets(tmp_path, lines, args, message):
    golden = tmp_path / "g.jsonl"
    golden.write_bytes(b"\n".join(lines) + b"\n")
    result = run_verdictflow(
        "calibrate", str(golden), *args, "--out", str(tmp_path / "p.yaml"), timeout=120
    )
    assert result.returncode == 2
    assert message in result.stderr
    assert not (tmp_path / "p.yaml").exists()


def test_lexical_scores_are_invariant_to_every_perturbation():
    from verdictflow.evaluators import variant_groups as vg
    from verdictflow.evaluators.answer_verdicts import ScoringContext, score_groundedness
    from verdictflow.evaluators.perturb import perturbations
    from verdictflow.evaluators.policy import Policy
    from verdictflow.models.events import AnswerEvent

    ctx = ScoringContext(Policy())
    event = AnswerEvent(
        id="a",
        answer="The Café sat, on the mat!",
        variants=["cat sat", "a mat"],
        contexts=["A café is on a mat.", "The dog sat."],
    )
    for name, perturbed in perturbations(event):
        assert perturbed != event, name
        assert score_groundedness(perturbed, ctx).score == score_groundedness(event, ctx).score
        assert vg.score_self_contained(perturbed, ctx).score == pytest.approx(
            vg.score_self_contained(event, ctx).score, abs=1e-15
        ), name
