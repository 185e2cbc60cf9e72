"""Document-quality agents (spec 004 IQS on the stream): docs, edges, and re-scores.

- ``vf-docs`` (topic ``docs``, key doc_id): text health and optional CPESH margin of each
  upsert, the duplicate count from this worker's global index, a DocQuality row when the
  quality moved, and a re-score request to every document whose (capped) duplicate count the
  update moved, as the index reader recorded it (so a cluster of m copies costs m * kdup
  requests, not m^2). Deletes retire the document. An update older than the document's
  version is ignored (:mod:`verdictflow.evaluators.doc_versions`).
- ``vf-doc-edges`` (topic ``doc-edges``, key src): re-keys each edge to both endpoints on the
  internal topic, so every document's degree is kept in the partition that owns it.
- ``vf-doc-quality`` (internal topic, key doc_id): applies edge tokens and re-score requests.

All three write one changelog-backed table keyed by doc_id, each write in the partition of the
record that caused it (:func:`~verdictflow.streams.durable_table.writes_for`). The docs topic and
the internal topic are co-partitioned (same key, same partition count, the default murmur2
partitioner of Kafka's Java client and aiokafka), so one worker owns a document's entry, its
docs records and its internal messages. A producer of ``docs`` must use that partitioner
(librdkafka: ``partitioner=murmur2_random``); see docs/operations.md. Results are delivered
before a batch is acked (``outbox.drain``), and the entries that record them are written to the
table only after that (:class:`~verdictflow.streams.durable_table.StagedWrites`); a failure
that is not the input's fault stops the worker without a commit (see
:mod:`verdictflow.streams.fatal`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import faust
import orjson

from verdictflow.agents import doc_quality_state as state
from verdictflow.agents.doc_quality_index import DocIndexReader
from verdictflow.cpesh_client import CpeshClient
from verdictflow.embedders import make_embedder
from verdictflow.evaluators.doc_quality import QualityConfig
from verdictflow.exceptions import InvalidEvent
from verdictflow.models.codec import decode, encode
from verdictflow.models.events import DocUpdate, EdgeEvent
from verdictflow.settings import CpeshSettings, QualitySettings, Settings
from verdictflow.streams.batch_agent import batch_agent, per_record
from verdictflow.streams.durable_table import StagedWrites, durable_table
from verdictflow.streams.outbox import Outbox
from verdictflow.streams.records import Record, dead_letter
from verdictflow.streams.topics import (
    DEAD_LETTERS,
    DOC_QUALITY,
    DOC_QUALITY_INTERNAL,
    DOC_QUALITY_TABLE,
)

logger = logging.getLogger(__name__)


def table_store(q: QualitySettings) -> str:
    """RocksDB (rocksdict) where importable, else memory, unless a store URL is given."""
    if q.store != "auto":
        return q.store
    try:
        import rocksdict  # noqa: F401
    except ImportError:
        return "memory://"
    return "rocksdb://"


class DocQualityProcessor:
    """The agents' logic over a table-like mapping, an index reader and an outbox."""

    def __init__(
        self,
        table: Any,
        reader: DocIndexReader,
        cfg: QualityConfig,
        settings: Settings,
        cpesh: CpeshClient | None,
    ) -> None:
        self.table = table
        self.reader = reader
        self.cfg = cfg
        self.settings = settings
        self.cpesh = cpesh
        self._rescored: set[str] = set()
        #: Updates ignored as older than the document's version (docs/document-quality.md).
        self.stale = 0
        #: Updates whose moved neighbours the index reader had not recorded (all notified).
        self.fallbacks = 0

    def begin_batch(self) -> None:
        """Called after the batch's index sync: re-scores are coalesced within one batch.

        A re-score recomputes a document's duplicates from the index, and every request in the
        batch was sent after its cause reached ``docs``, hence before this batch's sync: one
        recomputation per document answers all of them. In a cluster of m near-duplicates
        arriving together, each arrival asks the other members for a re-score (m^2 requests);
        this keeps the FAISS searches to one per member per batch.
        """
        self._rescored.clear()

    def _rescore_dups(self, entry: state.Entry, doc_id: str) -> state.Entry:
        index = self.reader.index
        return state.set_dups(entry, *index.duplicates(doc_id))

    def _store(self, doc_id: str, old: state.Entry | None, entry: state.Entry) -> None:
        if old != entry:  # a replayed input changes nothing, and writes nothing
            self.table[doc_id] = entry

    async def on_doc(self, record: Record, outbox: Outbox) -> None:
        try:
            update = decode(record.value, DocUpdate, max_bytes=self.settings.max_event_bytes)
            problem = state.vector_problem(update, self.reader.index.dim)
            if problem:
                raise InvalidEvent("schema", problem)
        except InvalidEvent as exc:
            await outbox.send(DEAD_LETTERS, record.topic, encode(dead_letter(record, exc)))
            return
        margin: float | None = 0.0
        reason = None
        if self.cpesh is not None and update.op == "upsert":  # before touching the table
            margin, reason = await self.cpesh.margin(update.text)
        doc_id = update.doc_id
        old = self.table.get(doc_id)
        if state.is_stale(old, update):
            self.stale += 1
            logger.info(
                "%s: %s of %s version %s is older than version %s; ignored",
                record.where, update.op, doc_id, update.version, (old or {}).get("v"),
            )  # fmt: skip
            return
        entry, old_dups = state.apply_doc(state.copy_entry(old), update, margin, reason)
        if update.op == "upsert":
            entry = self._rescore_dups(entry, doc_id)
        row = state.take_row(entry, doc_id, self.cfg, record.timestamp)
        self._store(doc_id, old, entry)
        if row is not None:
            await outbox.send(DOC_QUALITY, doc_id, encode(row))
        moved = self.reader.take_moved(record.partition, record.offset)
        if moved is None:  # the reader did not record this update: notify every neighbour
            self.fallbacks += 1
            moved = sorted(set(old_dups) | set(entry["dup_ids"]))
        for other in moved:
            await outbox.send(DOC_QUALITY_INTERNAL, other, state.rescore_message(other))

    async def on_edge(self, record: Record, outbox: Outbox) -> None:
        try:
            edge = decode(record.value, EdgeEvent, max_bytes=self.settings.max_event_bytes)
        except InvalidEvent as exc:
            await outbox.send(DEAD_LETTERS, record.topic, encode(dead_letter(record, exc)))
            return
        for key, message in state.edge_messages(edge.src, edge.dst, edge.op):
            await outbox.send(DOC_QUALITY_INTERNAL, key, message)

    async def on_internal(self, record: Record, outbox: Outbox) -> None:
        """Internal messages are ours: one that does not parse is logged and skipped."""
        try:
            msg = orjson.loads(record.value or b"")
            doc_id = str(msg["node"])
            kind = msg["t"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            logger.error("unusable internal message at %s skipped", record.where)
            return
        if kind != "edge" and doc_id in self._rescored:
            return
        old = self.table.get(doc_id)
        entry = state.copy_entry(old)
        if kind == "edge":
            entry = state.apply_edge(entry, str(msg["e"]), str(msg["op"]))
        elif entry["doc"] is not None:
            entry = self._rescore_dups(entry, doc_id)
            self._rescored.add(doc_id)
        row = state.take_row(entry, doc_id, self.cfg, record.timestamp)
        self._store(doc_id, old, entry)
        if row is not None:
            await outbox.send(DOC_QUALITY, doc_id, encode(row))


def register(
    app: faust.App,
    topics: Mapping[str, Any],
    new_outbox: Callable[[], Outbox],
    settings: Settings,
    config: QualityConfig,
    quality: QualitySettings,
    cpesh_settings: CpeshSettings,
) -> DocQualityProcessor:
    """Declare the features table, the index reader and the three agents on ``app``:
    ``config`` (the policy's ``doc_quality``) scores, ``quality`` says how the agents run."""
    table = durable_table(
        app,
        DOC_QUALITY_TABLE,
        key_type=str,
        partitions=settings.partitions,
        store=table_store(quality),
    )
    embedder = make_embedder(quality.embedder, quality.dim, quality.embed_model_dir)
    if quality.embedder != "hashing":
        config = replace(config, embedder=embedder.version)
    reader = DocIndexReader(settings, quality, config, embedder)
    app.add_dependency(reader)
    cpesh = CpeshClient(cpesh_settings, embedder) if config.use_cpesh else None
    if cpesh is not None:

        @app.task  # type: ignore[untyped-decorator]
        async def open_cpesh_client() -> None:
            await cpesh.__aenter__()

    staged = StagedWrites(table)  # an entry reaches the changelog after the row it records
    proc = DocQualityProcessor(staged, reader, config, settings, cpesh)

    def declare(
        topic: str,
        name: str,
        handle: Callable[[Record, Outbox], Awaitable[None]],
        needs_sync: bool,
        begin: Callable[[], None] | None,
    ) -> None:
        outbox = new_outbox()

        async def each(record: Record) -> None:
            await handle(record, outbox)

        handle_records = per_record(each)  # the document's state follows its record

        async def handle_batch(events: Sequence[Any], records: Sequence[Record]) -> None:
            if needs_sync:
                await reader.sync()
            if begin is not None:
                begin()
            await handle_records(events, records)

        # staged: one batch at a time over the shared table, entries after their rows
        batch_agent(
            app,
            topics[topic],
            name=name,
            settings=settings,
            outbox=outbox,
            handle=handle_batch,
            staged=staged,
        )

    declare("docs", "vf-docs", proc.on_doc, True, None)
    declare("doc-edges", "vf-doc-edges", proc.on_edge, False, None)
    declare(DOC_QUALITY_INTERNAL, "vf-doc-quality", proc.on_internal, True, proc.begin_batch)
    return proc
