"""Judge requests for the verdicts the policy escalates (``judge_tier.escalate``): the
reviewed verdict and the text it judged, to ``internal.judge-requests``, keyed by the text's
hash (:func:`~verdictflow.models.judge.content_key`). The tier that computed the verdict sends
them (the NLP tier for answers, the summaries agent for summaries): it has the text at hand, so
the judge tier joins nothing (docs/verdicts/faithfulness_llm.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from verdictflow.evaluators.escalation import escalation
from verdictflow.evaluators.judge_tier_policy import JudgeTierPolicy
from verdictflow.models.codec import encode
from verdictflow.models.events import AnswerEvent
from verdictflow.models.judge import JudgeRequest, ReviewedVerdict, content_key
from verdictflow.models.verdicts import Decision, Verdict
from verdictflow.pipelines import Output
from verdictflow.streams.topics import JUDGE_REQUESTS


def judge_requests(
    event: AnswerEvent,
    verdicts: Sequence[Verdict],
    policy: JudgeTierPolicy,
    scope: Literal["answer", "summary"],
) -> list[Output]:
    """One request per escalated verdict of ``event`` (none when nothing escalates)."""
    if not policy.enabled:
        return []
    out: list[Output] = []
    for verdict in verdicts:
        priority = escalation(verdict, policy)
        if priority is None:
            continue
        request = JudgeRequest(
            scope=scope,
            priority=priority.label,  # type: ignore[arg-type]
            reviews=reviewed(verdict),
            event=event,
        )
        out.append((JUDGE_REQUESTS, content_key(event), encode(request)))
    return out


def rubric_request(
    event: AnswerEvent, judge_verdicts: Sequence[Verdict], policy: JudgeTierPolicy
) -> list[Output]:
    """The request for the judge model's rubric on a summary (as an answer whose one context is
    its article), when ``judge_tier.rubric`` wants it given the deterministic judges'
    verdicts; it reviews the first of them that led to it."""
    rule = policy.rubric
    if rule is None or not judge_verdicts:
        return []
    failed = any(v.decision is Decision.FAIL for v in judge_verdicts)
    if not rule.wants([v.score for v in judge_verdicts], failed):
        return []
    request = JudgeRequest(
        task="rubric",
        scope="summary",
        priority="fail" if failed else "band",
        reviews=reviewed(judge_verdicts[-1]),  # Judge-Lock when both ran: the "best variant"
        event=event,
    )
    return [(JUDGE_REQUESTS, content_key(event, "rubric"), encode(request))]


def reviewed(verdict: Verdict) -> ReviewedVerdict:
    """What a judge request says of the verdict it reviews."""
    return ReviewedVerdict(
        verdict_id=verdict.verdict_id,
        kind=verdict.kind,
        score=verdict.score,
        decision=verdict.decision,
        threshold=verdict.threshold,
        config_digest=verdict.config_digest,
    )
