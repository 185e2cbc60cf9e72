"""What comes to people and how agreement is counted (issue 44): sampling fixed by verdict id,
disagreement between tiers, agreement and Cohen's kappa against hand computations, and one
agreement-drop per window."""

from __future__ import annotations

import pytest

from verdictflow.evaluators.review_policy import AgreementBound, ReviewSample, SampleRule
from verdictflow.evaluators.review_sampling import (
    agreement,
    agreement_drops,
    review_point,
    reviewer_kappas,
    sample_reasons,
    tiers_disagree,
)


def verdict(vid: str, decision: str, score: float | None, kind: str = "faithfulness") -> dict:
    return {"verdict_id": vid, "kind": kind, "decision": decision, "score": score}


def test_sampling_is_fixed_by_the_verdict_id_and_the_policy() -> None:
    policy = ReviewSample(kinds={"faithfulness": SampleRule(fail=True, band=(0.3, 0.6),
                                                            pass_sample=0.25)})  # fmt: skip
    assert sample_reasons(verdict("a", "FAIL", 0.1), policy) == ["fail"]
    assert sample_reasons(verdict("b", "FAIL", 0.5), policy) == ["fail", "band"]
    assert sample_reasons(verdict("c", "DEFER", None), policy) == []
    assert sample_reasons(verdict("d", "PASS", 0.9, kind="relevance"), policy) == []
    passes = [verdict(f"v{i}", "PASS", 0.9) for i in range(2000)]
    sampled = [v for v in passes if sample_reasons(v, policy) == ["pass_sample"]]
    assert 400 <= len(sampled) <= 600  # a quarter, near enough
    assert sampled == [v for v in passes if sample_reasons(v, policy) == ["pass_sample"]]
    assert all(review_point(v["verdict_id"]) < 0.25 for v in sampled)


def test_a_disagreement_needs_both_tiers_to_have_decided() -> None:
    assert tiers_disagree({"faithfulness": "PASS", "faithfulness_llm": "FAIL"})
    assert not tiers_disagree({"faithfulness": "PASS", "faithfulness_llm": "PASS"})
    assert not tiers_disagree({"faithfulness": "DEFER", "faithfulness_llm": "FAIL"})
    assert not tiers_disagree({"faithfulness": "FAIL"})


def label(input_id: str, reviewer: str, decision: str, expected: str, at: float = 0.0,
          kind: str = "faithfulness") -> dict:  # fmt: skip
    return {"input_id": input_id, "kind": kind, "tier": "nlp", "reviewer": reviewer,
            "decision": decision, "expected": expected, "labelled_at": at}  # fmt: skip


def test_agreement_and_kappa_match_a_hand_computation() -> None:
    labels = [
        label("1", "alice", "PASS", "pass"), label("2", "alice", "PASS", "fail"),
        label("3", "alice", "FAIL", "fail"), label("4", "alice", "FAIL", "fail"),
        label("1", "bob", "PASS", "pass"), label("2", "bob", "PASS", "pass"),
        label("3", "bob", "FAIL", "fail"), label("4", "bob", "FAIL", "pass"),
        label("5", "bob", "DEFER", "fail"),  # decided nothing: not in agreement
    ]  # fmt: skip
    [fig] = agreement(labels)
    assert (fig.kind, fig.tier, fig.labels, fig.agreeing) == ("faithfulness", "nlp", 8, 6)
    assert fig.share == pytest.approx(6 / 8)
    assert dict(fig.counts) == {("PASS", "pass"): 3, ("PASS", "fail"): 1,
                                ("FAIL", "fail"): 3, ("FAIL", "pass"): 1}  # fmt: skip
    # alice: pass fail fail fail; bob: pass pass fail pass on inputs 1-4
    # p_o = 2/4; alice says pass 1/4, bob 3/4: p_e = 1/4*3/4 + 3/4*1/4 = 6/16
    # kappa = (8/16 - 6/16) / (1 - 6/16) = 2/10
    [kappa] = reviewer_kappas(labels)
    assert kappa.reviewers == ("alice", "bob")
    assert kappa.items == 4
    assert kappa.value == pytest.approx(0.2)


def test_an_agreement_drop_is_one_alert_per_kind_and_window() -> None:
    bound = AgreementBound(min_agreement=0.7, window_seconds=3600, min_labels=4)
    wrong = [label(str(i), "alice", "PASS", "fail", at=7200 + i) for i in range(3)]
    right = [label(str(i), "alice", "PASS", "pass", at=7300 + i) for i in range(10, 12)]
    assert agreement_drops(wrong[:3], bound) == []  # under min_labels: no verdict on it
    [drop] = agreement_drops(wrong + right, bound)
    assert (drop.window_index, drop.labels, drop.agreement) == (2, 5, 0.4)
    [again] = agreement_drops([*wrong, *right, label("99", "bob", "PASS", "fail", at=7400)], bound)
    assert again.alert_id == drop.alert_id  # the same rule and window: the same alert
    later = [label(str(i), "alice", "PASS", "fail", at=3 * 3600 + i) for i in range(5)]
    assert {d.window_index for d in agreement_drops(wrong + right + later, bound)} == {2, 3}
