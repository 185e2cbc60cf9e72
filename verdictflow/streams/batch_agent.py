"""The one loop every agent runs: take a batch, handle it, deliver, record state, ack.

At-least-once rests on the order of these steps, and four hand-written copies of the loop
drifted apart (one acked a batch whose scoring setup had failed). So the order lives here:

1. ``take_events`` hands over a batch; its offsets are acked when the next one is asked for.
2. The agent's handler scores the batch and hands every output to the outbox.
3. ``outbox.drain()`` waits until every output was delivered.
4. The batch's staged table writes (:class:`~verdictflow.streams.durable_table.StagedWrites`)
   are written and awaited: state never says "emitted" before the output is in its topic.
5. ``delivered(records)`` learns what was forwarded (the answers agent's watermark).

A failure of the infrastructure in 2-5 (the broker, a delivery, a connection:
:func:`is_infrastructure`) is not the input's fault: the worker stops without committing
(:mod:`verdictflow.streams.fatal`), so the batch is processed again after the restart. Any other
exception is taken as the input's (a record whose output or state would be too large to send, a
bug that one input trips): the batch is run again one record at a time, and each record that
fails alone goes to dead letters with its topic, partition, offset and the reason
(``record_too_large``, ``internal_error``), while the others go on. A worker never exits on one
record: before this rule, one trace whose state was too large crashed the lexical tier at every
restart (issue 40).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import faust
from aiokafka.errors import KafkaError

from verdictflow.exceptions import InvalidEvent
from verdictflow.models.codec import encode
from verdictflow.settings import Settings
from verdictflow.streams.durable_table import StagedWrites, writes_for
from verdictflow.streams.fatal import stop_without_commit
from verdictflow.streams.outbox import Outbox
from verdictflow.streams.record_limits import RecordTooLarge
from verdictflow.streams.records import Record, dead_letter
from verdictflow.streams.topics import DEAD_LETTERS

logger = logging.getLogger(__name__)

#: Handles one batch: Faust's events (for :func:`writes_for`) and their records.
BatchHandler = Callable[[Sequence[Any], Sequence[Record]], Awaitable[None]]


def per_record(handle: Callable[[Record], Awaitable[None]]) -> BatchHandler:
    """A batch handler that handles each record inside :func:`writes_for` its event, so table
    state follows the partition of the record that changed it."""

    async def handle_batch(events: Sequence[Any], records: Sequence[Record]) -> None:
        for event, record in zip(events, records, strict=True):
            with writes_for(event):
                await handle(record)

    return handle_batch


def batch_agent(
    app: faust.App,
    channel: Any,
    *,
    name: str,
    settings: Settings,
    outbox: Outbox,
    handle: BatchHandler,
    staged: StagedWrites | None = None,
    delivered: Callable[[Sequence[Record]], None] | None = None,
    batch_size: int | None = None,
) -> Any:
    """Declare agent ``name`` on ``channel`` running the loop of the module doc."""
    size = batch_size or settings.batch_size

    async def run(events: Sequence[Any], records: Sequence[Record]) -> None:
        tables = staged.batch() if staged is not None else contextlib.nullcontext()
        async with tables:
            await handle(events, records)
            await outbox.drain()  # delivered before take_events acks the batch
            if staged is not None:
                await staged.commit()  # then the state that records the outputs

    async def one_by_one(events: Sequence[Any], records: Sequence[Record]) -> None:
        """The batch again, a record at a time; a record that fails alone is dead-lettered."""
        for event, record in zip(events, records, strict=True):
            try:
                await run([event], [record])
            except Exception as exc:
                if is_infrastructure(exc):
                    raise
                logger.error("%s: %s dead-lettered: %s", name, record.where, exc, exc_info=exc)
                letter = dead_letter(record, input_fault(exc))
                await outbox.send(DEAD_LETTERS, record.topic, encode(letter))
                await outbox.drain()

    @app.agent(channel, name=name)
    async def agent(stream: Any) -> None:
        async for batch in stream.take_events(size, settings.batch_window_seconds):
            records = [Record.from_faust(event.message) for event in batch]
            in_hand(app, +1)  # the consumer counts no partition as stalled meanwhile
            try:
                try:
                    await run(batch, records)
                except Exception as exc:
                    if is_infrastructure(exc):
                        raise
                    logger.warning(
                        "%s: a batch of %d failed (%s: %s); running it one record at a time",
                        name, len(records), type(exc).__name__, exc,
                    )  # fmt: skip
                    await one_by_one(batch, records)
                if delivered is not None:
                    delivered(records)
            except Exception as exc:  # table, producer or setup failure: see streams.fatal
                stop_without_commit(name, exc)
            finally:
                in_hand(app, -1)

    return agent


def in_hand(app: Any, change: int) -> None:
    """Count the app's batches in hand (``SafeCommitApp.batches_in_hand``)."""
    app.batches_in_hand = getattr(app, "batches_in_hand", 0) + change


def is_infrastructure(exc: BaseException) -> bool:
    """A failure that is not the input's: the broker, a delivery, a connection, a timeout
    (the worker must stop without committing: see the module doc)."""
    if isinstance(exc, RecordTooLarge):
        return False
    infrastructure = KafkaError | OSError | TimeoutError | MemoryError | ImportError | RuntimeError
    return isinstance(exc, infrastructure) and not isinstance(
        exc, NotImplementedError | RecursionError
    )


def input_fault(exc: BaseException) -> InvalidEvent:
    """The dead-letter reason for a record that failed alone."""
    if isinstance(exc, RecordTooLarge):
        return InvalidEvent("record_too_large", str(exc)[:500])
    if isinstance(exc, InvalidEvent):
        return exc
    return InvalidEvent.internal(exc)
