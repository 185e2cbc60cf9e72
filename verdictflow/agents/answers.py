"""Answers agents, one per tier: decode each AnswerEvent and emit the verdicts of that tier.

- ``vf-answers`` (lexical tier, the worker's main consumer group): groundedness, relevance and
  completeness verdicts; a malformed value goes to ``dead-letters`` with the reason and source
  offset; the consistency set is scored right here when the event carries it whole (inline
  variants, or no request_id), otherwise the event is forwarded, keyed by request, to the
  consistency agent that collects variants across events.
- ``vf-answers-nlp`` (NLP tier, its own consumer group ``<app id>-nlp``): hallucination
  verdicts, spaCy once per batch over the batch's answers and new contexts, in a thread so the
  event loop (and the lexical tier sharing it in ``--tier all``) keeps running. Malformed values
  are skipped: the lexical tier dead-letters them, once.

Records are taken in batches (:mod:`verdictflow.streams.batch_agent`) so per-batch costs are
paid once, and offsets are acked only after the batch's results were delivered (at-least-once;
verdict ids make it idempotent).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import faust

from verdictflow.agents.consistency import group_message
from verdictflow.agents.isolation import score_isolating_failures
from verdictflow.evaluators import variant_groups
from verdictflow.evaluators.answer_analysis import AnswerAnalyzer
from verdictflow.evaluators.answer_batch import score_answers
from verdictflow.evaluators.answer_verdicts import ScoringContext
from verdictflow.evaluators.kinds import TIER_AGENTS, Tier
from verdictflow.exceptions import InvalidEvent
from verdictflow.models.codec import decode, encode
from verdictflow.models.events import AnswerEvent
from verdictflow.streams.batch_agent import batch_agent
from verdictflow.streams.outbox import Outbox
from verdictflow.streams.records import Record, dead_letter
from verdictflow.streams.settings import Settings
from verdictflow.streams.source_progress import SourceProgress
from verdictflow.streams.topics import CONSISTENCY_GROUPS, DEAD_LETTERS, verdict_topic

logger = logging.getLogger(__name__)

Outputs = list[tuple[str, str, bytes]]
TimedEvent = tuple[AnswerEvent, float | None]


async def process_answers(
    records: Sequence[Record],
    outbox: Outbox,
    ctx: ScoringContext,
    analyzer: AnswerAnalyzer,
    *,
    max_bytes: int,
    tier: Tier = Tier.LEXICAL,
) -> None:
    """Score a batch of ``answers`` records for ``tier`` and send every output, in record order.

    Bad input never raises: the lexical tier dead-letters it, and either tier dead-letters an
    input that makes one of its scorers raise (a bug must not stop the stream): when the batch
    as a whole fails, each event is scored on its own so that only the culprit is dead-lettered.
    Sends are outside that net on purpose: a producer failure stops the agent before the offset
    is committed, so the records are processed again.
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

    def score_all() -> list[Outputs | InvalidEvent]:
        return list(
            score_isolating_failures(
                events,
                lambda batch: score_answer_events(batch, ctx, analyzer, tier),
                lambda item: f"answer {item[0].id}",
            )
        )

    # spaCy holds the CPU for up to seconds per batch: off the event loop in the NLP tier.
    scored = iter(await asyncio.to_thread(score_all) if tier is Tier.NLP else score_all())
    for record, item in zip(records, decoded, strict=True):
        if isinstance(item, InvalidEvent) and tier is not Tier.LEXICAL:
            continue  # dead-lettered by the lexical tier
        headers = {"vf-source": record.where.encode()}
        outputs = next(scored) if isinstance(item, AnswerEvent) else item
        if isinstance(outputs, InvalidEvent):
            outputs = [(DEAD_LETTERS, record.topic, encode(dead_letter(record, outputs)))]
        for topic, key, value in outputs:
            await outbox.send(topic, key, value, headers)


def score_answer_events(
    timed_events: Sequence[TimedEvent],
    ctx: ScoringContext,
    analyzer: AnswerAnalyzer,
    tier: Tier,
) -> list[Outputs]:
    """(topic, key, value) of everything each valid answer (with its record's log time)
    produces in ``tier``: its per-answer verdicts, and in the lexical tier its Q2 verdict when
    the event is self-contained, else the message that joins it to its group."""
    results = []
    events = [event for event, _ in timed_events]
    scored = score_answers(events, ctx, analyzer, tier)
    for (event, log_time), verdicts in zip(timed_events, scored, strict=True):
        outputs = [(verdict_topic(v.kind), v.input_id, encode(v)) for v in verdicts]
        if tier is Tier.LEXICAL:
            if variant_groups.is_self_contained(event):
                q2 = variant_groups.score_self_contained(event, ctx)
                outputs.append((verdict_topic(q2.kind), q2.input_id, encode(q2)))
            else:
                outputs.append(
                    (CONSISTENCY_GROUPS, event.group_key, group_message(event, log_time))
                )
        results.append(outputs)
    return results


def register(
    app: faust.App,
    topics: Mapping[str, Any],
    new_outbox: Callable[[], Outbox],
    ctx: ScoringContext,
    settings: Settings,
    analyzer: AnswerAnalyzer,
    tier: Tier,
    progress: SourceProgress | None = None,
) -> Any:
    """Declare ``tier``'s answers agent on ``app``; ``progress`` (lexical tier) learns what it
    has forwarded to the consistency agent."""
    outbox = new_outbox()

    async def handle(events: Sequence[Any], records: Sequence[Record]) -> None:
        await process_answers(
            records, outbox, ctx, analyzer, max_bytes=settings.max_event_bytes, tier=tier
        )

    return batch_agent(
        app,
        topics["answers"],
        name=TIER_AGENTS[tier],
        settings=settings,
        outbox=outbox,
        handle=handle,
        delivered=None if progress is None else progress.forwarded,  # watermark after delivery
    )
