"""Prometheus metrics of a worker: events in and out per topic, verdicts by kind and decision,
dead letters by reason, per-message latency and consumer lag.

Served by ``prometheus_client``'s own HTTP server in a daemon thread (``verdictflow worker
--metrics-port 9108``), not by Faust's web server: it keeps working while the event loop is
busy scoring a batch, and needs no aiohttp route per Faust version.

Costs stay off the hot path. Inputs are counted by Faust's own :class:`~faust.sensors.Monitor`
(which runs for every message anyway) and read at scrape time; outputs are tallied in plain
dicts by :class:`MeteredOutbox` and added to the Prometheus counters once per batch, when the
agent drains its deliveries (so "out" means delivered). The only per-message Prometheus call is
one histogram observation when a message is acknowledged.
"""

from __future__ import annotations

import logging
import time
from collections import Counter as Tally
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from faust.sensors import Monitor
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from verdictflow.streams.safe_commit import SafeCommitConsumer

from verdictflow.nlp import loaded_lexemes, pipeline_renewals
from verdictflow.streams.outbox import Outbox
from verdictflow.streams.topics import DEAD_LETTERS
from verdictflow.web.listeners import serve_metrics

logger = logging.getLogger(__name__)

LATENCY_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
)  # fmt: skip
_DECISION = b'"decision":"'
_ERROR_CODE = b'"error_code":"'


def json_string_field(value: bytes, marker: bytes) -> str:
    """The string value after ``marker`` (e.g. ``b'"decision":"'``) in compact JSON, or ``?``.

    Safe without parsing: inside a JSON string every ``"`` is escaped as ``\\"``, so the
    unescaped sequence ``"decision":"`` can only be the field itself, never part of a value
    (an ``input_id`` or a context). Costs a ``find``, not an ``orjson.loads`` of a verdict whose
    evidence can be kilobytes.
    """
    start = value.find(marker)
    if start < 0:
        return "?"
    start += len(marker)
    end = value.find(b'"', start)
    return value[start:end].decode("ascii", "replace") if end > start else "?"


class WorkerMetrics:
    """One registry per worker (several apps can live in one test process)."""

    def __init__(self, topic_prefix: str = "") -> None:
        self.prefix = topic_prefix
        self.registry = CollectorRegistry()
        r = self.registry
        self.events_out = Counter(
            "vf_worker_events_out", "Records delivered, by topic", ["topic"], registry=r
        )
        self.verdicts = Counter(
            "vf_worker_verdicts",
            "Verdicts delivered, by kind and decision",
            ["kind", "decision"],
            registry=r,
        )
        self.dead_letters = Counter(
            "vf_worker_dead_letters",
            "Dead letters delivered, by source topic and error code",
            ["source_topic", "error_code"],
            registry=r,
        )
        self.processing_seconds = Histogram(
            "vf_worker_processing_seconds",
            "Message received by the worker to acknowledged (batched, scored, outputs delivered)",
            ["group", "topic"],
            registry=r,
            buckets=LATENCY_BUCKETS,
        )
        self.event_age_seconds = Histogram(
            "vf_worker_event_age_seconds",
            "Kafka record timestamp to acknowledged (end-to-end, includes queueing and lag)",
            ["group", "topic"],
            registry=r,
            buckets=LATENCY_BUCKETS,
        )
        self.lag = Gauge(
            "vf_worker_consumer_lag",
            "High watermark minus committed offset, per consumer group and assigned partition",
            ["group", "topic", "partition"],
            registry=r,
        )
        self.commits_held = Gauge(
            "vf_worker_commits_held",
            "Assigned partitions whose commits wait for a record lost before processing "
            "(read again; streams/safe_commit.py)",
            ["group"],
            registry=r,
        )
        self.stale_records_dropped = Gauge(
            "vf_worker_stale_records_dropped",
            "Records fetched before a seek and dropped out of sequence, since the worker started",
            ["group"],
            registry=r,
        )
        self.stalled_partitions = Gauge(
            "vf_worker_stalled_partitions",
            "Assigned partitions with records pending and no commit for the policy's "
            "stall_seconds (streams/stall_watch.py)",
            ["group"],
            registry=r,
        )
        self.unprocessable_records = Gauge(
            "vf_worker_unprocessable_records",
            "Records dead-lettered after their re-reads did not bring them, since the worker "
            "started (streams/safe_commit.py)",
            ["group"],
            registry=r,
        )
        #: Faust monitor per consumer group (one per tier's app in the worker process).
        self.monitors: dict[str, WorkerMonitor] = {}
        self._lag_labels: dict[str, set[tuple[str, str, str]]] = {}
        r.register(_InputCollector(self))

    def short(self, topic: str) -> str:
        return topic[len(self.prefix) :] if self.prefix and topic.startswith(self.prefix) else topic

    def new_monitor(self, group: str = "") -> WorkerMonitor:
        """The Faust monitor to pass as ``faust.App(monitor=...)`` of consumer group ``group``."""
        monitor = WorkerMonitor(self, group)
        self.monitors[group] = monitor
        return monitor

    def record_outputs(
        self, topics: Mapping[str, int], verdicts: Mapping[tuple[str, str], int], dead: Tally[Any]
    ) -> None:
        for topic, n in topics.items():
            self.events_out.labels(topic).inc(n)
        for (kind, decision), n in verdicts.items():
            self.verdicts.labels(kind, decision).inc(n)
        for (source, code), n in dead.items():
            self.dead_letters.labels(source, code).inc(n)

    def update_consumer(self, group: str, consumer: SafeCommitConsumer) -> None:
        """Set the gauges of one group's consumer (``streams/safe_commit.py``)."""
        self.commits_held.labels(group).set(consumer.partitions_held)
        self.stale_records_dropped.labels(group).set(consumer.stale_records_dropped)
        self.unprocessable_records.labels(group).set(consumer.unprocessable_records)

    def update_lag(self, group: str, assigned: set[Any]) -> None:
        """Set the lag gauges of one group's assigned partitions (called from a Faust timer)."""
        monitor = self.monitors.get(group)
        if monitor is None:
            return
        ends = dict(monitor.tp_end_offsets)
        committed = dict(monitor.tp_committed_offsets)
        read = dict(monitor.tp_read_offsets)
        for labels in self._lag_labels.pop(group, set()):  # partitions it may no longer hold
            self.lag.remove(*labels)
        held = self._lag_labels.setdefault(group, set())
        for tp in assigned:
            end = ends.get(tp)
            if end is None:
                continue
            done = committed.get(tp)
            if done is None:
                last = read.get(tp)
                done = last + 1 if last is not None else None
            if done is not None:
                labels = (group, self.short(tp.topic), str(tp.partition))
                self.lag.labels(*labels).set(max(0, end - done))
                held.add(labels)

    def watch_context_cache(self, cache: Any, store: Any = None) -> None:
        """Export the NLP tier's context cache and its store on disk, when it has one
        (:class:`ContextCacheCollector`)."""
        self.registry.register(ContextCacheCollector(cache, store))

    def watch_spacy(self) -> None:
        """Export spaCy's vocabulary size and reloads (:class:`SpacyVocabularyCollector`)."""
        self.registry.register(SpacyVocabularyCollector())

    def serve(self, port: int, host: str = "127.0.0.1", token: str | None = None) -> None:
        """Expose ``/metrics`` on ``host:port`` from a daemon thread (behind the bearer
        ``token`` when one is given: :func:`verdictflow.web.listeners.serve_metrics`)."""
        serve_metrics(self.registry, host, port, token)
        logger.info("worker metrics on http://%s:%d/metrics", host, port)


class WorkerMonitor(Monitor):  # type: ignore[misc]  # faust is untyped
    """Faust's monitor plus two latency histograms, observed when a message is acknowledged."""

    def __init__(self, metrics: WorkerMetrics, group: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._metrics = metrics
        self._group = group
        self._latency_children: dict[str, tuple[Any, Any]] = {}

    def on_message_out(self, tp: Any, offset: int, message: Any) -> None:
        super().on_message_out(tp, offset, message)
        children = self._latency_children.get(tp.topic)
        if children is None:
            short = self._metrics.short(tp.topic)
            children = (
                self._metrics.processing_seconds.labels(self._group, short),
                self._metrics.event_age_seconds.labels(self._group, short),
            )
            self._latency_children[tp.topic] = children
        if message.time_total is not None:
            children[0].observe(message.time_total)
        if message.timestamp:
            # Wall clock, for a metric only: scores never see it.
            children[1].observe(max(0.0, time.time() - message.timestamp))


class _InputCollector(Collector):  # type: ignore[misc]
    """``vf_worker_events_in_total{group,topic}``, read from Faust's monitors at scrape time."""

    def __init__(self, metrics: WorkerMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "vf_worker_events_in",
            "Records received, by consumer group and topic (short name)",
            labels=["group", "topic"],
        )
        for group, monitor in sorted(self._metrics.monitors.items()):
            # dict() copies under the GIL: safe while the event loop thread updates it.
            for topic, n in sorted(dict(monitor.messages_received_by_topic).items()):
                family.add_metric([group, self._metrics.short(topic)], n)
        yield family


class ContextCacheCollector(Collector):  # type: ignore[misc]
    """The NLP tier's context-index cache (``evaluators/answer_analysis.ContextCache``), read at
    scrape time: ``vf_context_cache_{hits,misses}_total``, ``vf_context_cache_bytes``
    (estimated memory of the cached indexes) and ``vf_context_cache_entries``.
    hits / (hits + misses) is the share of contexts that did not need indexing. With a store
    (``verdictflow.context_store``), the memory cache's misses go to it:
    ``vf_context_store_{hits,misses,errors}_total`` and ``vf_context_store_bytes``."""

    def __init__(self, cache: Any, store: Any = None) -> None:
        self._cache = cache
        self._store = store

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        cache = self._cache
        yield CounterMetricFamily(
            "vf_context_cache_hits", "Contexts found indexed in the cache", value=cache.hits
        )
        yield CounterMetricFamily(
            "vf_context_cache_misses", "Contexts indexed (not in the cache)", value=cache.misses
        )
        yield GaugeMetricFamily(
            "vf_context_cache_bytes", "Estimated bytes of memory the cached context indexes take",
            value=cache.bytes,
        )  # fmt: skip
        yield GaugeMetricFamily(
            "vf_context_cache_entries", "Context indexes in the cache", value=len(cache)
        )
        store = self._store
        if store is None:
            return
        for name, text, value in (
            ("hits", "Context indexes read back from the store", store.hits),
            ("misses", "Context indexes the store did not have", store.misses),
            ("errors", "Store reads and writes that failed (indexes built instead)", store.errors),
        ):
            yield CounterMetricFamily(f"vf_context_store_{name}", text, value=value)
        yield GaugeMetricFamily(
            "vf_context_store_bytes", "Bytes of stored (compressed) context indexes",
            value=store.stored_bytes,
        )  # fmt: skip


class SpacyVocabularyCollector(Collector):  # type: ignore[misc]
    """spaCy's vocabulary, read at scrape time: ``vf_spacy_vocab_lexemes`` (in the pipelines
    loaded now; it grows with every new word) and ``vf_spacy_pipeline_reloads_total`` (pipelines
    loaded afresh past ``VERDICTFLOW_SPACY_VOCAB_LIMIT``: ``verdictflow.nlp.parsing_batch``)."""

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        yield GaugeMetricFamily(
            "vf_spacy_vocab_lexemes", "Lexemes in the loaded spaCy vocabularies",
            value=loaded_lexemes(),
        )  # fmt: skip
        yield CounterMetricFamily(
            "vf_spacy_pipeline_reloads", "spaCy pipelines loaded afresh past the vocabulary limit",
            value=pipeline_renewals(),
        )  # fmt: skip


class MeteredOutbox:
    """An :class:`Outbox` that tallies what it sends and counts it once delivered."""

    def __init__(self, inner: Outbox, metrics: WorkerMetrics) -> None:
        self._inner = inner
        self._metrics = metrics
        self._topics: Tally[str] = Tally()
        self._verdicts: Tally[tuple[str, str]] = Tally()
        self._dead: Tally[tuple[str, str]] = Tally()

    async def send(
        self, topic: str, key: str, value: bytes, headers: Mapping[str, bytes] | None = None
    ) -> None:
        await self._inner.send(topic, key, value, headers)
        self._topics[topic] += 1
        if topic.startswith("verdicts."):
            self._verdicts[topic[9:], json_string_field(value, _DECISION)] += 1
        elif topic == DEAD_LETTERS:
            self._dead[self._metrics.short(key), json_string_field(value, _ERROR_CODE)] += 1

    async def drain(self) -> None:
        await self._inner.drain()
        topics, verdicts, dead = self._topics, self._verdicts, self._dead
        self._topics, self._verdicts, self._dead = Tally(), Tally(), Tally()
        self._metrics.record_outputs(topics, verdicts, dead)
