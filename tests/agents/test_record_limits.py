"""No record the worker writes can be too large to send, and no record stops a partition
(issue 40): the trace assembler's state stays under the producer's limit whatever the trace,
and a record that fails alone is dead-lettered while the rest of its batch goes on."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from tests.agents.test_agents import agent, built, sent_json, wait_for  # noqa: F401
from verdictflow.agents import traces
from verdictflow.models.spans import SpanRecord
from verdictflow.streams.durable_table import StagedWrites
from verdictflow.streams.outbox import RecordingOutbox
from verdictflow.streams.record_limits import MAX_RECORD_BYTES, RecordTooLarge

TRACE = "0af7651916cd43dd8448eb211c80319c"


def span(n: int, **attributes: object) -> bytes:
    record = SpanRecord(
        trace_id=TRACE, span_id=f"{n:016x}", parent_span_id=None if n == 1 else f"{1:016x}",
        name=f"s{n}", start_unix_nano=n, end_unix_nano=n + 100, attributes=attributes,
    )  # fmt: skip
    return orjson.dumps(record.model_dump(mode="json"))


def rag_trace() -> list[bytes]:
    """The QA probe's trace: a root, 12 retriever spans of ~180 KB, an LLM span."""
    spans = [span(1, **{"openinference.span.kind": "CHAIN", "input.value": "Which drug?"})]
    for n in range(2, 14):
        text = f"Passage {n}: aspirin lowers fever. " + "word " * 36_000
        spans.append(span(n, **{"openinference.span.kind": "RETRIEVER",
                                "retrieval.documents.0.document.content": text}))  # fmt: skip
    spans.append(span(20, **{"openinference.span.kind": "LLM",
                             "output.value": "Aspirin lowers fever."}))  # fmt: skip
    return spans


def record_table_writes(app, name: str) -> list[tuple[str, int]]:
    """(key, changelog bytes) of every write to table ``name`` (test_context has no producer)."""
    table = app.tables[name]
    writes: list[tuple[str, int]] = []
    table.on_key_set = lambda key, value: writes.append((key, len(orjson.dumps(value))))
    table.on_key_del = lambda key: writes.append((key, 0))
    return writes


async def test_a_trace_larger_than_a_record_is_assembled_from_what_fits(built):  # noqa: F811
    app, outbox = built
    writes = record_table_writes(app, "traces-v2")
    close = orjson.dumps({"t": "close", "trace_id": TRACE, "reason": "quiet"})
    async with agent(app, "vf-traces").test_context() as ctx:
        for value in rag_trace():
            await ctx.put(value, key=TRACE.encode())
        await ctx.put(close, key=TRACE.encode())
        await wait_for(outbox, 2, timeout=20)
        await asyncio.sleep(0.1)
    assert writes, "the trace's state was never written"
    assert max(size for _, size in writes) < MAX_RECORD_BYTES, writes
    (answer,) = sent_json(outbox, "answers")
    assert answer["answer"] == "Aspirin lowers fever."
    assert 1 <= len(answer["contexts"]) < 12  # the retriever spans that fit
    (letter,) = sent_json(outbox, "dead-letters")
    assert letter["error_code"] == "trace_spans_dropped"
    assert TRACE in letter["error"]


async def test_a_record_that_fails_alone_is_dead_lettered_and_its_batch_goes_on(
    built,  # noqa: F811
    monkeypatch,
):
    app, outbox = built
    record_table_writes(app, "traces-v2")
    original = traces.TraceAssembler.on_record

    async def failing(self, record, out):
        if b"boom" in (record.value or b""):
            raise ValueError("a bug one input trips")
        await original(self, record, out)

    monkeypatch.setattr(traces.TraceAssembler, "on_record", failing)
    good = span(1, **{"openinference.span.kind": "CHAIN", "input.value": "ok"})
    bad = span(2, **{"openinference.span.kind": "CHAIN", "input.value": "boom"})
    async with agent(app, "vf-traces").test_context() as ctx:
        await ctx.put(bad, key=TRACE.encode())
        await ctx.put(good, key=TRACE.encode())
        await wait_for(outbox, 1)
        await asyncio.sleep(0.1)
    (letter,) = sent_json(outbox, "dead-letters")
    assert letter["error_code"] == "internal_error"
    assert "a bug one input trips" in letter["error"]
    assert letter["source_topic"].endswith("internal.spans")
    assert letter["offset"] is not None


async def test_outputs_and_table_entries_over_the_limit_are_refused_before_a_producer() -> None:
    outbox = RecordingOutbox()
    with pytest.raises(RecordTooLarge):
        await outbox.send("answers", "k", b"x" * (MAX_RECORD_BYTES + 1))
    staged = StagedWrites(app_table := {})  # type: ignore[arg-type]
    with pytest.raises(RecordTooLarge):
        staged["k"] = {"spans": ["x" * MAX_RECORD_BYTES]}
    assert app_table == {}
