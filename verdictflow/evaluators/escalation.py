"""Which cheap verdicts the judge tier reviews (policy ``judge_tier.escalate``), and in what
order when the budget is short. Pure: a verdict and the policy in, a priority out; the same
verdict always gets the same answer (a sampled PASS is chosen by its id, not by chance).
"""

from __future__ import annotations

import hashlib
from enum import IntEnum

from verdictflow.evaluators.judge_tier_policy import JudgeTierPolicy
from verdictflow.models.verdicts import Decision, Verdict


class Priority(IntEnum):
    """Lower goes first when the budget is short."""

    FAIL = 0
    BAND = 1
    SAMPLE = 2

    @property
    def label(self) -> str:
        return self.name.lower()


def sample_point(verdict_id: str) -> float:
    """A uniform point in [0, 1) fixed by the verdict id: a PASS is sampled when it is below
    ``pass_sample``, so the sample is the same on every replay and every worker."""
    digest = hashlib.sha256(("judge-sample\x1f" + verdict_id).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def escalation(verdict: Verdict, policy: JudgeTierPolicy) -> Priority | None:
    """The priority at which ``verdict`` escalates, or None when it does not."""
    rule = policy.escalate.get(verdict.kind.value)  # type: ignore[call-overload]
    if rule is None:
        return None
    if rule.fail and verdict.decision is Decision.FAIL:
        return Priority.FAIL
    if rule.band is not None and verdict.score is not None:
        low, high = rule.band
        if low <= verdict.score <= high:
            return Priority.BAND
    if verdict.decision is Decision.PASS and sample_point(verdict.verdict_id) < rule.pass_sample:
        return Priority.SAMPLE
    return None
