"""Materialises ``docs`` and ``doc-quality`` into the retriever: read from the beginning, follow.

Every API replica needs every document and quality row, so the topics are read outside any
consumer group (no GlobalTable: unreliable on the embedded broker and faust-streaming #283),
with all partitions assigned and no offsets committed; a restart replays from the beginning.

Readiness: the end offsets seen at start-up are the target; the service is ready once every
partition's position reaches its target. On the embedded broker a partition whose last batch
holds several records reports a wrong end offset, so readiness also comes after
``ready_idle_seconds`` with no records (logged, with the lag still reported). Lag is the sum
over partitions of (high watermark - position), from the fetch responses.

A record that does not decode or validate is logged, counted and skipped: the service never
dies on a bad record. A record that decodes but makes the retriever raise (a bug, or a case
no validation foresaw) is found by applying its batch again one record at a time, and only it
is skipped (``vf_api_bad_records{reason="apply_error"}``, its offset in the log). Should the
reading loop itself fail (the broker gone, a client error), :meth:`TopicFollower.run`
reports it (``error``: ``/healthz`` says not ready, with the reason), reconnects after a
backoff and resumes where it stopped (``vf_api_follower_restarts_total``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from aiokafka import AIOKafkaConsumer, TopicPartition

from verdictflow.exceptions import InvalidEvent
from verdictflow.models import DocQuality, DocUpdate
from verdictflow.models.codec import decode
from verdictflow.rerank_api.metrics import ApiMetrics
from verdictflow.rerank_api.retriever import ApplyCounts, Retriever
from verdictflow.settings import Settings
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.kafka_security import aiokafka_security_kwargs
from verdictflow.streams.topic_reader import assign_all
from verdictflow.streams.topics import DOC_QUALITY, DOCS, full_name

logger = logging.getLogger(__name__)


class TopicFollower:
    """One aiokafka consumer over both topics, applying batches to the retriever in order."""

    def __init__(
        self,
        settings: Settings,
        retriever: Retriever,
        metrics: ApiMetrics,
        *,
        ready_idle_seconds: float = 3.0,
        on_docs_applied: Callable[[], None] | None = None,
    ) -> None:
        self.settings = settings
        self.retriever = retriever
        self.metrics = metrics
        self.ready_idle_seconds = ready_idle_seconds
        self.on_docs_applied = on_docs_applied
        self.docs_topic = full_name(DOCS, settings.topic_prefix)
        self.quality_topic = full_name(DOC_QUALITY, settings.topic_prefix)
        self.ready = asyncio.Event()
        #: Event time (``ts``) of the newest quality row applied: the freshness gauge's basis.
        self.newest_quality_ts: float | None = None
        self._consumer: AIOKafkaConsumer | None = None
        self._targets: dict[TopicPartition, int] = {}
        self._positions: dict[TopicPartition, int] = {}
        #: Why the reading loop stopped, while it reconnects (None when following).
        self.error: str | None = None

    def _new_consumer(self) -> AIOKafkaConsumer:
        return AIOKafkaConsumer(
            bootstrap_servers=self.settings.bootstrap_servers,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_partition_fetch_bytes=4 * 1024 * 1024,
            **aiokafka_security_kwargs(self.settings),
        )

    async def start(self) -> None:
        """Connect, assign every partition of both topics and seek to the beginning."""
        await ensure_topics(self.settings, [DOCS, DOC_QUALITY])
        consumer = self._new_consumer()
        await consumer.start()
        self._consumer = consumer
        tps = await assign_all(consumer, (self.docs_topic, self.quality_topic), wait_seconds=10)
        await consumer.seek_to_beginning(*tps)
        self._targets = dict(await consumer.end_offsets(tps))
        beginnings = await consumer.beginning_offsets(tps)
        self._positions = {tp: beginnings.get(tp, 0) for tp in tps}
        self._check_ready()
        logger.info("following %s and %s from the beginning", self.docs_topic, self.quality_topic)

    async def stop(self) -> None:
        if self._consumer is not None:
            await self._consumer.stop()
            self._consumer = None

    @property
    def lag(self) -> int:
        """Records not yet applied, summed over partitions (high watermark - position)."""
        if self._consumer is None:
            return 0
        total = 0
        for tp, pos in self._positions.items():
            high = self._consumer.highwater(tp)
            end = high if high is not None else self._targets.get(tp, pos)
            total += max(0, end - pos)
        return total

    def _check_ready(self) -> None:
        if not self.ready.is_set() and all(
            self._positions.get(tp, 0) >= end for tp, end in self._targets.items()
        ):
            self.ready.set()
            logger.info("caught up with %s and %s", self.docs_topic, self.quality_topic)

    async def run(self) -> None:
        """Follow forever (until cancelled); when the loop fails, report it, reconnect after a
        backoff (1 s, doubling to 30 s) and resume at the positions reached."""
        backoff = 1.0
        while True:
            try:
                await self._follow()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the loop must outlive any failure: report, reconnect
                self.error = f"{type(exc).__name__}: {exc}"[:500]
                self.metrics.follower_restarts.inc()
                logger.exception("topic follower stopped; reconnecting in %.0f s", backoff)
                await asyncio.sleep(backoff)
                backoff = min(30.0, backoff * 2)
                await self._reconnect()

    async def _reconnect(self) -> None:
        """A new consumer at the positions reached (errors leave ``error`` set: retried)."""
        if self._consumer is not None:
            with contextlib.suppress(Exception):
                await self._consumer.stop()
            self._consumer = None
        consumer = self._new_consumer()
        await consumer.start()
        tps = await assign_all(consumer, (self.docs_topic, self.quality_topic), wait_seconds=10)
        for tp in tps:
            consumer.seek(tp, self._positions.get(tp, 0))
        self._consumer = consumer
        logger.info("topic follower reconnected; resuming at the positions reached")

    async def _follow(self) -> None:
        assert self._consumer is not None, "start() first"
        idle_since = time.monotonic()
        while True:
            batches = await self._consumer.getmany(timeout_ms=100, max_records=5000)
            if not batches:
                if (
                    not self.ready.is_set()
                    and time.monotonic() - idle_since >= self.ready_idle_seconds
                ):
                    logger.warning(
                        "no records for %.1f s before reaching the start-up end offsets "
                        "(lag %d); declaring ready",
                        self.ready_idle_seconds,
                        self.lag,
                    )
                    self.ready.set()
                self.metrics.lag.set(self.lag)
                continue
            idle_since = time.monotonic()
            self.error = None
            for tp in sorted(batches, key=lambda t: (t.topic, t.partition)):
                records = batches[tp]
                await self._apply(tp.topic, [(r.offset, r.value) for r in records])
                self._positions[tp] = records[-1].offset + 1
            self._check_ready()
            self.metrics.lag.set(self.lag)

    async def _apply(self, topic: str, records: list[tuple[int, bytes | None]]) -> None:
        """Apply a batch; when that raises, each record on its own, skipping what fails."""
        try:
            await self._apply_batch(topic, records)
        except Exception:
            if len(records) == 1:
                short = DOCS if topic == self.docs_topic else DOC_QUALITY
                self.metrics.bad_records.labels(short, "apply_error").inc()
                logger.exception("skipping %s@%d: applying it raised", topic, records[0][0])
                return
            for record in records:
                await self._apply(topic, [record])

    async def _apply_batch(self, topic: str, records: list[tuple[int, bytes | None]]) -> None:
        short = DOCS if topic == self.docs_topic else DOC_QUALITY
        model: type[DocUpdate] | type[DocQuality] = DocUpdate if short == DOCS else DocQuality
        decoded = []
        for offset, value in records:
            try:
                decoded.append(decode(value, model, max_bytes=self.settings.max_event_bytes))
            except InvalidEvent as exc:
                self.metrics.bad_records.labels(short, exc.code).inc()
                logger.warning("skipping %s@%d: %s", topic, offset, exc)
        self.metrics.records.labels(short).inc(len(records))
        if not decoded:
            return
        counts: ApplyCounts
        if short == DOCS:
            docs = [d for d in decoded if isinstance(d, DocUpdate)]
            counts = await asyncio.to_thread(self.retriever.apply_docs, docs)
            if self.on_docs_applied is not None:
                self.on_docs_applied()
        else:
            rows = [d for d in decoded if isinstance(d, DocQuality)]
            stamps = [r.ts for r in rows if r.ts is not None]
            if stamps:
                self.newest_quality_ts = max(self.newest_quality_ts or 0.0, *stamps)
            counts = self.retriever.apply_quality(rows)  # dict writes: microseconds
        for reason in counts.reasons:
            self.metrics.bad_records.labels(short, reason.split(":", 1)[0]).inc()
        self.metrics.stale_records.labels(short).inc(counts.stale)
