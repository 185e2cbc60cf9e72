"""Monitoring pieces without a broker: the monitor's counting rules, the worker's output tally,
and the SASL/TLS settings that every Kafka client gets."""

from __future__ import annotations

import ssl

import orjson
import pytest
from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import generate_latest

from verdictflow.metric_labels import OTHER
from verdictflow.models.codec import encode
from verdictflow.models.verdicts import Decision, Verdict, VerdictKind
from verdictflow.monitoring.verdict_monitor import VerdictMonitor
from verdictflow.settings import Settings
from verdictflow.streams.faust_app import faust_config
from verdictflow.streams.kafka_security import (
    KafkaSecurityError,
    aiokafka_security_kwargs,
    faust_credentials,
)
from verdictflow.streams.outbox import RecordingOutbox
from verdictflow.streams.worker_metrics import MeteredOutbox, WorkerMetrics, json_string_field


def verdict(i: int, decision: str = "PASS", **extra: object) -> bytes:
    return orjson.dumps(
        {
            "verdict_id": f"id-{i}",
            "kind": "groundedness",
            "decision": decision,
            "score": 0.5,
            **extra,
        }
    )


def value(m: VerdictMonitor, name: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(name, labels)


def test_monitor_counts_each_verdict_id_once_and_keeps_ratios():
    m = VerdictMonitor("vf.")
    assert m.observe("vf.verdicts.groundedness", verdict(1, model="a", tenant="t"))
    assert not m.observe("vf.verdicts.groundedness", verdict(1, model="a", tenant="t"))
    assert m.observe("vf.verdicts.groundedness", verdict(2, "FAIL", model="a", tenant="t"))
    assert m.observe("vf.verdicts.groundedness", verdict(3, "DEFER", score=None))
    labels = {"kind": "groundedness", "model": "a", "tenant": "t"}
    assert value(m, "vf_monitor_verdicts_total", decision="PASS", **labels) == 1
    assert value(m, "vf_monitor_duplicates_total", kind="groundedness") == 1
    assert value(m, "vf_monitor_decision_ratio", kind="groundedness", decision="FAIL") == 1 / 3
    none = {"kind": "groundedness", "model": "none", "tenant": "none"}
    assert value(m, "vf_monitor_verdicts_total", decision="DEFER", **none) == 1
    assert value(m, "vf_monitor_score_count", **labels) == 2  # the DEFER had no score


def test_monitor_caps_label_values_and_skips_what_is_not_a_verdict():
    m = VerdictMonitor("vf.", max_label_values=2)
    for i, model in enumerate(["m1", "m2", "m3", "m4"]):
        m.observe("vf.verdicts.relevance", verdict(i, model=model, kind="relevance"))
    models = {
        s.labels["model"]
        for f in m.registry.collect()
        if f.name == "vf_monitor_verdicts"
        for s in f.samples
    }
    assert models == {"m1", "m2", OTHER}
    for bad in (b"not json", b"[]", orjson.dumps({"kind": "nope"}), None):
        assert not m.observe("vf.verdicts.relevance", bad)
    assert value(m, "vf_monitor_bad_records_total", topic="verdicts.relevance") == 4


def test_monitor_puts_judge_scores_on_their_own_scale():
    m = VerdictMonitor("vf.")
    m.observe("vf.verdicts.judge", verdict(1, kind="judge", score=7.5, judge="twin_lock"))
    assert (
        value(m, "vf_monitor_judge_score_bucket", judge="twin_lock", model="none", tenant="none",
              le="8.0")
        == 1
    )  # fmt: skip
    # A judge this version does not know is still on the 0-10 scale, not in the 0-1 buckets.
    m.observe("vf.verdicts.judge", verdict(2, kind="judge", score=7.5, judge="new_judge"))
    assert (
        value(m, "vf_monitor_judge_score_bucket", judge="new_judge", model="none", tenant="none",
              le="8.0")
        == 1
    )  # fmt: skip


@given(st.text(max_size=40), st.sampled_from(list(Decision)))
def test_decision_is_read_from_encoded_verdict_bytes_whatever_the_input_id(input_id, decision):
    v = Verdict(
        verdict_id="x",
        kind=VerdictKind.GROUNDEDNESS,
        input_id=f'"decision":"EVIL" {input_id}',
        score=None,
        threshold=0.8,
        decision=decision,
        reasons=[],
        evidence={"note": '"decision":"EVIL"'},
        config_digest="d",
        tokenizer_version="t",
    )
    assert json_string_field(encode(v), b'"decision":"') == decision.value


async def test_metered_outbox_counts_outputs_only_once_delivered():
    metrics = WorkerMetrics("vf.")
    inner = RecordingOutbox()
    outbox = MeteredOutbox(inner, metrics)
    await outbox.send("verdicts.groundedness", "a", verdict(1, "FAIL"))
    await outbox.send("dead-letters", "vf.answers", b'{"source_topic":"x","error_code":"schema"}')
    assert metrics.registry.get_sample_value("vf_worker_verdicts_total", {}) is None
    await outbox.drain()
    page = generate_latest(metrics.registry).decode()
    assert 'vf_worker_verdicts_total{decision="FAIL",kind="groundedness"} 1.0' in page
    assert 'vf_worker_dead_letters_total{error_code="schema",source_topic="answers"} 1.0' in page
    assert len(inner.sent) == 2


def test_plaintext_leaves_every_client_on_its_defaults():
    s = Settings()
    assert aiokafka_security_kwargs(s) == {}
    assert faust_credentials(s) is None
    assert "broker_credentials" not in faust_config(s)


def test_sasl_ssl_reaches_faust_and_aiokafka_identically():
    s = Settings(
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_username="vf",
        sasl_password="s3cret",
    )
    raw = aiokafka_security_kwargs(s)
    assert raw["security_protocol"] == "SASL_SSL"
    assert raw["sasl_plain_password"] == "s3cret"
    assert isinstance(raw["ssl_context"], ssl.SSLContext)
    via_faust = credentials_to_aiokafka_auth(faust_config(s)["broker_credentials"])
    assert {k: v for k, v in via_faust.items() if k != "ssl_context"} == {
        k: v for k, v in raw.items() if k != "ssl_context"
    }
    assert isinstance(via_faust["ssl_context"], ssl.SSLContext)
    assert "s3cret" not in repr(s)  # a SecretStr: never in logs


def test_ssl_only_and_inconsistent_settings():
    raw = aiokafka_security_kwargs(Settings(security_protocol="SSL"))
    assert set(raw) == {"security_protocol", "ssl_context"}
    auth = credentials_to_aiokafka_auth(faust_credentials(Settings(security_protocol="SSL")))
    assert auth["security_protocol"] == "SSL"
    with pytest.raises(KafkaSecurityError, match="SASL_USERNAME"):
        aiokafka_security_kwargs(Settings(security_protocol="SASL_PLAINTEXT"))
    with pytest.raises(KafkaSecurityError, match="go together"):
        aiokafka_security_kwargs(Settings(security_protocol="SSL", ssl_certfile="/x.pem"))


def test_security_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("VERDICTFLOW_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    monkeypatch.setenv("VERDICTFLOW_SASL_USERNAME", "u")
    monkeypatch.setenv("VERDICTFLOW_SASL_PASSWORD", "p")
    raw = aiokafka_security_kwargs(Settings())
    assert raw == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "u",
        "sasl_plain_password": "p",
    }


def test_metrics_behind_a_token_need_the_bearer() -> None:
    import httpx

    monitor = VerdictMonitor("vf.")
    server = monitor.serve(0, "127.0.0.1", "m3trics")
    try:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        refused = httpx.get(url)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Bearer")
        allowed = httpx.get(url, headers={"Authorization": "Bearer m3trics"})
        assert allowed.status_code == 200
        assert "vf_monitor_verdicts_total" in allowed.text
    finally:
        server.shutdown()
