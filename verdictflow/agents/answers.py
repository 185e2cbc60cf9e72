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
from collections.abc import Callable, Mapping
from typing import Any

import faust

from verdictflow.agents.consistency import group_message
from verdictflow.evaluators import variant_groups
from verdictflow.evaluators.answer_verdicts import ScoringContext, score_groundedness
from verdictflow.exceptions import InvalidEvent
from verdictflow.models.codec import decode, encode
from verdictflow.models.events import AnswerEvent
from verdictflow.streams.outbox import Outbox
from verdictflow.streams.records import Record, dead_letter
from verdictflow.streams.settings import Settings
from verdictflow.streams.topics import CONSISTENCY_GROUPS, DEAD_LETTERS, verdict_topic

logger = logging.getLogger(__name__)


async def process_answer(
    record: Record, outbox: Outbox, ctx: ScoringContext, *, max_bytes: int
) -> None:
    """Score one ``answers`` record.

    Bad input never raises: it is dead-lettered, and so is an input that makes a scorer raise
    (a bug must not stop the stream). Sends are outside that net on purpose: a producer failure
    stops the agent before the offset is committed, so the record is processed again.
    """
    headers = {"vf-source": record.where.encode()}
    outputs: list[tuple[str, str, bytes]]
    try:
        event = decode(record.value, AnswerEvent, max_bytes=max_bytes)
        outputs = score_answer_event(event, ctx)
    except InvalidEvent as exc:
        logger.debug("dead-letter %s: %s", record.where, exc)
        outputs = [(DEAD_LETTERS, record.topic, encode(dead_letter(record, exc)))]
    except Exception as exc:
        logger.exception("internal error scoring %s; dead-lettered", record.where)
        error = InvalidEvent("internal_error", f"{type(exc).__name__}: {exc}"[:500])
        outputs = [(DEAD_LETTERS, record.topic, encode(dead_letter(record, error)))]
    for topic, key, value in outputs:
        await outbox.send(topic, key, value, headers)


def score_answer_event(event: AnswerEvent, ctx: ScoringContext) -> list[tuple[str, str, bytes]]:
    """(topic, key, value) of everything one valid answer produces: its Q1 verdict, and its
    Q2 verdict when the event is self-contained, else the message that joins it to its group."""
    q1 = score_groundedness(event, ctx)
    outputs = [(verdict_topic(q1.kind), q1.input_id, encode(q1))]
    if variant_groups.is_self_contained(event):
        q2 = variant_groups.score_self_contained(event, ctx)
        outputs.append((verdict_topic(q2.kind), q2.input_id, encode(q2)))
    else:
        outputs.append((CONSISTENCY_GROUPS, event.group_key, group_message(event)))
    return outputs


def register(
    app: faust.App,
    topics: Mapping[str, Any],
    new_outbox: Callable[[], Outbox],
    ctx: ScoringContext,
    settings: Settings,
) -> Any:
    """Declare the answers agent on ``app``."""
    outbox = new_outbox()

    @app.agent(topics["answers"], name="vf-answers")
    async def answers_agent(stream: Any) -> None:
        async for batch in stream.take_events(settings.batch_size, settings.batch_window_seconds):
            for event in batch:
                await process_answer(
                    Record.from_faust(event.message),
                    outbox,
                    ctx,
                    max_bytes=settings.max_event_bytes,
                )

    return answers_agent
