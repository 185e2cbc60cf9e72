"""The console's Kafka reader: every partition of the followed topics, outside any group.

It never commits and never joins a consumer group, so any number of consoles (and monitors,
ledgers, tails) read the same topics without taking partitions from workers. It remembers the
next offset of each partition; when the connection fails it starts a new consumer there, after
a pause, instead of dying: a console outlives a broker restart. Records seen twice after such a
restart are verdicts with the same ``verdict_id``, which the state counts once.

Lag (records on the broker not yet read, per topic) is measured every second from the
consumer's high-water marks, so the page and the benchmark can tell whether the console keeps
up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from verdictflow.console.state import ConsoleState
from verdictflow.settings import Settings
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.topic_reader import assign_all, groupless_consumer
from verdictflow.streams.topics import (
    ALERTS,
    ANSWERS,
    DEAD_LETTERS,
    DOC_QUALITY,
    LABELS,
    REVIEW_QUEUE,
    SUMMARIES,
    VERDICT_TOPICS,
)

logger = logging.getLogger(__name__)

#: What the console reads: the verdicts and what explains them.
CONSOLE_TOPICS: tuple[str, ...] = (
    *VERDICT_TOPICS,
    DEAD_LETTERS,
    ALERTS,
    DOC_QUALITY,
    ANSWERS,
    SUMMARIES,
    LABELS,
    REVIEW_QUEUE,
)
#: Read from the beginning whatever ``--from-beginning`` says: the review queue and the labels
#: are the console's memory of people's work, which must survive a restart.
ALWAYS_WHOLE: tuple[str, ...] = (LABELS, REVIEW_QUEUE)
RETRY_SECONDS = 2.0


class Follower:
    """Feeds a :class:`ConsoleState` from the broker until :meth:`stop` (see the module)."""

    def __init__(
        self,
        settings: Settings,
        state: ConsoleState,
        *,
        from_beginning: bool = False,
        topics: Sequence[str] = CONSOLE_TOPICS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.state = state
        self.from_beginning = from_beginning
        self.topics = [settings.topic_prefix + t for t in topics]
        self.clock = clock
        self.ready = False
        #: Whether the labels and the review queue written before start have been read (the
        #: review page waits for it rather than show a queue that is still filling).
        self.review_ready = False
        self._review_ends: dict[TopicPartition, int] = {}
        self.error: str | None = None
        self.positions: dict[TopicPartition, int] = {}
        self._stopping = asyncio.Event()

    def stop(self) -> None:
        self._stopping.set()

    async def run(self) -> None:
        """Read until stopped, starting a new consumer after any broker error."""
        short = [t[len(self.settings.topic_prefix) :] for t in self.topics]
        while not self._stopping.is_set():
            try:
                await ensure_topics(self.settings, short)
                await self._consume()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a broker error, or a bug: report, then start anew
                self.ready = False
                self.error = f"{type(exc).__name__}: {exc}"[:500]
                log = logger.warning if isinstance(exc, KafkaError | OSError) else logger.exception
                log("console follower: %s; retrying in %.0f s", self.error, RETRY_SECONDS)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), RETRY_SECONDS)

    async def _consume(self) -> None:
        consumer = groupless_consumer(self.settings)
        await consumer.start()
        try:
            partitions = await assign_all(consumer, self.topics, wait_seconds=5)
            await self._seek(consumer, partitions)
            self.ready, self.error = True, None
            last_lag = 0.0
            while not self._stopping.is_set():
                batches = await consumer.getmany(timeout_ms=200, max_records=5000)
                now = self.clock()
                for tp, messages in batches.items():
                    for msg in messages:
                        try:
                            self.state.ingest(tp.topic, msg.value, now)
                        except Exception:  # what ingest does not expect: skip it, loudly
                            self.state.bad_records["internal_error"] += 1
                            logger.exception(
                                "console: skipping %s[%d]@%d", tp.topic, tp.partition, msg.offset
                            )
                    if messages:
                        self.positions[tp] = messages[-1].offset + 1
                self.state.tick(now)
                if not self.review_ready:
                    self.review_ready = all(
                        self.positions.get(tp, 0) >= end for tp, end in self._review_ends.items()
                    )
                    if self.review_ready:
                        self.state.review.restore_done()
                if time.monotonic() - last_lag >= 1.0:
                    last_lag = time.monotonic()
                    self.state.lag = await self._lag(consumer, partitions)
        finally:
            await consumer.stop()

    async def _seek(self, consumer: AIOKafkaConsumer, partitions: list[TopicPartition]) -> None:
        fresh = [tp for tp in partitions if tp not in self.positions]
        whole = {self.settings.topic_prefix + t for t in ALWAYS_WHOLE}
        start = [tp for tp in fresh if self.from_beginning or tp.topic in whole]
        end = [tp for tp in fresh if tp not in start]
        if start:
            await consumer.seek_to_beginning(*start)
        if not self.review_ready:
            review = [tp for tp in partitions if tp.topic in whole]
            ends = await consumer.end_offsets(review) if review else {}
            self._review_ends = {tp: end for tp, end in ends.items() if end > 0}
        if end:
            await consumer.seek_to_end(*end)
        for tp in partitions:
            if tp in self.positions:
                consumer.seek(tp, self.positions[tp])

    async def _lag(
        self, consumer: AIOKafkaConsumer, partitions: list[TopicPartition]
    ) -> dict[str, int]:
        """Records on the broker not read yet, per short topic name (from the high-water marks
        of the last fetches: exact while the consumer keeps fetching every partition)."""
        lag: dict[str, int] = {}
        prefix = len(self.settings.topic_prefix)
        for tp in partitions:
            high = consumer.highwater(tp)
            if high is None:
                continue
            behind = max(0, high - await consumer.position(tp))
            lag[tp.topic[prefix:]] = lag.get(tp.topic[prefix:], 0) + behind
        return lag
