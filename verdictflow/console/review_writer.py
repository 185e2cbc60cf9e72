"""What the console writes (issue 44): queue entries to ``internal.review-queue``, labels to
``labels``, agreement alerts to ``alerts``.

One producer, started in the background and restarted after a broker error, so a console
whose broker is away still shows what it has read (labelling answers 503 until it is back).
Queue entries and alerts wait in the :class:`~verdictflow.console.review_queue.ReviewQueue`'s
outboxes until they are acknowledged: nothing sampled is dropped because the broker blinked.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable
from typing import TypeVar

import orjson
from aiokafka import AIOKafkaProducer
from pydantic import BaseModel

from verdictflow.console.review_queue import ReviewQueue
from verdictflow.models.labels import ReviewLabel
from verdictflow.settings import Settings
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.replay import make_producer
from verdictflow.streams.topics import ALERTS, LABELS, REVIEW_QUEUE

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)
FLUSH_SECONDS = 0.5
RETRY_SECONDS = 2.0


class LabelNotWrittenError(RuntimeError):
    """The broker cannot take a label now (the route answers 503)."""


class ReviewWriter:
    def __init__(self, settings: Settings, queue: ReviewQueue) -> None:
        self.settings = settings
        self.queue = queue
        self.producer: AIOKafkaProducer | None = None
        self._stopping = asyncio.Event()

    def stop(self) -> None:
        self._stopping.set()

    def _topic(self, short: str) -> str:
        return self.settings.topic_prefix + short

    async def run(self) -> None:
        """Keep a producer and drain the outboxes until stopped."""
        while not self._stopping.is_set():
            try:
                if self.producer is None:
                    await ensure_topics(self.settings, [LABELS, REVIEW_QUEUE, ALERTS])
                    producer = make_producer(self.settings, 1024 * 1024, linger_ms=0)
                    await producer.start()
                    self.producer = producer
                await self._flush(self.producer)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), FLUSH_SECONDS)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the broker went away: a fresh producer, later
                logger.warning("console review writer: %s; retrying in %.0f s", exc, RETRY_SECONDS)
                await self._drop_producer()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), RETRY_SECONDS)
        await self._drop_producer()

    async def _flush(self, producer: AIOKafkaProducer) -> None:
        await self._send_out(producer, self.queue.outbox, REVIEW_QUEUE, lambda e: e.input_id)
        await self._send_out(producer, self.queue.alerts_out, ALERTS, lambda a: a.alert_id)

    async def _send_out(
        self,
        producer: AIOKafkaProducer,
        pending: deque[M],
        topic: str,
        key: Callable[[M], str],
    ) -> None:
        """Send ``pending``'s records in order, each dropped from it only once acknowledged."""
        while pending:
            record = pending[0]
            await producer.send_and_wait(
                self._topic(topic),
                orjson.dumps(record.model_dump(mode="json")),
                key=key(record).encode(),
            )
            pending.popleft()

    async def label(self, label: ReviewLabel) -> None:
        """Write ``label`` and wait for the broker's ack; then the queue knows it too."""
        if self.producer is None:
            raise LabelNotWrittenError("the console is not connected to the broker yet")
        try:
            await self.producer.send_and_wait(
                self._topic(LABELS),
                orjson.dumps(label.model_dump(mode="json")),
                key=label.key.encode(),
            )
        except Exception as exc:
            raise LabelNotWrittenError(f"the broker did not take the label: {exc}") from exc
        self.queue.stored_label(label.model_dump(mode="json"))
        logger.info(
            "label: %s says %s of %s on %s", label.reviewer, label.expected, label.kind,
            label.input_id,
        )  # fmt: skip

    async def _drop_producer(self) -> None:
        producer, self.producer = self.producer, None
        if producer is not None:
            with contextlib.suppress(Exception):
                await producer.stop()
