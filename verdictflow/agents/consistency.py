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

from verdictflow.agents.names import CONSISTENCY_AGENT
from verdictflow.evaluators import variant_groups as vg
from verdictflow.evaluators.answer_verdicts import ScoringContext
from verdictflow.pipelines.groups import apply_group_message, close_message
from verdictflow.settings import Settings
from verdictflow.streams.batch_agent import batch_agent, per_record
from verdictflow.streams.durable_table import StagedWrites, durable_table
from verdictflow.streams.outbox import Outbox, send_model
from verdictflow.streams.records import Record, key_partition
from verdictflow.streams.source_progress import SourceProgress
from verdictflow.streams.topics import CONSISTENCY_GROUPS, CONSISTENCY_TABLE, verdict_topic

logger = logging.getLogger(__name__)


async def process_group_record(record: Record, store: vg.GroupStore, outbox: Outbox) -> None:
    """Apply one internal message.

    Internal messages are produced by this package, so one that does not parse is a bug or a
    foreign producer: it is logged with its offset and skipped. Table and producer failures are
    *not* caught: they stop the agent before its offset is committed, so the message is
    processed again after restart instead of being lost.
    """
    try:
        verdict = apply_group_message(store, record.value or b"", time.time())
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        logger.exception("unusable internal message at %s skipped", record.where)
        return
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
        name=CONSISTENCY_AGENT,
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
