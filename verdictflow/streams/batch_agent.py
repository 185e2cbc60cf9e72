"""The one loop every agent runs: take a batch, handle it, deliver, record state, ack.

At-least-once rests on the order of these steps, and four hand-written copies of the loop
drifted apart (one acked a batch whose scoring setup had failed). So the order lives here:

1. ``take_events`` hands over a batch; its offsets are acked when the next one is asked for.
2. The agent's handler scores the batch and hands every output to the outbox.
3. ``outbox.drain()`` waits until every output was delivered.
4. The batch's staged table writes (:class:`~verdictflow.streams.durable_table.StagedWrites`)
   are written and awaited: state never says "emitted" before the output is in its topic.
5. ``delivered(records)`` learns what was forwarded (the answers agent's watermark).

Any exception in 2-5 (bad input never raises: handlers dead-letter it) is a failure that is not
the input's fault: the worker stops without committing (:mod:`verdictflow.streams.fatal`), so
the batch is processed again after the restart.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import faust

from verdictflow.streams.durable_table import StagedWrites, writes_for
from verdictflow.streams.fatal import stop_without_commit
from verdictflow.streams.outbox import Outbox
from verdictflow.streams.records import Record
from verdictflow.streams.settings import Settings

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

    @app.agent(channel, name=name)
    async def agent(stream: Any) -> None:
        async for batch in stream.take_events(size, settings.batch_window_seconds):
            records = [Record.from_faust(event.message) for event in batch]
            try:
                tables = staged.batch() if staged is not None else contextlib.nullcontext()
                async with tables:
                    await handle(batch, records)
                    await outbox.drain()  # delivered before take_events acks the batch
                    if staged is not None:
                        await staged.commit()  # then the state that records the outputs
                if delivered is not None:
                    delivered(records)
            except Exception as exc:  # table, producer or setup failure: see streams.fatal
                stop_without_commit(name, exc)

    return agent
