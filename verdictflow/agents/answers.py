"""Answers agent: decode each AnswerEvent, emit its groundedness verdict, route consistency.

Per record: a malformed value goes to ``dead-letters`` with the reason and source offset; a
valid one gets a Q1 verdict. Its consistency set is scored right here when the event carries it
whole (inline variants, or no request_id); otherwise the event is forwarded, keyed by request,
to the consistency agent that collects variants across events. Records are taken in batches
(``stream.take_events``) so per-batch costs are paid once, and offsets are acked only after
the batch's results were handed to the producer (at-least-once; verdict ids make it idempotent).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import faust

from verdictflow.agents.consistency import group_message
from verdictflow.evaluators import variant_groups
from verdictflow.evaluators.answer_verdicts import (
    ScoringContext,
    VerdictMeta,
    score_consistency,
    score_groundedness,
)
from verdictflow.exceptions import InvalidEvent
from verdictflow.models.codec import decode
from verdictflow.models.events import AnswerEvent
from verdictflow.streams.outbox import Outbox, send_model
from verdictflow.streams.records import Record, dead_letter
from verdictflow.streams.settings import Settings
from verdictflow.streams.topics import CONSISTENCY_GROUPS, DEAD_LETTERS, verdict_topic

logger = logging.getLogger(__name__)

async def process_answer(
    record: Record, outbox: Outbox, ctx: ScoringContext, *, max_bytes: int
) -> None:
    """Score one ``answers`` record. Never raises on bad input: it dead-letters instead."""
    headers = {"vf-source": record.where.encode()}
    try:
        event = decode(record.value, AnswerEvent, max_bytes=max_bytes)
    except InvalidEvent as exc:
        logger.debug("dead-letter %s: %s", record.where, exc)
        await send_model(outbox, DEAD_LETTERS, record.topic, dead_letter(record, exc), headers)
        return
    try:
        verdict = score_groundedness(event, ctx)
        await send_model(outbox, verdict_topic(verdict.kind), verdict.input_id, verdict, headers)
        if variant_groups.is_self_contained(event):
            q2 = score_consistency(
                event.group_key, variant_groups.contributions(event), ctx, VerdictMeta.of(event),
                expected=event.expected_variants,
            )
            await send_model(outbox, verdict_topic(q2.kind), q2.input_id, q2, headers)
        else:
            await outbox.send(CONSISTENCY_GROUPS, event.group_key, group_message(event), headers)
    except Exception as exc:  # a scoring bug must not stop the stream: record it and go on
        logger.exception("internal error scoring %s", record.where)
        error = InvalidEvent("internal_error", f"{type(exc).__name__}: {exc}"[:500])
        await send_model(outbox, DEAD_LETTERS, record.topic, dead_letter(record, error), headers)


def register(
    app: faust.App, topics: Mapping[str, Any], outbox: Outbox, ctx: ScoringContext,
    settings: Settings,
) -> Any:
    """Declare the answers agent on ``app``."""

    @app.agent(topics["answers"], name="vf-answers")
    async def answers_agent(stream: Any) -> None:
        async for batch in stream.take_events(settings.batch_size, settings.batch_window_seconds):
            for event in batch:
                await process_answer(
                    Record.from_faust(event.message), outbox, ctx,
                    max_bytes=settings.max_event_bytes,
                )

    return answers_agent

