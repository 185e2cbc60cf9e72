"""OpenTelemetry export of verdicts: the ``gen_ai.evaluation.result`` attribute mapping on real
verdicts (the sample answers and real judge verdicts, scored by the package's own offline
jobs), then what actually reaches an OTLP/HTTP receiver over the wire, failure handling, and
the worker's wiring (an app's agents export what they deliver, nothing when off)."""

from __future__ import annotations

import asyncio
import itertools
import logging
import socket
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from tests.support.otlp_receiver import otlp_receiver
from verdictflow.agents.worker_app import create_app
from verdictflow.evaluators.policy import Policy, load_policy
from verdictflow.evaluators.summary_judges.verdicts import JudgeConfig, JudgeContext
from verdictflow.monitoring import otlp
from verdictflow.monitoring.otlp import (
    EVALUATION_RESULT_EVENT,
    OtlpSetupError,
    VerdictOtlpExporter,
    evaluation_event_attributes,
    logs_url,
)
from verdictflow.monitoring.otlp_export import OtlpExportService, OtlpOutbox
from verdictflow.pipelines.summaries import spacy_parser
from verdictflow.scoring_jobs.batch.eval_answers import evaluate_answers
from verdictflow.scoring_jobs.batch.eval_summaries import evaluate_summaries
from verdictflow.scoring_setup import load_scoring
from verdictflow.settings import Settings
from verdictflow.streams.outbox import RecordingOutbox

SAMPLE = Path(str(resources.files("verdictflow") / "samples" / "answers.jsonl"))
NAME = "gen_ai.evaluation.name"
VALUE = "gen_ai.evaluation.score.value"
LABEL = "gen_ai.evaluation.score.label"
EXPLANATION = "gen_ai.evaluation.explanation"
RESPONSE_ID = "gen_ai.response.id"


@pytest.fixture(scope="module")
def answer_verdicts() -> list[dict[str, Any]]:
    """The 63 verdicts ``verdictflow eval answers`` gives for the shipped sample."""
    scoring = load_scoring(load_policy(None))
    outputs = evaluate_answers(SAMPLE.read_bytes().splitlines(), scoring)
    verdicts = [o.verdict.model_dump(mode="json") for o in outputs if o.verdict is not None]
    assert len(verdicts) == 63
    return verdicts


@pytest.fixture(scope="module")
def judge_verdicts() -> list[dict[str, Any]]:
    """Both judges on one real summary (PASS) and on one with an empty article (DEFER, score
    None), as ``verdictflow eval summaries`` computes them."""
    parse, version = spacy_parser()
    lines = [
        orjson.dumps(
            {
                "id": "sum-1",
                "article": "The cat sat on the mat. It was a sunny day in Paris.",
                "summary": "A cat sat on a mat in Paris.",
            }
        ),
        orjson.dumps({"id": "sum-empty", "article": "", "summary": "Something."}),
    ]
    out = evaluate_summaries(lines, parse, JudgeContext(JudgeConfig(), version))
    verdicts = [orjson.loads(value) for dead, value in out if not dead]
    assert len(verdicts) == 4
    return verdicts


def pick(verdicts: list[dict[str, Any]], kind: str, input_id: str) -> dict[str, Any]:
    (found,) = [v for v in verdicts if v["kind"] == kind and v["input_id"] == input_id]
    return found


# --- the mapping ------------------------------------------------------------------------------


def test_attribute_names_are_the_semantic_conventions_constants():
    """The names are spelled out in otlp.py; they must stay those of the conventions (the
    opentelemetry-semantic-conventions package's GenAI constants)."""
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as semconv

    assert otlp.GEN_AI_EVALUATION_NAME == semconv.GEN_AI_EVALUATION_NAME
    assert otlp.GEN_AI_EVALUATION_SCORE_VALUE == semconv.GEN_AI_EVALUATION_SCORE_VALUE
    assert otlp.GEN_AI_EVALUATION_SCORE_LABEL == semconv.GEN_AI_EVALUATION_SCORE_LABEL
    assert otlp.GEN_AI_EVALUATION_EXPLANATION == semconv.GEN_AI_EVALUATION_EXPLANATION
    assert otlp.GEN_AI_RESPONSE_ID == semconv.GEN_AI_RESPONSE_ID
    assert EVALUATION_RESULT_EVENT == "gen_ai.evaluation.result"


def test_a_groundedness_pass_maps_field_by_field(answer_verdicts):
    v = pick(answer_verdicts, "groundedness", "spec-q1-both-contexts")
    assert evaluation_event_attributes(v) == {
        NAME: "groundedness",
        VALUE: 1.0,
        LABEL: "pass",
        EXPLANATION: "score 1.0000 >= 0.8000",
        RESPONSE_ID: "spec-q1-both-contexts",
        "verdictflow.kind": "groundedness",
        "verdictflow.verdict_id": v["verdict_id"],
        "verdictflow.input_id": "spec-q1-both-contexts",
        "verdictflow.threshold": 0.8,
        "verdictflow.reason_codes": ["at_or_above_threshold"],
        "verdictflow.config_digest": v["config_digest"],
        "verdictflow.model": "toy",
        "verdictflow.tenant": "demo",
    }  # group is None in the sample: left out, not None


def test_a_defer_has_no_score_value_and_the_defer_label(answer_verdicts):
    v = pick(answer_verdicts, "consistency", "spec-q1-both-contexts")
    assert (v["decision"], v["score"]) == ("DEFER", None)
    attributes = evaluation_event_attributes(v)
    assert VALUE not in attributes
    assert attributes[LABEL] == "defer"
    assert attributes[NAME] == "consistency"
    assert attributes[EXPLANATION] == "1 answer(s); need at least 2"
    assert attributes["verdictflow.reason_codes"] == ["fewer_than_two_variants"]


def test_several_reasons_are_joined_into_one_explanation(answer_verdicts):
    v = pick(answer_verdicts, "hallucination", "moon-1")
    assert len(v["reasons"]) == 2
    attributes = evaluation_event_attributes(v)
    assert attributes[EXPLANATION] == "score 0.8333 > 0.3000; n-gram overlap 0.0833 < 0.2000"
    assert attributes["verdictflow.reason_codes"] == ["above_threshold", "topic_drift"]
    assert attributes[LABEL] == "fail"


def test_judge_verdicts_are_named_per_judge(judge_verdicts):
    twin = next(v for v in judge_verdicts if v["judge"] == "twin_lock" and v["score"] is not None)
    attributes = evaluation_event_attributes(twin)
    assert attributes[NAME] == "judge.twin_lock"
    assert attributes[VALUE] == twin["score"]
    assert attributes[LABEL] == "pass"
    assert attributes["verdictflow.judge"] == "twin_lock"
    assert attributes[RESPONSE_ID] == "sum-1"
    assert attributes["verdictflow.threshold"] == 6.0
    names = {evaluation_event_attributes(v)[NAME] for v in judge_verdicts}
    assert names == {"judge.twin_lock", "judge.judge_lock"}
    defer = next(v for v in judge_verdicts if v["input_id"] == "sum-empty")
    attributes = evaluation_event_attributes(defer)
    assert VALUE not in attributes
    assert attributes[LABEL] == "defer"
    assert attributes[EXPLANATION].startswith("coverage: empty_article")


def test_every_sample_verdict_maps_to_valid_attributes(answer_verdicts, judge_verdicts):
    for v in answer_verdicts + judge_verdicts:
        attributes = evaluation_event_attributes(v)
        for name, value in attributes.items():
            ok = isinstance(value, str | bool | int | float) or (
                isinstance(value, list) and all(isinstance(x, str) for x in value)
            )
            assert ok, f"{name}={value!r} is not an OpenTelemetry attribute value"
        assert attributes[LABEL] == v["decision"].lower()
        assert (VALUE in attributes) == (v["score"] is not None)
        if v["score"] is not None:
            assert attributes[VALUE] == v["score"]
        assert attributes[RESPONSE_ID] == v["input_id"]
        assert attributes["verdictflow.verdict_id"] == v["verdict_id"]
        assert attributes[EXPLANATION] == "; ".join(r["detail"] for r in v["reasons"])
    labels = {evaluation_event_attributes(v)[LABEL] for v in answer_verdicts}
    assert labels == {"pass", "fail", "defer"}


def test_missing_and_none_fields_are_left_out():
    assert evaluation_event_attributes({"kind": "relevance", "score": None, "tenant": None}) == {
        NAME: "relevance",
        "verdictflow.kind": "relevance",
    }
    assert VALUE not in evaluation_event_attributes({"kind": "relevance", "score": True})


@pytest.mark.parametrize(
    ("endpoint", "url"),
    [
        ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/logs"),
        ("http://127.0.0.1:4318/", "http://127.0.0.1:4318/v1/logs"),
        ("https://otel.example:4318/v1/logs", "https://otel.example:4318/v1/logs"),
        ("http://gw.example/otlp", "http://gw.example/otlp/v1/logs"),
    ],
)
def test_logs_url(endpoint, url):
    assert logs_url(endpoint) == url


@pytest.mark.parametrize("endpoint", ["127.0.0.1:4318", "ftp://host", "http://", ""])
def test_a_malformed_endpoint_is_refused(endpoint):
    with pytest.raises(OtlpSetupError, match="http"):
        logs_url(endpoint)
    if endpoint:
        with pytest.raises(ValidationError, match="otlp_endpoint"):
            Settings(otlp_endpoint=endpoint)


def test_settings_read_the_endpoint_from_the_environment(monkeypatch):
    assert Settings().otlp_endpoint is None, "off by default"
    monkeypatch.setenv("VERDICTFLOW_OTLP_ENDPOINT", " http://127.0.0.1:4318 ")
    assert Settings().otlp_endpoint == "http://127.0.0.1:4318"
    monkeypatch.setenv("VERDICTFLOW_OTLP_ENDPOINT", "")
    assert Settings().otlp_endpoint is None


# --- over the wire ----------------------------------------------------------------------------


def test_export_reaches_an_otlp_receiver_with_the_conventions_names(
    answer_verdicts, judge_verdicts
):
    verdicts = answer_verdicts + judge_verdicts
    with otlp_receiver() as receiver:
        exporter = VerdictOtlpExporter(receiver.endpoint, service_name="vf-test")
        try:
            for v in verdicts:
                exporter.export(v)
            assert exporter.force_flush()
            records = receiver.wait_for(len(verdicts), timeout=10)
        finally:
            exporter.shutdown()
        time.sleep(0.1)
        assert len(receiver.records) == len(verdicts), "one event per verdict, no more"
    assert exporter.exported == len(verdicts)
    assert exporter.failed == exporter.skipped == 0
    assert {r["event_name"] for r in records} == {"gen_ai.evaluation.result"}
    assert {r["resource"]["service.name"] for r in records} == {"vf-test"}
    assert {r["scope"] for r in records} == {"verdictflow.monitoring.otlp"}
    assert all(r["time_unix_nano"] > 0 for r in records)
    by_id = {r["attributes"]["verdictflow.verdict_id"]: r["attributes"] for r in records}
    assert len(by_id) == len(verdicts)
    for v in verdicts:  # what crossed the wire is exactly the mapping
        assert by_id[v["verdict_id"]] == evaluation_event_attributes(v)

    grounded = pick(answer_verdicts, "groundedness", "spec-q1-c1-only")
    wire = by_id[grounded["verdict_id"]]
    assert wire[NAME] == "groundedness"
    assert wire[VALUE] == 0.6
    assert wire[LABEL] == "fail"
    assert wire[EXPLANATION] == "score 0.6000 < 0.8000"
    assert wire[RESPONSE_ID] == "spec-q1-c1-only"
    defer = pick(answer_verdicts, "consistency", "spec-q1-c1-only")
    assert VALUE not in by_id[defer["verdict_id"]]
    assert by_id[defer["verdict_id"]][LABEL] == "defer"
    judge = next(v for v in judge_verdicts if v["judge"] == "judge_lock" and v["score"])
    assert by_id[judge["verdict_id"]][NAME] == "judge.judge_lock"
    assert by_id[judge["verdict_id"]][VALUE] == judge["score"]


def test_records_that_are_not_verdicts_are_skipped_and_counted(caplog, answer_verdicts):
    with otlp_receiver() as receiver:
        exporter = VerdictOtlpExporter(receiver.endpoint)
        try:
            with caplog.at_level(logging.WARNING, logger="verdictflow.monitoring.otlp"):
                exporter.export(["not", "a", "mapping"])  # type: ignore[arg-type]
                exporter.export({"kind": "groundedness"})  # no score
                exporter.export({"score": 0.5})  # no kind
                exporter.export(answer_verdicts[0])
            assert exporter.force_flush()
            assert len(receiver.wait_for(1)) == 1
        finally:
            exporter.shutdown()
    assert exporter.skipped == 3
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 3
    assert "a list" in warnings[0]
    assert "without score" in warnings[1]
    assert "without kind" in warnings[2]


def test_a_rejecting_collector_is_logged_once_and_never_raises(caplog, answer_verdicts):
    with otlp_receiver() as receiver:
        receiver.fail_status = 400  # not retryable: fails at once
        exporter = VerdictOtlpExporter(receiver.endpoint)
        try:
            with caplog.at_level(logging.INFO, logger="verdictflow.monitoring.otlp"):
                for v in answer_verdicts[:5]:
                    exporter.export(v)
                assert exporter.force_flush() is False
                exporter.export(answer_verdicts[5])
                assert exporter.force_flush() is False
                receiver.fail_status = None
                exporter.export(answer_verdicts[6])
                assert exporter.force_flush() is True
        finally:
            exporter.shutdown()
    assert (exporter.failed, exporter.exported) == (6, 1)
    assert [r["attributes"]["verdictflow.verdict_id"] for r in receiver.records] == [
        answer_verdicts[6]["verdict_id"]
    ]
    ours = [r for r in caplog.records if r.name == "verdictflow.monitoring.otlp"]
    failed = [r for r in ours if "failed" in r.getMessage() and r.levelno == logging.WARNING]
    assert len(failed) == 1, "one warning per outage, not one per batch"
    assert any("works again" in r.getMessage() for r in ours)


def test_a_collector_that_is_down_costs_the_caller_nothing_and_shutdown_is_bounded(
    caplog, answer_verdicts
):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exporter = VerdictOtlpExporter(f"http://127.0.0.1:{port}", timeout=1.0)
    start = time.monotonic()
    for v in answer_verdicts:
        exporter.export(v)
    assert time.monotonic() - start < 0.5, "export only queues"
    with caplog.at_level(logging.WARNING, logger="verdictflow.monitoring.otlp"):
        start = time.monotonic()
        exporter.shutdown()
        assert time.monotonic() - start < 5
    assert exporter.failed == len(answer_verdicts)
    assert exporter.exported == 0
    assert any("dropped" in r.getMessage() for r in caplog.records)
    exporter.export(answer_verdicts[0])  # after shutdown: ignored, no exception
    exporter.shutdown()  # idempotent
    assert exporter.force_flush() is False


def test_missing_opentelemetry_packages_give_a_clear_error(monkeypatch):
    # As if the exporter package were not installed: its import fails, and our SDK module is
    # imported afresh.
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http._log_exporter", None)
    monkeypatch.delitem(sys.modules, "verdictflow.monitoring._otlp_sdk", raising=False)
    with pytest.raises(OtlpSetupError, match="pip install opentelemetry-sdk"):
        VerdictOtlpExporter("http://127.0.0.1:4318")


def test_importing_the_module_does_not_load_the_sdk():
    probe = (
        "import sys, verdictflow.monitoring.otlp, verdictflow.monitoring.otlp_export; "
        "print(any(m.startswith(('opentelemetry.sdk', 'opentelemetry.exporter')) "
        "for m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "False"


# --- the worker's wiring ----------------------------------------------------------------------


class FakeExporter:
    def __init__(self) -> None:
        self.exported: list[Any] = []

    def export(self, verdict: Any) -> None:
        self.exported.append(verdict)


class FailingDrain(RecordingOutbox):
    async def drain(self) -> None:
        raise RuntimeError("delivery failed")


async def test_the_outbox_exports_delivered_verdicts_only(answer_verdicts):
    inner, exporter = RecordingOutbox(), FakeExporter()
    outbox = OtlpOutbox(inner, exporter)  # type: ignore[arg-type]
    v1, v2 = answer_verdicts[:2]
    await outbox.send("verdicts.groundedness", "k", orjson.dumps(v1))
    await outbox.send("dead-letters", "answers", b'{"error_code":"not_json"}')
    await outbox.send("internal.consistency-groups", "k", b"{}")
    await outbox.send("doc-quality", "d", b'{"doc_id":"d"}')
    await outbox.send(f"verdicts.{v2['kind']}", "k", orjson.dumps(v2))
    assert len(inner.sent) == 5, "everything is sent as before"
    assert exporter.exported == [], "nothing is exported before delivery"
    await outbox.drain()
    assert exporter.exported == [v1, v2]
    await outbox.drain()
    assert len(exporter.exported) == 2, "each verdict is exported once"

    failing = OtlpOutbox(FailingDrain(), exporter)  # type: ignore[arg-type]
    await failing.send("verdicts.groundedness", "k", orjson.dumps(v1))
    with pytest.raises(RuntimeError):
        await failing.drain()
    assert len(exporter.exported) == 2, "an undelivered batch is not exported"


_ids = itertools.count()


def otlp_services(app: Any) -> list[OtlpExportService]:
    return [c for c in app._children if isinstance(c, OtlpExportService)]


def test_no_exporter_when_the_endpoint_is_not_set(tmp_path):
    settings = Settings(
        app_id=f"vf-otlp-off-{next(_ids)}", broker="kafka://127.0.0.1:1", data_dir=tmp_path
    )
    app = create_app(settings, Policy(), outbox_factory=lambda a, t: RecordingOutbox())
    assert otlp_services(app) == []


async def test_an_agent_exports_each_verdict_it_delivers(tmp_path):
    """The lexical answers agent of an app built with an endpoint (recording outbox instead of
    Kafka): every verdict it sends reaches the receiver once it is drained; dead letters do
    not; stopping the service flushes."""
    outbox = RecordingOutbox()
    with otlp_receiver() as receiver:
        settings = Settings(
            app_id=f"vf-otlp-agent-{next(_ids)}",
            broker="kafka://127.0.0.1:1",
            data_dir=tmp_path,
            batch_window_seconds=0.01,
            otlp_endpoint=receiver.endpoint,
        )
        app = create_app(settings, Policy(), outbox_factory=lambda a, t: outbox)
        (service,) = otlp_services(app)
        app.finalize()
        app.flow_control.resume()
        answers = next(a for a in app.agents.values() if a.name == "vf-answers")
        good = {"id": "a1", "answer": "The cat sat on the mat.", "contexts": ["A cat, a mat."]}
        async with answers.test_context() as ctx:
            await ctx.put(orjson.dumps(good), key=b"a1")
            await ctx.put(b'{"id": "bad"', key=b"bad")
            deadline = time.monotonic() + 10
            while len(outbox.sent) < 5:
                assert time.monotonic() < deadline, f"only {outbox.sent} after 10 s"
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)
        await service.on_stop()  # what the app does when it stops: flush and shut down
        sent = [orjson.loads(v) for t, _, v in outbox.sent if t.startswith("verdicts.")]
        assert len(sent) == 4
        records = receiver.wait_for(len(sent), timeout=5)
    assert sorted(r["attributes"]["verdictflow.verdict_id"] for r in records) == sorted(
        v["verdict_id"] for v in sent
    )
    assert {r["attributes"][NAME] for r in records} == {
        "groundedness",
        "relevance",
        "completeness",
        "consistency",
    }
