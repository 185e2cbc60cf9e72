"""Calibration of every verdict kind: score direction, judge scale, where the threshold lands
in the policy, and that the agents' scoring code then uses it."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.support.processes import run_verdictflow
from verdictflow.evaluators.answer_verdicts import ScoringContext, VerdictMeta, build_verdict
from verdictflow.evaluators.policy import Policy, defer, gate, load_policy
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Decision, ReasonCode, Verdict, VerdictKind
from verdictflow.scoring_jobs.calibration import calibrate as cal
from verdictflow.scoring_jobs.calibration.kinds import batch_scorer, spec_for


def write_golden(path: Path, rows: list[dict[str, object]]) -> cal.GoldenSet:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return cal.read_golden(path, "completeness")


def fixed_scorer(kind: VerdictKind, scores: dict[str, float | None]) -> cal.BatchScorer:
    """A scorer that gives each event id the score in ``scores`` (perturbed copies too)."""
    ctx = ScoringContext(Policy())

    def score(events: list[AnswerEvent], policy: Policy) -> list[Verdict]:
        out = []
        for e in events:
            s = scores[e.id]
            decision = defer(ReasonCode.NO_ANCHORS, "x") if s is None else gate(s, 0.5)
            out.append(build_verdict(ctx, kind, e.id, s, 0.5, decision, {}, VerdictMeta()))
        return out

    return score


def golden_of(labels: dict[str, str], groups: dict[str, str] | None = None) -> cal.GoldenSet:
    events = [AnswerEvent(id=i, answer="a") for i in labels]
    positives = [labels[i] == "pass" for i in labels]
    names = [(groups or {}).get(i, "all") for i in labels]
    return cal.GoldenSet(events, positives, names, "digest")


def test_hallucination_is_lower_is_better_in_closed_form():
    # pass items score low (few unsupported anchors), fail items high; the largest pass score
    # that keeps every fail item out is 0.3, so the policy says "PASS at or below 0.3".
    scores = {"p1": 0.0, "p2": 0.3, "f1": 0.6, "f2": 0.9, "d": None}
    labels = {"p1": "pass", "p2": "pass", "f1": "fail", "f2": "fail", "d": "pass"}
    result = cal.calibrate(
        golden_of(labels),
        "hallucination",
        Policy(),
        scorer=fixed_scorer(VerdictKind.HALLUCINATION, scores),
    )
    assert result.policy.hallucination.threshold == 0.3
    rec = result.record
    assert (rec.direction, rec.threshold, rec.raw_threshold, rec.margin) == ("lower", 0.3, 0.3, 0)
    assert (rec.expected_tpr, rec.expected_fpr, rec.deferred_rows) == (2 / 3, 0.0, 1)
    assert rec.reference is not None
    assert rec.reference.deferred_share == 0.2


def test_hallucination_fairness_one_group_forces_a_stricter_threshold():
    # Pooled, a 50 % FPR budget allows "at most 0.5" (one of two fail items passes), which the
    # cost (a missed pass item costs 2) prefers. Group B's only fail item scores 0.4: in B that
    # threshold passes 100 % of fail items, so min-over-groups forces "at most 0.35".
    scores = {"a1": 0.1, "a2": 0.5, "a3": 0.7, "b1": 0.2, "b2": 0.4, "b3": 0.35}
    labels = {"a1": "pass", "a2": "pass", "a3": "fail", "b1": "pass", "b2": "fail", "b3": "pass"}
    groups = {k: k[0].upper() for k in scores}
    scorer = fixed_scorer(VerdictKind.HALLUCINATION, scores)
    options = {"max_fpr": 0.5, "cost_fn": 2.0, "scorer": scorer}
    pooled = cal.calibrate(golden_of(labels), "hallucination", Policy(), **options)  # type: ignore[arg-type]
    fair = cal.calibrate(golden_of(labels, groups), "hallucination", Policy(), **options)  # type: ignore[arg-type]
    assert (pooled.record.threshold, pooled.record.expected_fpr) == (0.5, 0.5)
    assert (fair.record.threshold, fair.record.expected_fpr) == (0.35, 0.0)
    assert fair.record.worst_group == "B"


def test_judge_thresholds_are_on_0_to_10_and_reach_the_judge_verdicts():
    from verdictflow.evaluators.summary_judges.verdicts import JudgeContext, build_verdict
    from verdictflow.models.events import SummaryEvent

    spec = spec_for("judge.twin_lock")
    assert (spec.scale, spec.from_gate(0.72)) == (10.0, 7.2)
    data = Policy().model_dump(mode="json")
    spec.set_threshold(data, 7.2)
    policy = Policy.model_validate(data)
    assert policy.judge.threshold_for("twin_lock") == 7.2
    assert policy.judge.threshold_for("judge_lock") == 6.0
    metrics = {m: {"overall_score": 7} for m in ("a", "b")}
    event = SummaryEvent(id="s", article="x", summary="y")
    calibrated = build_verdict(event, "twin_lock", metrics, JudgeContext(policy.judge, "p"))
    default = build_verdict(event, "twin_lock", metrics, JudgeContext(Policy().judge, "p"))
    assert (calibrated.threshold, calibrated.decision) == (7.2, Decision.FAIL)
    assert (default.threshold, default.decision) == (6.0, Decision.PASS)
    assert calibrated.config_digest != default.config_digest


def test_judge_golden_set_calibrates_with_summary_events(tmp_path):
    rows = [
        {"id": f"{label}{i}", "article": "a", "summary": "s", "label": label}
        for label in ("pass", "fail")
        for i in range(2)
    ]
    path = tmp_path / "g.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    golden = cal.read_golden(path, "judge.judge_lock")
    scores = {"pass0": 8.0, "pass1": 9.0, "fail0": 4.0, "fail1": 6.5}
    ctx = ScoringContext(Policy())

    def score(events, policy):  # type: ignore[no-untyped-def]
        return [
            build_verdict(
                ctx,
                VerdictKind.JUDGE,
                e.id,
                scores[e.id],
                6,
                gate(scores[e.id], 6),
                {},
                VerdictMeta(),
            )
            for e in events
        ]

    result = cal.calibrate(golden, "judge.judge_lock", Policy(), scorer=score)
    assert result.policy.judge.thresholds == {"judge_lock": 8.0}
    assert result.record.reference is not None
    assert result.record.reference.edges[-1] == 10.0


def completeness_row(i: int, covered: int, label: str) -> dict[str, object]:
    words = ["alpha", "beta", "gamma", "delta"]
    return {
        "id": f"c{i}",
        "query": " ".join(words),
        "answer": " ".join(words[:covered]) + " zeta",
        "label": label,
    }


def test_completeness_with_production_code_in_closed_form(tmp_path):
    # completeness = share of the 4 query keywords in the answer: 3/4 and 4/4 pass, 1/4 and 2/4
    # fail, so the lowest error-free threshold is 0.75; surface perturbations do not move it.
    rows = [
        completeness_row(i, c, "pass" if c >= 3 else "fail") for i, c in enumerate([1, 2, 3, 4])
    ]
    golden = write_golden(tmp_path / "g.jsonl", rows)
    result = cal.calibrate(golden, "completeness", Policy(), scorer=batch_scorer("completeness"))
    assert result.policy.completeness.threshold == 0.75
    assert (result.record.margin, result.record.expected_fpr) == (0.0, 0.0)


TOWER = "The Eiffel Tower opened in 1889 in Paris. It is 330 metres tall."


def tower_golden(
    tmp_path: Path, answers: dict[str, list[str]], query: str | None = None
) -> tuple[list[dict[str, object]], Path]:
    """A golden file of ``answers`` by label, each with :data:`TOWER` as its context."""
    rows: list[dict[str, object]] = [
        {"id": f"{label}{i}", "answer": a, "contexts": [TOWER], "label": label}
        | ({"query": query} if query is not None else {})
        for label, texts in answers.items()
        for i, a in enumerate(texts)
    ]
    golden = tmp_path / "g.jsonl"
    golden.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return rows, golden


@pytest.mark.timeout(300)
def test_cli_calibrates_hallucination_and_verdicts_follow_the_policy(tmp_path):
    answers = {
        "pass": ["It opened in 1889.", "The tower is 330 metres tall.", "It is in Paris."],
        "fail": ["It opened in 1925.", "The tower is 120 metres tall.", "It is in Berlin."],
    }
    rows, golden = tower_golden(tmp_path, answers, query="Tell me about the tower.")
    out = tmp_path / "policy.yaml"
    result = run_verdictflow(
        "calibrate", golden, "--kind", "hallucination", "--out", out, timeout=280
    )
    assert result.returncode == 0, result.stderr
    assert "at most passes" in result.stderr
    policy = load_policy(out)
    assert policy.calibration["hallucination"].direction == "lower"
    assert policy.calibration["hallucination"].expected_fpr == 0.0
    # Score the golden set as the agents would, under the calibrated policy.
    from verdictflow.evaluators.answer_batch import score_answers
    from verdictflow.scoring_setup import load_scoring

    scoring = load_scoring(policy)
    events = [AnswerEvent.model_validate(r) for r in rows]
    decisions = {
        e.id: v[3].decision
        for e, v in zip(events, score_answers(events, scoring.ctx, scoring.analyzer), strict=True)
    }
    assert {k for k, d in decisions.items() if d is Decision.PASS} <= {"pass0", "pass1", "pass2"}
    assert all(decisions[f"fail{i}"] is Decision.FAIL for i in range(3))


@pytest.mark.timeout(300)
def test_cli_calibrates_faithfulness_higher_is_better(tmp_path):
    answers = {
        "pass": ["The tower opened in 1889.", "It is 330 metres tall.", "It stands in Paris."],
        "fail": ["The tower opened in 1925.", "It is 120 metres tall.", "It stands in Berlin."],
    }
    _, golden = tower_golden(tmp_path, answers)
    out = tmp_path / "policy.yaml"
    result = run_verdictflow(
        "calibrate", golden, "--kind", "faithfulness", "--out", out, timeout=280
    )
    assert result.returncode == 0, result.stderr
    assert "at least passes" in result.stderr
    policy = load_policy(out)
    record = policy.calibration["faithfulness"]
    assert record.direction == "higher"
    assert policy.faithfulness.threshold == record.threshold
    assert record.expected_fpr == 0.0


def test_cli_refuses_unwritable_outputs_before_calibrating(tmp_path):
    _, golden = tower_golden(
        tmp_path,
        {"pass": ["It is in Paris.", "It opened in 1889."], "fail": ["It is in Berlin."]},
        query="Tell me about the tower.",
    )
    out = tmp_path / "policy.yaml"
    for args, message in (
        (["--out", tmp_path / "missing" / "p.yaml"], "no such directory"),
        (["--out", out, "--report", "/proc/forbidden"], "cannot create it"),
    ):
        result = run_verdictflow("calibrate", golden, "--kind", "groundedness", *args)
        assert result.returncode == 2, result.stderr
        assert message in result.stderr
        assert "Traceback" not in result.stderr
        assert not out.exists(), "no policy written when the report cannot be"
