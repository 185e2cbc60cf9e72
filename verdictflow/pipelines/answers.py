"""``answers`` records in, outputs out: decode, dead-letter, score one tier's kinds (or every
kind, offline), and route each answer's consistency set.

The answers agents call :func:`answer_outputs` per batch and send what it returns; ``eval
answers`` calls it per chunk of a file with ``tier=None`` and applies the ``answer`` messages
to an in-memory group store, as the consistency agent would.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from verdictflow.evaluators import variant_groups
from verdictflow.evaluators.answer_analysis import AnswerAnalyzer
from verdictflow.evaluators.answer_batch import score_answers
from verdictflow.evaluators.answer_verdicts import ScoringContext
from verdictflow.evaluators.kinds import Tier
from verdictflow.exceptions import InvalidEvent
from verdictflow.models.codec import decode, encode
from verdictflow.models.events import AnswerEvent
from verdictflow.pipelines import Output
from verdictflow.pipelines.escalations import judge_requests
from verdictflow.pipelines.groups import group_message
from verdictflow.pipelines.isolation import score_isolating_failures
from verdictflow.streams.records import Record, dead_letter
from verdictflow.streams.topics import CONSISTENCY_GROUPS, DEAD_LETTERS, verdict_topic

logger = logging.getLogger(__name__)

#: An answer event with the log time of its record (None offline).
TimedEvent = tuple[AnswerEvent, float | None]


def answer_outputs(
    records: Sequence[Record],
    ctx: ScoringContext,
    analyzer: AnswerAnalyzer,
    *,
    max_bytes: int,
    tier: Tier | None,
) -> list[list[Output]]:
    """The outputs of each record, in record order, for ``tier`` (``None``: every kind).

    Bad input never raises: a malformed record gives a dead letter (in the lexical tier and
    offline; the NLP tier gives nothing, so a record is dead-lettered once whichever tiers
    run), and an input that makes a scorer raise is dead-lettered too (a bug must not stop the
    stream): when the batch as a whole fails, each event is scored on its own so that only the
    culprit is.
    """
    decoded: list[AnswerEvent | InvalidEvent] = []
    for record in records:
        try:
            decoded.append(decode(record.value, AnswerEvent, max_bytes=max_bytes))
        except InvalidEvent as exc:
            logger.debug("malformed answer %s: %s", record.where, exc)
            decoded.append(exc)
    events = [
        (e, record.timestamp)
        for record, e in zip(records, decoded, strict=True)
        if isinstance(e, AnswerEvent)
    ]
    scored = iter(
        score_isolating_failures(
            events,
            lambda batch: score_answer_events(batch, ctx, analyzer, tier),
            lambda item: f"answer {item[0].id}",
        )
    )
    results: list[list[Output]] = []
    for record, item in zip(records, decoded, strict=True):
        if isinstance(item, InvalidEvent) and tier is Tier.NLP:
            results.append([])  # dead-lettered by the lexical tier
            continue
        outputs = next(scored) if isinstance(item, AnswerEvent) else item
        if isinstance(outputs, InvalidEvent):
            outputs = [(DEAD_LETTERS, record.topic, encode(dead_letter(record, outputs)))]
        results.append(outputs)
    return results


def score_answer_events(
    timed_events: Sequence[TimedEvent],
    ctx: ScoringContext,
    analyzer: AnswerAnalyzer,
    tier: Tier | None,
) -> list[list[Output]]:
    """What each valid answer (with its record's log time) gives in ``tier``: its per-answer
    verdicts, and (lexical tier, offline) its Q2 verdict when the event is self-contained,
    else the message that joins it to its group."""
    results = []
    events = [event for event, _ in timed_events]
    scored = score_answers(events, ctx, analyzer, tier)
    for (event, log_time), verdicts in zip(timed_events, scored, strict=True):
        outputs = [(verdict_topic(v.kind), v.input_id, encode(v)) for v in verdicts]
        if tier is Tier.NLP:  # the judge tier reviews what the policy escalates
            outputs += judge_requests(event, verdicts, ctx.policy.judge_tier, "answer")
        if tier is not Tier.NLP:
            if variant_groups.is_self_contained(event):
                q2 = variant_groups.score_self_contained(event, ctx)
                outputs.append((verdict_topic(q2.kind), q2.input_id, encode(q2)))
            else:
                outputs.append(
                    (CONSISTENCY_GROUPS, event.group_key, group_message(event, log_time))
                )
        results.append(outputs)
    return results
