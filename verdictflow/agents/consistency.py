"""Consistency agent: collects the variants of one request across events in a Faust table.

Input is the internal topic ``internal.consistency-groups``, keyed by request, carrying two
message types: ``answer`` (an event forwarded by the answers agent) and ``close`` (sent by this
module's timer when a group's window has passed). Keeping both on one topic means every change
to a group happens inside stream processing, in the partition that owns the group, which is
what a changelog-backed table needs.

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
from verdictflow.streams.durable_table import durable_table, writes_for
from verdictflow.streams.fatal import stop_without_commit
from verdictflow.streams.outbox import Outbox, send_model
from verdictflow.streams.records import Record
from verdictflow.streams.settings import Settings
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


def group_message(event: AnswerEvent) -> bytes:
    """An ``answer`` message: the event without its contexts (not needed for Q2)."""
    return orjson.dumps({"type": "answer", "event": event.model_dump(include=_FORWARDED_FIELDS)})


def close_message(key: str) -> bytes:
    return orjson.dumps({"type": "close", "key": key})


def parse_group_message(value: bytes) -> AnswerEvent | str:
    """The inverse of :func:`group_message` and :func:`close_message`: an answer to add to
    its group, or the key of a group whose window may have closed."""
    msg = orjson.loads(value)
    if msg["type"] == "answer":
        return AnswerEvent.model_validate(msg["event"])
    return str(msg["key"])


async def process_group_record(record: Record, store: vg.GroupStore, outbox: Outbox) -> None:
    """Apply one internal message.

    Internal messages are produced by this package, so one that does not parse is a bug or a
    foreign producer: it is logged with its offset and skipped. Table and producer failures are
    *not* caught: they stop the agent before its offset is committed, so the message is
    processed again after restart instead of being lost.
    """
    try:
        parsed = parse_group_message(record.value or b"")
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        logger.exception("unusable internal message at %s skipped", record.where)
        return
    now = time.time()
    if isinstance(parsed, AnswerEvent):
        verdict = store.on_answer(parsed, now)
    else:
        verdict = store.on_close(parsed, now)
    if verdict is not None:
        headers = {"vf-source": record.where.encode()}
        await send_model(outbox, verdict_topic(verdict.kind), verdict.input_id, verdict, headers)


def register(
    app: faust.App,
    topics: Mapping[str, Any],
    new_outbox: Callable[[], Outbox],
    ctx: ScoringContext,
    settings: Settings,
) -> Any:
    """Declare the groups table, the consistency agent and its window-closing timer."""
    outbox, timer_outbox = new_outbox(), new_outbox()
    table = durable_table(
        app,
        CONSISTENCY_TABLE,
        key_type=str,
        partitions=settings.partitions,
    )
    store = vg.GroupStore(table, ctx, forget_seconds=settings.consistency_forget_seconds)
    tick = settings.consistency_tick_seconds

    @app.agent(topics[CONSISTENCY_GROUPS], name="vf-consistency")
    async def consistency_agent(stream: Any) -> None:
        async for batch in stream.take_events(settings.batch_size, settings.batch_window_seconds):
            try:
                for event in batch:
                    with writes_for(event):
                        await process_group_record(Record.from_faust(event.message), store, outbox)
                await outbox.drain()  # delivered before take_events acks the batch
                await table.flush_writes()  # and so are the table's changelog writes
            except Exception as exc:  # table or producer failure: see streams.fatal
                stop_without_commit("consistency agent", exc)

    @app.timer(tick, name="vf-consistency-close-windows")  # type: ignore[untyped-decorator]
    async def close_expired_windows() -> None:
        try:
            for key in store.due_for_close(time.time(), resend_after=10 * tick):
                await timer_outbox.send(CONSISTENCY_GROUPS, key, close_message(key))
            await timer_outbox.drain()
        except Exception as exc:  # close ticks are re-sent; a lost one only delays a verdict
            logger.warning("could not send window-close messages: %s", exc)

    return consistency_agent
