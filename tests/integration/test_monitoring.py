"""Monitoring through the real broker: a worker with ``--metrics-port`` and ``verdictflow
monitor`` on a replay of known traffic. The monitor's /metrics must show exactly the verdict
counts per kind, decision, model and tenant that the offline evaluation predicts; the worker's
must count the same inputs, verdicts and dead letters."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable

import httpx
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.processes import settings_env
from verdictflow.evaluators.policy import load_policy
from verdictflow.samples.traffic import generate
from verdictflow.scoring_jobs.batch.eval_answers import expected_verdicts
from verdictflow.scoring_setup import load_scoring
from verdictflow.streams.broker import free_port
from verdictflow.streams.replay import replay

pytestmark = pytest.mark.broker

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(url: str) -> Samples:
    """``(sample name, sorted labels) -> value`` of a Prometheus text page."""
    text = httpx.get(url, timeout=5).text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def by_labels(samples: Samples, name: str, *keys: str) -> Counter[tuple[str, ...]]:
    """Sum the samples of ``name`` grouped by the values of ``keys``."""
    out: Counter[tuple[str, ...]] = Counter()
    for (sample, labels), value in samples.items():
        if sample == name:
            d = dict(labels)
            out[tuple(d[k] for k in keys)] += int(value)
    return out


def poll(until: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(1.0)


def test_monitor_shows_the_expected_rates_of_a_replay(settings_factory, worker_factory, tmp_path):
    policy_path = tmp_path / "policy.yaml"
    policy_path.write_text("consistency:\n  window_seconds: 2\n")
    worker_port, monitor_port = free_port(), free_port()
    settings = settings_factory(metrics_port=worker_port, metrics_host="127.0.0.1")
    traffic = generate(
        240, seed=23, malformed_every=15, grouped_share=0.1, windowed_share=0.04, inline_share=0.1
    )
    expected = [
        orjson.loads(v)
        for v in expected_verdicts(traffic.lines, load_scoring(load_policy(policy_path))).values()
    ]
    want = Counter((v["kind"], v["decision"], v["model"], v["tenant"]) for v in expected)
    assert {k[1] for k in want} == {"PASS", "FAIL", "DEFER"}
    assert len({(k[2], k[3]) for k in want}) == 4  # two models x two tenants

    worker = worker_factory(settings, policy=policy_path)
    monitor_log = (tmp_path / "monitor.log").open("wb")
    monitor = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "verdictflow",
            "monitor",
            "--from-beginning",
            "--port",
            str(monitor_port),
            "--host",
            "127.0.0.1",
        ],
        env=settings_env(settings),
        stdout=monitor_log,
        stderr=subprocess.STDOUT,
    )
    try:
        asyncio.run(replay(traffic.lines, "answers", settings))
        monitor_url = f"http://127.0.0.1:{monitor_port}/metrics"

        def monitor_has_all() -> bool:
            assert worker.proc.poll() is None, worker.log()[-3000:]
            try:
                got = by_labels(scrape(monitor_url), "vf_monitor_verdicts_total", "kind")
            except httpx.TransportError:
                return False
            return sum(got.values()) >= len(expected)

        poll(monitor_has_all, 150, "the monitor to count every verdict")
        time.sleep(2)  # anything extra would show up now
        samples = scrape(monitor_url)
        got = by_labels(samples, "vf_monitor_verdicts_total", "kind", "decision", "model", "tenant")
        assert got == want
        per_kind = Counter((v["kind"], v["decision"]) for v in expected)
        for (kind, decision), n in per_kind.items():
            total = sum(m for (k, _), m in per_kind.items() if k == kind)
            ratio = samples[("vf_monitor_decision_ratio", (("decision", decision), ("kind", kind)))]
            assert ratio == pytest.approx(n / total)
        scored = Counter(v["kind"] for v in expected if v["score"] is not None)
        assert by_labels(samples, "vf_monitor_score_count", "kind") == Counter(
            {(k,): n for k, n in scored.items()}
        )

        worker_url = f"http://127.0.0.1:{worker_port}/metrics"
        w = scrape(worker_url)
        # Each tier is its own consumer group and reads every answer once.
        groups = (settings.app_id, f"{settings.app_id}-nlp")
        received = by_labels(w, "vf_worker_events_in_total", "group", "topic")
        assert [received[(g, "answers")] for g in groups] == [len(traffic.lines)] * 2
        # At-least-once: a worker may deliver a verdict twice after a rebalance, never less.
        verdicts_out = by_labels(w, "vf_worker_verdicts_total", "kind", "decision")
        for (kind, decision), n in per_kind.items():
            assert verdicts_out[(kind, decision)] >= n
        assert sum(by_labels(w, "vf_worker_dead_letters_total", "error_code").values()) == (
            traffic.malformed
        )
        processed = by_labels(w, "vf_worker_processing_seconds_count", "group", "topic")
        assert [processed[(g, "answers")] for g in groups] == [len(traffic.lines)] * 2
        # The NLP tier parsed: its spaCy vocabulary is exported, far from the limit, no reload.
        assert 0 < w[("vf_spacy_vocab_lexemes", ())] < settings.spacy_vocab_limit
        assert w[("vf_spacy_pipeline_reloads_total", ())] == 0

        def lag_is_zero() -> bool:
            lag = by_labels(
                scrape(worker_url), "vf_worker_consumer_lag", "group", "topic", "partition"
            )
            answers = {k: v for k, v in lag.items() if k[1] == "answers"}
            return len(answers) == 2 * settings.partitions and sum(answers.values()) == 0

        poll(lag_is_zero, 30, "each tier's answers lag to reach 0 on every partition")
        held = by_labels(scrape(worker_url), "vf_worker_commits_held")
        assert held == {(): 0}, "no partition holds its commits once the lag is 0"
    finally:
        monitor.terminate()
        monitor.wait(20)
        monitor_log.close()
