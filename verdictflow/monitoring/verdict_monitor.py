"""``verdictflow monitor``: the reference monitoring consumer of the verdict topics.

It reads every ``verdicts.<kind>`` topic outside any consumer group (with the same reader as
``tail``, so it never takes partitions from workers or other monitors) and exposes Prometheus
metrics: verdicts by kind, decision, model and tenant; score histograms; the share of each
decision per kind. Dashboards compute rates with ``rate()`` over the counters.

Choices an operator should know (tested in ``tests/monitoring/test_verdict_monitor.py``):

- **Deduplicated by verdict_id.** Delivery is at-least-once; a redelivered verdict carries the
  same id and is counted once, within a window of the most recent ``dedup_window`` ids (a
  duplicate older than that is counted again; ``vf_monitor_duplicates_total`` shows how many
  were dropped).
- **Bounded label cardinality.** ``model`` and ``tenant`` come from producers; the first
  ``max_label_values`` distinct values of each get their own label, later ones share ``other``,
  and a missing one is ``none``. A misbehaving producer cannot blow up the time-series count.
- **Judge scores** are on 0-10, so they have their own histogram (``vf_monitor_judge_score``)
  rather than squeezing into the 0-1 buckets of the other kinds.
- A record that is not a verdict is counted in ``vf_monitor_bad_records_total`` and skipped.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import orjson
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from verdictflow.evaluators.kinds import KINDS
from verdictflow.metric_labels import NONE, LabelCap
from verdictflow.models.verdicts import Decision, VerdictKind
from verdictflow.settings import Settings
from verdictflow.streams.tail import tail
from verdictflow.streams.topics import VERDICT_TOPICS
from verdictflow.web.listeners import serve_metrics

logger = logging.getLogger(__name__)

UNIT_SCORE_BUCKETS = tuple(round(0.1 * i, 1) for i in range(1, 11))
JUDGE_SCORE_BUCKETS = tuple(float(i) for i in range(1, 11))


class RecentIds:
    """The last ``size`` ids seen, for deduplicating redelivered verdicts."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._ids: OrderedDict[str, None] = OrderedDict()

    def seen_before(self, verdict_id: str) -> bool:
        """True when ``verdict_id`` is in the window; otherwise remember it and return False."""
        if verdict_id in self._ids:
            self._ids.move_to_end(verdict_id)
            return True
        self._ids[verdict_id] = None
        if len(self._ids) > self.size:
            self._ids.popitem(last=False)
        return False


class VerdictMonitor:
    """The metrics of the verdict topics; :meth:`observe` takes one raw verdict record."""

    def __init__(
        self, topic_prefix: str = "vf.", *, max_label_values: int = 50, dedup_window: int = 200_000
    ) -> None:
        self.prefix = topic_prefix
        self.registry = CollectorRegistry()
        r = self.registry
        labels = ["kind", "model", "tenant"]
        self.verdicts = Counter(
            "vf_monitor_verdicts",
            "Distinct verdicts by kind, decision, model and tenant",
            ["kind", "decision", "model", "tenant"],
            registry=r,
        )
        self.score = Histogram(
            "vf_monitor_score",
            "Scores of the 0-1 kinds (verdicts with a score)",
            labels,
            registry=r,
            buckets=UNIT_SCORE_BUCKETS,
        )
        self.judge_score = Histogram(
            "vf_monitor_judge_score",
            "Summary judge scores (0-10), by judge",
            ["judge", "model", "tenant"],
            registry=r,
            buckets=JUDGE_SCORE_BUCKETS,
        )
        self.decision_ratio = Gauge(
            "vf_monitor_decision_ratio",
            "Share of each decision among a kind's verdicts since the monitor started",
            ["kind", "decision"],
            registry=r,
        )
        self.duplicates = Counter(
            "vf_monitor_duplicates", "Redelivered verdicts skipped", ["kind"], registry=r
        )
        self.bad_records = Counter(
            "vf_monitor_bad_records", "Records that are not verdicts", ["topic"], registry=r
        )
        self.last_event_ts = Gauge(
            "vf_monitor_last_event_timestamp_seconds",
            "event_ts of the newest verdict seen, per kind (0 when producers send none)",
            ["kind"],
            registry=r,
        )
        self._models = LabelCap(max_label_values)
        self._tenants = LabelCap(max_label_values)
        self._recent = RecentIds(dedup_window)
        self._newest_ts: dict[str, float] = {}
        #: The score scale of each verdict topic's kinds (1, or 10 for the judges).
        self._scales = {spec.kind.value: spec.scale for spec in KINDS}
        self._counts: dict[str, dict[str, int]] = {
            spec.kind.value: dict.fromkeys(Decision, 0) for spec in KINDS
        }

    def observe(self, topic: str, value: bytes | None) -> bool:
        """Count one record of a verdict topic; False when it was skipped."""
        short = topic[len(self.prefix) :] if topic.startswith(self.prefix) else topic
        try:
            verdict = orjson.loads(value or b"")
            kind = VerdictKind(verdict["kind"]).value
            decision = Decision(verdict["decision"]).value
            verdict_id = str(verdict["verdict_id"])
            score = verdict.get("score")
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            self.bad_records.labels(short).inc()
            return False
        if self._recent.seen_before(verdict_id):
            self.duplicates.labels(kind).inc()
            return False
        model, tenant = self._models(verdict.get("model")), self._tenants(verdict.get("tenant"))
        self.verdicts.labels(kind, decision, model, tenant).inc()
        if isinstance(score, int | float):
            if self._scales[kind] != 1.0:  # the judges' 0-10 scale, whatever the judge
                judge = str(verdict.get("judge") or NONE)[:40]
                self.judge_score.labels(judge, model, tenant).observe(score)
            else:
                self.score.labels(kind, model, tenant).observe(score)
        event_ts = verdict.get("event_ts")
        if isinstance(event_ts, int | float):
            newest = max(self._newest_ts.get(kind, 0.0), float(event_ts))
            self._newest_ts[kind] = newest
            self.last_event_ts.labels(kind).set(newest)
        counts = self._counts[kind]
        counts[decision] += 1
        total = sum(counts.values())
        for d, n in counts.items():
            self.decision_ratio.labels(kind, d).set(n / total)
        return True

    def serve(self, port: int, host: str = "127.0.0.1", token: str | None = None) -> Any:
        """Serve ``/metrics`` from a daemon thread, behind the bearer ``token`` when given;
        returns the server (its ``server_port``, ``shutdown()``)."""
        server = serve_metrics(self.registry, host, port, token)
        logger.info("monitor metrics on http://%s:%d/metrics", host, server.server_port)
        return server


async def run_monitor(
    settings: Settings,
    monitor: VerdictMonitor,
    *,
    from_beginning: bool = False,
    should_stop: Callable[[], bool] | None = None,
) -> int:
    """Feed every verdict topic into ``monitor`` until ``should_stop()``; return records read."""
    n = 0
    async for topic, value in tail(
        VERDICT_TOPICS, settings, from_beginning=from_beginning, should_stop=should_stop
    ):
        try:
            monitor.observe(topic, value)
        except Exception:  # what observe does not expect: count it, log it, go on
            monitor.bad_records.labels("internal_error").inc()
            logger.exception("monitor: skipping a record of %s", topic)
        n += 1
    return n
