"""``verdictflow console --otlp-endpoint``: each verdict the console reads leaves once as a
``gen_ai.evaluation.result`` event, redeliveries included only once."""

from __future__ import annotations

import orjson

from tests.support.otlp_receiver import otlp_receiver
from verdictflow.console.app import ConsoleOptions, create_console_app
from verdictflow.console.state import ConsoleState
from verdictflow.monitoring.otlp import VerdictOtlpExporter
from verdictflow.settings import Settings


def test_the_console_exports_each_verdict_it_reads_once(sample_verdicts: list[bytes]) -> None:
    with otlp_receiver() as receiver:
        exporter = VerdictOtlpExporter(receiver.endpoint, service_name="verdictflow-console")
        state = ConsoleState("vf.")
        create_console_app(
            Settings(), ConsoleOptions(on_verdict=exporter.export), state=state, follow=False
        )
        for raw in [*sample_verdicts, *sample_verdicts[:3]]:  # three redelivered
            state.ingest(f"vf.verdicts.{orjson.loads(raw)['kind']}", raw, 1.0)
        exporter.shutdown()
        records = receiver.wait_for(len(sample_verdicts), timeout=15)
    assert len(records) == len(sample_verdicts)
    assert {r["event_name"] for r in records} == {"gen_ai.evaluation.result"}
    ids = sorted(r["attributes"]["verdictflow.verdict_id"] for r in records)
    assert ids == sorted(orjson.loads(v)["verdict_id"] for v in sample_verdicts)
    lyon = next(
        r
        for r in records
        if r["attributes"]["gen_ai.response.id"] == "capital-3"
        and r["attributes"]["gen_ai.evaluation.name"] == "hallucination"
    )
    assert lyon["attributes"]["gen_ai.evaluation.score.label"] == "fail"
    assert lyon["resource"]["service.name"] == "verdictflow-console"
