"""``verdictflow eval answers FILE --judge local``: the judge tier's verdicts offline (issue 43).

For every answer whose cheap verdicts the policy escalates (``judge_tier.escalate``), the same
judge request the NLP tier sends (:func:`~verdictflow.pipelines.escalations.judge_requests`),
asked of the same client and backend a judge worker builds (:func:`~verdictflow.judge_tier.
factory.make_client`: the shipped checker unless ``VERDICTFLOW_JUDGE_*`` names another), and
the verdict built as the judge agent builds it: so a ``faithfulness_llm`` verdict computed from
a file is byte-identical to the stream's for the same answer, and the cascade can be measured
on any file. Requests go in priority order (FAILs first), under the policy's budget.

Fail closed, as the stream is:

- a request on which the backend raises (a bug one input trips, a model that cannot take it)
  gives a dead letter ``internal_error`` naming the answer's line, and the other requests go on
  (the judge worker dead-letters that request and goes on too: ``streams.batch_agent``);
- an endpoint that does not answer through every attempt (down, throttling past the retries,
  the circuit breaker open) stops the command with :class:`JudgeUnavailableError` and writes
  nothing: the judge worker would wait and ask again, which a command cannot do for ever, and
  a file scored without the judge's share would read as one the judge passed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from verdictflow.evaluators.escalation import Priority
from verdictflow.evaluators.faithfulness_llm import build_verdict
from verdictflow.evaluators.policy import Policy
from verdictflow.exceptions import InvalidEvent, VerdictflowError
from verdictflow.judge_tier.budget import BudgetSkipped
from verdictflow.judge_tier.client import JudgeClient, JudgeUnavailable
from verdictflow.judge_tier.factory import judge_context
from verdictflow.models.codec import decode
from verdictflow.models.dead_letter import DeadLetter
from verdictflow.models.events import AnswerEvent
from verdictflow.models.judge import JudgeRequest
from verdictflow.models.verdicts import Verdict
from verdictflow.pipelines.escalations import judge_requests
from verdictflow.streams.records import Record, dead_letter, numbered_records

logger = logging.getLogger(__name__)


class JudgeUnavailableError(VerdictflowError):
    """The judge endpoint did not answer through every attempt; nothing was written."""


@dataclass(frozen=True)
class Escalation:
    """One judge request and the file line (a record numbered as ``eval answers`` numbers
    them) of the answer it reviews."""

    line: Record
    request: JudgeRequest


@dataclass(frozen=True)
class Judged:
    verdicts: list[Verdict]
    dead_letters: list[DeadLetter]


def escalated_requests(
    lines: Iterable[bytes], verdicts: Sequence[Verdict], policy: Policy, source: str = "file"
) -> list[Escalation]:
    """The judge requests the NLP tier would send for ``lines`` given their verdicts, FAILs
    first (the order is otherwise the file's)."""
    by_input: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by_input.setdefault(v.input_id, []).append(v)
    out: list[Escalation] = []
    for record in numbered_records(lines, source):
        try:
            event = decode(record.value, AnswerEvent)  # as the NLP tier reads a record
        except InvalidEvent:
            continue  # a dead letter already
        for _, _, value in judge_requests(
            event, by_input.get(event.id, []), policy.judge_tier, "answer"
        ):
            out.append(Escalation(record, JudgeRequest.model_validate_json(value)))
    return sorted(out, key=lambda e: Priority[e.request.priority.upper()])


async def judge_all(
    escalations: Sequence[Escalation], client: JudgeClient, threshold: float
) -> Judged:
    """Each request's ``faithfulness_llm`` verdict (a request the budget skips gives none, one
    the backend fails on a dead letter); :class:`JudgeUnavailableError` when the endpoint does
    not answer (see the module doc)."""
    ctx = judge_context(client.backend, threshold)
    judged = Judged([], [])
    try:
        for escalation in escalations:
            request = escalation.request
            try:
                outcome = await client.judge(request, Priority[request.priority.upper()])
            except BudgetSkipped:
                continue
            except JudgeUnavailable as exc:
                raise JudgeUnavailableError(
                    f"the judge endpoint did not answer ({exc}); no verdict was written, run "
                    "the command again when it does"
                ) from exc
            except Exception as exc:
                logger.debug("judge failed on answer %s at %s: %s: %s", request.event.id,
                             escalation.line.where, type(exc).__name__, exc)  # fmt: skip
                judged.dead_letters.append(dead_letter(escalation.line, client.request_fault(exc)))
                continue
            if isinstance(outcome, tuple):
                judged.verdicts.append(build_verdict(request, ctx, None, outcome))
            else:
                judged.verdicts.append(build_verdict(request, ctx, outcome))
    finally:
        await client.backend.close()
    return judged


def judge_verdicts(
    lines: Sequence[bytes],
    verdicts: Sequence[Verdict],
    policy: Policy,
    client: JudgeClient,
    source: str = "file",
) -> Judged:
    """The judge tier's verdicts for the escalated share of ``lines`` (scored as
    ``verdicts``), and a dead letter for each request the backend failed on."""
    escalations = escalated_requests(lines, verdicts, policy, source)
    return asyncio.run(judge_all(escalations, client, policy.faithfulness_llm.threshold))
