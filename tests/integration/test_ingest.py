"""Traffic in without code changes: 40 RAG traces sent by the OpenTelemetry SDK's OTLP/HTTP
exporter to ``verdictflow ingest`` (OpenInference attributes) become 40 answer events with
exactly their query, answer and contexts and the trace id, which their verdicts carry too;
10 answers posted as NDJSON become 10 answer events; malformed bodies are refused with the
project's error shape. The assembling worker is SIGKILLed after the first half of the traces and
a second worker joins the group while the last quarter is sent, so traces are assembled across
a restart and across partitions moving between live workers: none may be lost."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time

import httpx
import orjson
import pytest

from tests.support.openai_standin import StandIn, serve
from tests.support.otel_traces import big_rag_trace, send_traces, traced_ids, wait_healthy
from tests.support.paths import ROOT
from tests.support.processes import settings_env
from tests.support.reliability import OutputCollector, group_positions, rss_kib
from verdictflow.dev_servers import start_server, stop_server
from verdictflow.streams.tail import tail
from verdictflow.streams.topics import ANSWERS, SPANS

pytestmark = pytest.mark.broker

TRACES = 40
BIG_TRACE = "b16" + "0" * 28 + "1"


def test_traces_and_ndjson_answers_become_answer_events_and_verdicts(
    settings_factory, worker_factory, tmp_path
) -> None:
    settings = settings_factory(trace_quiet_seconds=1.0)
    env = settings_env(settings)
    proc, url = start_server(["ingest", "--broker", settings.broker], env, tmp_path / "ingest.log")
    lexical = settings.model_copy(update={"tier": "lexical"})
    try:
        worker = worker_factory(lexical)
        wait_healthy(url)
        with OutputCollector(settings) as out:
            # The hardening probe's trace first (issue 40): its state is larger than a record;
            # it once crashed the worker at every restart, so nothing below got a verdict.
            rss_before = rss_kib(worker.proc.pid)
            protobuf = {"content-type": "application/x-protobuf"}
            big = httpx.post(
                f"{url}/v1/traces", content=big_rag_trace(BIG_TRACE), headers=protobuf, timeout=60
            )
            assert big.status_code == 200, big.text
            sent = send_traces(url, 0, TRACES // 2)
            alive = lambda: worker.proc.poll() is None  # noqa: E731
            assert out.wait_until(lambda: len(grounded(out)) >= 5, timeout=120, alive=alive)
            assert out.wait_until(lambda: dropped(out), timeout=60, alive=alive), worker.log()[
                -3000:
            ]
            print(
                f"worker RSS before the large trace {rss_before}, after {rss_kib(worker.proc.pid)}"
            )
            worker.proc.send_signal(signal.SIGKILL)  # mid-run: the assembler's state must hold
            worker.proc.wait(10)
            again = worker_factory(lexical)
            sent += send_traces(url, TRACES // 2, TRACES // 4)
            # A second worker joins: partitions move while the last quarter is sent, one trace
            # a second over its start-up, so traces are open when their partition moves.
            joined = worker_factory(lexical)
            for i in range(TRACES * 3 // 4, TRACES):
                sent += send_traces(url, i, 1)
                time.sleep(1.0)
            answer = {"query": "q?", "answer": "Paris.", "contexts": ["Paris is in France."]}
            lines = [orjson.dumps({"id": f"nd{i}", **answer}) for i in range(10)]
            posted = httpx.post(
                f"{url}/v1/answers", content=b"\n".join(lines),
                headers={"content-type": "application/x-ndjson"}, timeout=30,
            )  # fmt: skip
            assert posted.json() == {"accepted": 10, "refused": []}
            # The inline gate (issue 46): its verdicts are checked against the stream's below.
            gated = httpx.post(
                f"{url}/v1/check?kinds=all&timeout_ms=60000", content=orjson.dumps(GATED),
                headers={"content-type": "application/json"}, timeout=90,
            )  # fmt: skip
            assert gated.status_code == 200, gated.text
            assert gated.json()["queued"] is True
            bad = httpx.post(f"{url}/v1/traces", content=b"\x00not protobuf",
                             headers={"content-type": "application/x-protobuf"})  # fmt: skip
            assert bad.status_code == 400
            assert set(bad.json()) == {"error", "detail"}
            example = run_example(url)
            alive = lambda: again.proc.poll() is None and joined.proc.poll() is None  # noqa: E731
            want = TRACES + 10 + 3 + 1 + 1  # + the large trace (what fits) + the gated answer
            if not out.wait_until(lambda: len(grounded(out)) >= want, timeout=120, alive=alive):
                seen, traced, dead = out.under_lock(
                    lambda: (grounded(out), traced_ids(out), list(out.dead))
                )
                missing = sorted({t for t, *_ in sent} - traced)
                nd_missing = sorted({f"nd{i}" for i in range(10)} - seen)
                pytest.fail(f"{len(seen)} of {want} answers grounded; missing traces: {missing}; "
                            f"missing NDJSON answers: {nd_missing}; dead letters: {dead[-5:]}; "
                            f"example output: {example!r}; "
                            f"{group_positions(settings, settings.app_id, [SPANS, ANSWERS])}; "
                            f"of those NDJSON answers, a fresh consumer finds grounded: "
                            f"{sorted(_grounded_on_broker(settings) & set(nd_missing))}\n"
                            f"{again.log()[-3000:]}\n{joined.log()[-3000:]}")  # fmt: skip
        events = asyncio.run(_read_all(settings, "answers"))
        by_trace = {e["trace_id"]: e for e in events if e.get("tenant") == "t9"}
        assert len(by_trace) == TRACES
        for trace_id, query, answer, docs in sent:
            e = by_trace[trace_id]
            assert (e["query"], e["answer"], e["request_id"]) == (query, answer, trace_id)
            assert [c["text"] for c in e["contexts"]] == docs
            assert e["model"] == "gpt-standin"
        assert sum(1 for e in events if str(e["id"]).startswith("nd")) == 10
        assert example.count("gate: ") == 3, example  # the example gates each of its answers
        traced = [e for e in events if e.get("tenant") == "example"]
        assert len({e["id"] for e in traced}) == 3, example
        assert all(e["contexts"] and e["answer"] for e in traced)
        assert traced_ids(out, "groundedness") >= set(by_trace)
        assert_gate_is_the_stream(gated, out, [e for e in events if e["id"] == GATED["id"]])
    finally:
        stop_server(proc)


GATED = {
    "id": "gate1",
    "query": "When did Marie Curie win her first Nobel Prize?",
    "answer": "Marie Curie won her first Nobel Prize, in Physics, in 1903, with Pierre Curie.",
    "contexts": ["Marie Curie won the Nobel Prize in Physics in 1903 and in Chemistry in 1911."],
}


def assert_gate_is_the_stream(gated: httpx.Response, out: OutputCollector, events: list) -> None:
    """The gate's verdicts are the stream's, byte for byte: the lexical worker's records, and the
    NLP tier's (its code, :func:`answer_outputs`, over the record the gate produced), each found
    verbatim in the gate's reply."""
    from verdictflow.evaluators.kinds import Tier
    from verdictflow.evaluators.policy import Policy
    from verdictflow.pipelines.answers import answer_outputs
    from verdictflow.scoring_setup import load_scoring
    from verdictflow.streams.records import Record

    verdicts = gated.json()["verdicts"]
    assert [v["kind"] for v in verdicts] == [
        "groundedness", "relevance", "completeness", "hallucination", "faithfulness",
    ]  # fmt: skip
    for v in verdicts[:3]:
        assert gated.content.count(out.verdicts[v["verdict_id"]][0]) == 1, v["kind"]
    assert len(events) == 1
    scoring = load_scoring(Policy(), "default")
    record = Record("answers", 0, 0, b"gate1", orjson.dumps(events[0]))
    nlp = answer_outputs([record], scoring.ctx, scoring.analyzer, max_bytes=10**6, tier=Tier.NLP)
    streamed = [value for topic, _, value in nlp[0] if topic.startswith("verdicts.")]
    assert len(streamed) == 2
    for value in streamed:
        assert gated.content.count(value) == 1, value[:200]


def dropped(out: OutputCollector) -> bool:
    """Whether the large trace's ``trace_spans_dropped`` dead letter arrived (a condition for
    ``wait_until``, which holds the collector's lock)."""
    return any(
        d.get("error_code") == "trace_spans_dropped" and BIG_TRACE in str(d.get("error"))
        for d in out.dead
    )


def grounded(out: OutputCollector) -> set[str]:
    ids = set()
    for values in out.verdicts.values():
        v = orjson.loads(values[0])
        if v["kind"] == "groundedness":
            ids.add(v["input_id"])
    return ids


def run_example(ingest_url: str) -> str:
    """``examples/traced_rag/app.py`` against a local OpenAI-compatible stand-in."""
    import os
    import sys

    with serve(StandIn()) as model_url:
        env = {**os.environ, "OPENAI_BASE_URL": model_url, "OPENAI_API_KEY": "not-a-secret"}
        result = subprocess.run(
            [sys.executable, str(ROOT / "examples" / "traced_rag" / "app.py"),
             "--ingest", ingest_url, "--model", "standin-judge", "--gate"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def _grounded_on_broker(settings) -> set[str]:
    """Input ids of the groundedness verdicts a fresh consumer finds on the broker."""
    return {v["input_id"] for v in asyncio.run(_read_all(settings, "verdicts.groundedness"))}


async def _read_all(settings, topic: str) -> list[dict]:
    out = []
    async for _, value in tail([topic], settings, from_beginning=True, timeout=3):
        out.append(orjson.loads(value))
    return out


def test_ingest_refuses_to_listen_beyond_loopback_without_a_token() -> None:
    import os
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("VERDICTFLOW_")}
    result = subprocess.run(
        [sys.executable, "-m", "verdictflow", "ingest", "--host", "0.0.0.0"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert "without a token" in result.stderr
