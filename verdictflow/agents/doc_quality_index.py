"""Every worker's global view of document vectors: ``docs`` read outside the consumer group.

Near-duplicates need all documents, not only the partitions a worker owns, so each worker
runs this reader: a plain aiokafka consumer with no group, assigned every partition of
``docs`` from the beginning, applying upserts and deletes to a
:class:`~verdictflow.evaluators.dup_index.DuplicateIndex`. Documents without a vector are
embedded with the configured embedder (``VERDICTFLOW_QUALITY_EMBEDDER``), in a worker thread:
a neural model takes tens of milliseconds per document, and the event loop also carries the
consumer group's heartbeats.

Why :meth:`DocIndexReader.sync`: before an agent scores a batch, it waits until the reader has
applied everything that was on ``docs`` at that moment (the end offsets, fetched now). For two
duplicates X and Y produced to different partitions and scored by different workers, whichever
owner takes its end-offset snapshot later sees the other one in its index and sends it a
re-score request, so neither can miss the other however the workers interleave.

Sync is on every batch's path, so it must cost one round trip when the reader is caught up.
End offsets are therefore asked on a client of their own: on the reader's connection the
request would queue behind its fetch, which the broker holds for up to ``fetch_max_wait_ms``
(measured: 250-450 ms per sync, most of a batch's time). The reader's own fetch wait is short
(``FETCH_WAIT_MS``) so that a document just produced reaches the index quickly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from typing import Any

import faiss
import numpy as np
from aiokafka import AIOKafkaConsumer, TopicPartition
from mode import Service

from verdictflow.agents.doc_quality_state import vector_problem
from verdictflow.evaluators.doc_quality import QualityConfig
from verdictflow.evaluators.doc_versions import supersedes
from verdictflow.evaluators.dup_index import DuplicateIndex, unit_rows
from verdictflow.evaluators.embedding import Embedder
from verdictflow.exceptions import InvalidEvent
from verdictflow.models.codec import decode
from verdictflow.models.events import DocUpdate
from verdictflow.settings import QualitySettings, Settings
from verdictflow.streams.kafka_security import aiokafka_security_kwargs
from verdictflow.streams.topic_reader import assign_all
from verdictflow.streams.topics import DOCS, full_name

logger = logging.getLogger(__name__)
#: The reader's fetch long-poll: bounds how late a new document reaches the index.
FETCH_WAIT_MS = 20
#: Updates whose moved neighbours are kept for the docs agent (by partition and offset). Every
#: worker's reader records every update, and only the owner's agent takes its own, so the rest
#: age out; one the agent finds gone makes it notify every neighbour (still correct).
MOVED_KEPT = 100_000


class DocIndexReader(Service):
    """Follows ``docs`` from the beginning into a duplicate index; started with the app."""

    def __init__(
        self,
        settings: Settings,
        quality: QualitySettings,
        config: QualityConfig,
        embedder: Embedder,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._settings = settings
        self._embedder = embedder
        self._dim = quality.dim
        self._sync_timeout = quality.sync_timeout_seconds
        self._faiss_threads = quality.faiss_threads
        self.index = DuplicateIndex(quality.dim, config.kdup, config.dup_threshold)
        self._topic = full_name(DOCS, settings.topic_prefix)
        self._consumer: AIOKafkaConsumer | None = None
        self._offsets: AIOKafkaConsumer | None = None  # end offsets only (see module doc)
        self._partitions: list[TopicPartition] = []
        self._positions: dict[TopicPartition, int] = {}
        self._progress = asyncio.Event()
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.applied = 0
        #: The version of the last update applied per document (deletes included).
        self._versions: dict[str, int | None] = {}
        #: (partition, offset) of an update -> the other documents whose count it moved.
        self._moved: OrderedDict[tuple[int, int], list[str]] = OrderedDict()
        self.stale = 0
        self.failures = 0

    async def on_start(self) -> None:
        faiss.omp_set_num_threads(self._faiss_threads)  # process-wide; see QualitySettings
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self._settings.bootstrap_servers,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_partition_fetch_bytes=8 * 1024 * 1024,
            fetch_max_wait_ms=FETCH_WAIT_MS,
            **aiokafka_security_kwargs(self._settings),
        )
        offsets = AIOKafkaConsumer(
            bootstrap_servers=self._settings.bootstrap_servers,
            group_id=None,
            enable_auto_commit=False,
            **aiokafka_security_kwargs(self._settings),
        )
        await consumer.start()
        await offsets.start()
        self._offsets = offsets
        self._partitions = await assign_all(consumer, [self._topic], wait_seconds=30)
        await consumer.seek_to_beginning(*self._partitions)
        begin = await consumer.beginning_offsets(self._partitions)
        self._positions = {tp: begin[tp] for tp in self._partitions}
        self._consumer = consumer
        self._task = asyncio.ensure_future(self._run())
        self._ready.set()
        logger.info(
            "duplicate index reader on %s (%d partitions)", self._topic, len(self._partitions)
        )

    async def on_stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        if self._consumer is not None:
            await self._consumer.stop()
            self._consumer = None
        if self._offsets is not None:
            await self._offsets.stop()
            self._offsets = None

    async def _run(self) -> None:
        """Read and apply forever. A record whose update raises is logged, counted and
        skipped; should the reading itself fail, it is logged and retried after a pause
        (``sync`` meanwhile times out, and the agents score with what the index has)."""
        assert self._consumer is not None
        while True:
            try:
                batches = await self._consumer.getmany(timeout_ms=200, max_records=2000)
            except Exception:  # the reader must outlive a broker hiccup
                self.failures += 1
                logger.exception("duplicate index reader: fetch failed; retrying in 1 s")
                await asyncio.sleep(1.0)
                continue
            for tp, messages in batches.items():
                updates = self.decode([(m.offset, m.value) for m in messages], tp.partition)
                vectors = await asyncio.to_thread(self.embed_missing, updates)
                self.apply(updates, vectors)
                self._positions[tp] = messages[-1].offset + 1
            if batches:
                self._progress.set()

    def decode(
        self, values: list[tuple[int, bytes | None]], partition: int = 0
    ) -> list[tuple[tuple[int, int], DocUpdate]]:
        """The records the docs agent would accept (one it would dead-letter is skipped),
        each with its (partition, offset)."""
        updates: list[tuple[tuple[int, int], DocUpdate]] = []
        for offset, value in values:
            try:
                update = decode(value, DocUpdate, max_bytes=self._settings.max_event_bytes)
            except InvalidEvent:
                continue
            if vector_problem(update, self._dim) is None:
                updates.append(((partition, offset), update))
        return updates

    def take_moved(self, partition: int | None, offset: int | None) -> list[str] | None:
        """The documents whose capped duplicate count the update at ``partition``/``offset``
        moved (taken: asked once), or None when this reader holds no record of it."""
        if partition is None or offset is None:
            return None
        return self._moved.pop((partition, offset), None)

    def embed_missing(self, updates: list[tuple[tuple[int, int], DocUpdate]]) -> np.ndarray:
        """Vectors of the upserts that came without one, in order (runs in a thread)."""
        texts = [u.text for _, u in updates if u.op == "upsert" and u.vector is None]
        return self._embedder.embed(texts) if texts else np.zeros((0, self._dim), np.float32)

    def apply(self, updates: list[tuple[tuple[int, int], DocUpdate]], vectors: np.ndarray) -> None:
        """Apply decoded updates in order, with ``vectors`` from :meth:`embed_missing`, by the
        version rule the agent applies too; record which neighbours each one moved."""
        embedded = iter(vectors)
        for where, u in updates:
            raw: Any = next(embedded) if u.op == "upsert" and u.vector is None else u.vector
            if not supersedes(u.version, self._versions.get(u.doc_id)):
                self.stale += 1
                continue
            self._versions[u.doc_id] = u.version
            try:
                if u.op == "delete":
                    moved = self.index.remove(u.doc_id)
                else:
                    moved = self.index.upsert(u.doc_id, unit_rows(raw, self._dim)[0])
            except Exception:  # one update must not stop the reader: skip it, loudly
                self.failures += 1
                logger.exception("duplicate index reader: skipping %s at %s", u.doc_id, where)
                continue
            self._moved[where] = moved
            while len(self._moved) > MOVED_KEPT:
                self._moved.popitem(last=False)
        self.applied += len(updates)

    async def sync(self) -> bool:
        """Wait until every record now on ``docs`` is applied; False after the timeout (the
        caller then scores with what it has, and a later re-score corrects it)."""
        await asyncio.wait_for(self._ready.wait(), self._sync_timeout)
        assert self._offsets is not None
        ends = await self._offsets.end_offsets(self._partitions)
        deadline = time.monotonic() + self._sync_timeout
        while any(self._positions[tp] < end for tp, end in ends.items()):
            left = deadline - time.monotonic()
            if left <= 0:
                logger.warning("duplicate index still behind docs after %.0f s", self._sync_timeout)
                return False
            self._progress.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._progress.wait(), min(left, 0.5))
        return True
