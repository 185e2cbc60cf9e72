"""``verdictflow eval answers FILE --judge local``: the judge tier's verdicts offline (issue 43).

For every answer whose cheap verdicts the policy escalates (``judge_tier.escalate``), the same
judge request the NLP tier sends (:func:`~verdictflow.pipelines.escalations.judge_requests`),
asked of the same client and backend a judge worker builds (:func:`~verdictflow.judge_tier.
factory.make_client`: the shipped checker unless ``VERDICTFLOW_JUDGE_*`` names another), and
the verdict built as the judge agent builds it: so a ``faithfulness_llm`` verdict computed from
a file is byte-identical to the stream's for the same answer, and the cascade can be measured
on any file. Requests go in priority order (FAILs first), under the policy's budget.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence

from verdictflow.evaluators.escalation import Priority
from verdictflow.evaluators.faithfulness_llm import build_verdict
from verdictflow.evaluators.policy import Policy
from verdictflow.exceptions import InvalidEvent
from verdictflow.judge_tier.budget import BudgetSkipped
from verdictflow.judge_tier.client import JudgeClient
from verdictflow.judge_tier.factory import judge_context
from verdictflow.models.codec import decode
from verdictflow.models.events import AnswerEvent
from verdictflow.models.judge import JudgeRequest
from verdictflow.models.verdicts import Verdict
from verdictflow.pipelines.escalations import judge_requests


def escalated_requests(
    lines: Iterable[bytes], verdicts: Sequence[Verdict], policy: Policy
) -> list[JudgeRequest]:
    """The judge requests the NLP tier would send for ``lines`` given their verdicts."""
    by_input: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by_input.setdefault(v.input_id, []).append(v)
    out: list[JudgeRequest] = []
    for line in lines:
        try:
            event = decode(line, AnswerEvent)  # as the NLP tier reads a record
        except InvalidEvent:
            continue  # a dead letter already
        for _, _, value in judge_requests(
            event, by_input.get(event.id, []), policy.judge_tier, "answer"
        ):
            out.append(JudgeRequest.model_validate_json(value))
    return sorted(out, key=lambda r: Priority[r.priority.upper()])


async def judge_all(
    requests: Sequence[JudgeRequest], client: JudgeClient, threshold: float
) -> list[Verdict]:
    """Each request's ``faithfulness_llm`` verdict (a request the budget skips gives none)."""
    ctx = judge_context(client.backend, threshold)
    out: list[Verdict] = []
    for request in requests:
        try:
            outcome = await client.judge(request, Priority[request.priority.upper()])
        except BudgetSkipped:
            continue
        if isinstance(outcome, tuple):
            out.append(build_verdict(request, ctx, None, outcome))
        else:
            out.append(build_verdict(request, ctx, outcome))
    await client.backend.close()
    return out


def judge_verdicts(
    lines: Sequence[bytes], verdicts: Sequence[Verdict], policy: Policy, client: JudgeClient
) -> list[Verdict]:
    requests = escalated_requests(lines, verdicts, policy)
    return asyncio.run(judge_all(requests, client, policy.faithfulness_llm.threshold))
