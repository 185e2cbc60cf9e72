"""Answers agent: decode each AnswerEvent, emit its per-answer verdicts, route consistency.

Per record: a malformed value goes to ``dead-letters`` with the reason and source offset; a
valid one gets groundedness, relevance, completeness and hallucination verdicts (spaCy runs
once per batch over the batch's answers and new contexts). Its consistency set is scored right
here when the event carries it whole (inline variants, or no request_id); otherwise the event
is forwarded, keyed by request, to the consistency agent that collects variants across events.
Records are taken in batches (``stream.take_events``) so per-batch costs are paid once, and
offsets are acked only after the batch's results were handed to the producer (at-least-once;
verdict ids make it idempotent).
"""

from __future__ import annotations

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


async def process_answers(
    records: Sequence[Record],
    outbox: Outbox,
    ctx: ScoringContext,
    analyzer: AnswerAnalyzer,
    *,
    max_bytes: int,
) -> None:
    """Score a batch of ``answers`` records and send every output, in record order.

    Bad input never raises: it is dead-lettered, and so is an input that makes a scorer raise
    (a bug must not stop the stream): when the batch as a whole fails, each event is scored on
    its own so that only the culprit is dead-lettered. Sends are outside that net on purpose: a
    producer failure stops the agent before the offset is committed, so the records are
    processed again.
    """
    decoded: list[AnswerEvent | InvalidEvent] = []
    for record in records:
        try:
            decoded.append(decode(record.value, AnswerEvent, max_bytes=max_bytes))
        except InvalidEvent as exc:
            logger.debug("dead-letter %s: %s", record.where, exc)
            decoded.append(exc)
    events = [
        (e, record.timestamp)
        for record, e in zip(records, decoded, strict=True)
        if isinstance(e, AnswerEvent)
    ]
    scored = iter(
        score_isolating_failures(
            events,
            lambda batch: score_answer_events(batch, ctx, analyzer),
            lambda item: f"answer {item[0].id}",
        )
    )
    for record, item in zip(records, decoded, strict=True):
        headers = {"vf-source": record.where.encode()}
        outputs = next(scored) if isinstance(item, AnswerEvent) else item
        if isinstance(outputs, InvalidEvent):
            outputs = [(DEAD_LETTERS, record.topic, encode(dead_letter(record, outputs)))]
        for topic, key, value in outputs:
            await outbox.send(topic, key, value, headers)


def score_answer_events(
    timed_events: Sequence[tuple[AnswerEvent, float | None]],
    ctx: ScoringContext,
    analyzer: AnswerAnalyzer,
) -> list[Outputs]:
    """(topic, key, value) of everything each valid answer (with its record's log time)
    produces: its per-answer verdicts, and its Q2 verdict when the event is self-contained,
    else the message that joins it to its group."""
    results = []
    events = [event for event, _ in timed_events]
    scored = score_answers(events, ctx, analyzer)
    for (event, log_time), verdicts in zip(timed_events, scored, strict=True):
        outputs = [(verdict_topic(v.kind), v.input_id, encode(v)) for v in verdicts]
        if variant_groups.is_self_contained(event):
            q2 = variant_groups.score_self_contained(event, ctx)
            outputs.append((verdict_topic(q2.kind), q2.input_id, encode(q2)))
        else:
            outputs.append((CONSISTENCY_GROUPS, event.group_key, group_message(event, log_time)))
        results.append(outputs)
    return results


def register(
    app: faust.App,
    topics: Mapping[str, Any],
    new_outbox: Callable[[], Outbox],
    ctx: ScoringContext,
    settings: Settings,
    analyzer: AnswerAnalyzer,
    progress: SourceProgress,
) -> Any:
    """Declare the answers agent on ``app``; ``progress`` learns what it has forwarded."""
    outbox = new_outbox()

    async def handle(events: Sequence[Any], records: Sequence[Record]) -> None:
        await process_answers(records, outbox, ctx, analyzer, max_bytes=settings.max_event_bytes)

    return batch_agent(
        app,
        topics["answers"],
        name="vf-answers",
        settings=settings,
        outbox=outbox,
        handle=handle,
        delivered=progress.forwarded,  # after delivery: the watermark covers delivered answers
    )
