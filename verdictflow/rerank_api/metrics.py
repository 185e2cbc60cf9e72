"""Prometheus metrics of the retriever, and a raw latency window for exact percentiles.

Each app gets its own registry (several apps live in one test process). Histograms feed
dashboards; the :class:`LatencyWindow` keeps the last N raw samples per stage so that
``GET /stats/latency`` (and the benchmark) can report exact server-side p50/p99 rather than
bucket interpolations.
"""

from __future__ import annotations

import threading
from collections import deque

import numpy as np
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_BUCKETS = (
    0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.02, 0.05, 0.1, 0.25,
    0.5, 1.0,
)  # fmt: skip
STAGES = ("request", "embed", "retrieve", "blend", "search")


class LatencyWindow:
    """The last ``size`` samples (seconds) of each stage; thread-safe appends."""

    def __init__(self, size: int) -> None:
        self._lock = threading.Lock()
        self._samples: dict[str, deque[float]] = {s: deque(maxlen=size) for s in STAGES}

    def add(self, stage: str, seconds: float) -> None:
        with self._lock:
            self._samples[stage].append(seconds)

    def summary(self) -> dict[str, dict[str, float]]:
        """Per stage: count, then p50, p90, p99, max and mean in milliseconds (when any)."""
        out: dict[str, dict[str, float]] = {}
        with self._lock:
            snapshot = {s: np.fromiter(d, dtype=np.float64) for s, d in self._samples.items()}
        for stage, arr in snapshot.items():
            if len(arr) == 0:
                out[stage] = {"count": 0}
                continue
            ms = arr * 1000.0
            p50, p90, p99 = np.percentile(ms, [50, 90, 99])
            out[stage] = {
                "count": len(ms),
                "p50_ms": float(p50),
                "p90_ms": float(p90),
                "p99_ms": float(p99),
                "max_ms": float(ms.max()),
                "mean_ms": float(ms.mean()),
            }
        return out

    def reset(self) -> None:
        with self._lock:
            for d in self._samples.values():
                d.clear()


class ApiMetrics:
    """All metrics of one app instance."""

    def __init__(self, window: int = 200_000) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.window = LatencyWindow(window)
        self.request_seconds = Histogram(
            "vf_search_request_seconds",
            "Server-side /search time, request received to response sent (answered searches)",
            registry=r,
            buckets=_BUCKETS,
        )
        self.stage_seconds = Histogram(
            "vf_search_stage_seconds",
            "Time per search stage (embed, retrieve, blend)",
            ["stage"],
            registry=r,
            buckets=_BUCKETS,
        )
        self.searches = Counter(
            "vf_search_requests",
            "/search requests by mode and status",
            ["mode", "status"],
            registry=r,
        )
        self.in_flight = Gauge(
            "vf_search_in_flight", "/search requests being answered or waiting", registry=r
        )
        self.records = Counter(
            "vf_api_topic_records", "Records read from docs / doc-quality", ["topic"], registry=r
        )
        self.bad_records = Counter(
            "vf_api_bad_records",
            "Records skipped, by topic and reason",
            ["topic", "reason"],
            registry=r,
        )
        self.follower_restarts = Counter(
            "vf_api_follower_restarts",
            "Times the topic follower's loop failed and reconnected",
            registry=r,
        )
        self.stale_records = Counter(
            "vf_api_stale_records", "Records older than the version held", ["topic"], registry=r
        )
        self.index_size = Gauge("vf_api_index_documents", "Live documents indexed", registry=r)
        self.quality_rows = Gauge("vf_api_quality_rows", "Documents with a quality row", registry=r)
        self.lag = Gauge("vf_api_consumer_lag", "Records not yet applied", registry=r)
        self.ready = Gauge("vf_api_ready", "1 when the state is caught up", registry=r)
        self.quality_freshness = Gauge(
            "vf_api_quality_freshness_seconds",
            "Now minus the event time (ts) of the newest quality row applied (topic mode)",
            registry=r,
        )

    def observe_stage(self, stage: str, seconds: float) -> None:
        self.stage_seconds.labels(stage).observe(seconds)
        self.window.add(stage, seconds)
