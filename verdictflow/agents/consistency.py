"""Consistency agent: collects the variants of one request across events in a Faust table.

Input is the internal topic ``internal.consistency-groups``, keyed by request, carrying two
message types: ``answer`` (an event forwarded by the answers agent, with its record's log time)
and ``close`` (sent by this module's timer once the answers agent's watermark for the group's
partition passed the end of its window, and carrying that watermark). Keeping both on one topic
means every change to a group happens inside stream processing, in the partition that owns the
group, which is what a changelog-backed table needs; and since the answers the watermark covers
were delivered before the close was sent, they are ahead of it in the partition, however long
a failover held them up (:mod:`verdictflow.streams.source_progress`).

Each message is applied inside :func:`~verdictflow.streams.durable_table.writes_for`, so the
group's changelog record goes to the partition of the message that changed it: a group's state
and its messages share a partition number, and whichever worker is handed that partition after a
rebalance or a restart recovers the group (``tests/integration/test_rebalance.py``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import faust
import orjson

from verdictflow.evaluators import variant_groups as vg
from verdictflow.evaluators.answer_verdicts import ScoringContext
from verdictflow.models.events import AnswerEvent
from verdictflow.streams.batch_agent import batch_agent, per_record
from verdictflow.streams.durable_table import StagedWrites, durable_table
from verdictflow.streams.outbox import Outbox, send_model
from verdictflow.streams.records import Record, key_partition
from verdictflow.streams.settings import Settings
from verdictflow.streams.source_progress import SourceProgress
from verdictflow.streams.topics import CONSISTENCY_GROUPS, CONSISTENCY_TABLE, verdict_topic

logger = logging.getLogger(__name__)

_FORWARDED_FIELDS = {
    "id",
    "request_id",
    "answer",
    "variants",
    "expected_variants",
    "model",
    "tenant",
    "group",
    "ts",
}


def group_message(event: AnswerEvent, log_time: float | None) -> bytes:
    """An ``answer`` message: the event without its contexts (not needed for Q2), and the log
    time of its ``answers`` record, which starts or shortens its group's window."""
    event_fields = event.model_dump(include=_FORWARDED_FIELDS)
    return orjson.dumps({"type": "answer", "event": event_fields, "log_time": log_time})


def close_message(key: str, watermark: float) -> bytes:
    """A ``close`` message: every answer of the key's partition up to log time ``watermark``
    was forwarded before this message (:mod:`verdictflow.streams.source_progress`)."""
    return orjson.dumps({"type": "close", "key": key, "watermark": watermark})


def parse_group_message(value: bytes, now: float) -> tuple[AnswerEvent, float] | tuple[str, float]:
    """The inverse of :func:`group_message` and :func:`close_message`: an answer to add to its
    group with its log time, or the key of a group to close with the watermark. Messages
    written before log-time windows (no time field) take ``now``, the old processing time."""
    msg = orjson.loads(value)
    if msg["type"] == "answer":
        log_time = msg.get("log_time")
        return AnswerEvent.model_validate(msg["event"]), float(
            now if log_time is None else log_time
        )
    watermark = msg.get("watermark")
    return str(msg["key"]), float(now if watermark is None else watermark)


async def process_group_record(record: Record, store: vg.GroupStore, outbox: Outbox) -> None:
    """Apply one internal message.

    Internal messages are produced by this package, so one that does not parse is a bug or a
    foreign producer: it is logged with its offset and skipped. Table and producer failures are
    *not* caught: they stop the agent before its offset is committed, so the message is
    processed again after restart instead of being lost.
    """
    try:
        item, at = parse_group_message(record.value or b"", time.time())
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        logger.exception("unusable internal message at %s skipped", record.where)
        return
    if isinstance(item, AnswerEvent):
        verdict = store.on_answer(item, at)
    else:
        verdict = store.on_close(item, at)
    if verdict is not None:
        headers = {"vf-source": record.where.encode()}
        await send_model(outbox, verdict_topic(verdict.kind), verdict.input_id, verdict, headers)


def register(
    app: faust.App,
    topics: Mapping[str, Any],
    new_outbox: Callable[[], Outbox],
    ctx: ScoringContext,
    settings: Settings,
    progress: SourceProgress,
) -> Any:
    """Declare the groups table, the consistency agent and its window-closing timer, which
    closes a group once ``progress`` (the answers agent's) has passed the end of its window."""
    outbox, timer_outbox = new_outbox(), new_outbox()
    table = durable_table(
        app,
        CONSISTENCY_TABLE,
        key_type=str,
        partitions=settings.partitions,
    )
    staged = StagedWrites(table)  # a group's state reaches the changelog after its verdict
    store = vg.GroupStore(staged, ctx, forget_seconds=settings.consistency_forget_seconds)
    tick = settings.consistency_tick_seconds

    async def handle(record: Record) -> None:
        await process_group_record(record, store, outbox)

    consistency_agent = batch_agent(
        app,
        topics[CONSISTENCY_GROUPS],
        name="vf-consistency",
        settings=settings,
        outbox=outbox,
        handle=per_record(handle),
        staged=staged,
    )

    @app.timer(tick, name="vf-consistency-close-windows")  # type: ignore[untyped-decorator]
    async def close_expired_windows() -> None:
        try:
            now = time.time()
            marks: dict[int, float | None] = {}  # one watermark per partition per tick

            def watermark_of(key: str) -> float | None:
                partition = key_partition(key.encode(), settings.partitions)
                if partition not in marks:
                    marks[partition] = progress.watermark(partition, now)
                return marks[partition]

            for key, watermark in store.due_for_close(watermark_of, now, resend_after=10 * tick):
                await timer_outbox.send(CONSISTENCY_GROUPS, key, close_message(key, watermark))
            await timer_outbox.drain()
        except Exception as exc:  # close ticks are re-sent; a lost one only delays a verdict
            logger.warning("could not send window-close messages: %s", exc)

    return consistency_agent
