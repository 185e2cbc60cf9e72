"""Trace assembly on spans as the OpenInference and GenAI conventions write them (pure)."""

from __future__ import annotations

import orjson

from verdictflow.models.spans import SpanEvent, SpanRecord
from verdictflow.pipelines.traces import assemble, keep

TRACE = "0af7651916cd43dd8448eb211c80319c"


def span(span_id: str, parent: str | None, start: int, **attributes: object) -> SpanRecord:
    return SpanRecord(
        trace_id=TRACE, span_id=span_id, parent_span_id=parent, name=span_id,
        start_unix_nano=start, end_unix_nano=start + 100, attributes=attributes,
        resource={"tenant.id": "acme"},
    )  # fmt: skip


def openinference_trace() -> list[SpanRecord]:
    return [
        span("a" * 16, None, 0, **{"openinference.span.kind": "CHAIN",
                                   "input.value": "What is the capital of France?"}),
        span("b" * 16, "a" * 16, 10, **{
            "openinference.span.kind": "RETRIEVER",
            "retrieval.documents.0.document.content": "Paris is the capital of France.",
            "retrieval.documents.0.document.id": "doc-1",
            "retrieval.documents.1.document.content": "France is in Europe.",
        }),
        span("c" * 16, "a" * 16, 20, **{
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-x",
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": "Answer from the context.",
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.content": "Capital of France?",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "Paris.",
        }),
        span("d" * 16, "a" * 16, 30, **{"openinference.span.kind": "TOOL"}),
    ]  # fmt: skip


def test_an_openinference_rag_trace_gives_its_answer_event() -> None:
    spans = openinference_trace()
    assert [keep(s) for s in spans] == [True, True, True, False]
    (event,) = assemble(reversed(spans), "tenant.id").events
    assert event.id == f"{TRACE}-{'c' * 16}"
    assert (event.request_id, event.trace_id, event.span_id) == (TRACE, TRACE, "c" * 16)
    assert (event.query, event.answer, event.model, event.tenant) == (
        "Capital of France?", "Paris.", "gpt-x", "acme",
    )  # fmt: skip
    assert [(c.doc_id, c.text) for c in event.context_passages] == [
        ("doc-1", "Paris is the capital of France."),
        (None, "France is in Europe."),
    ]


def test_a_reranker_wins_and_a_trace_without_a_retriever_still_answers() -> None:
    reranker = span("e" * 16, "a" * 16, 5, **{
        "openinference.span.kind": "RERANKER",
        "reranker.output_documents.0.document.content": "Paris is the capital of France.",
    })  # fmt: skip
    spans = [openinference_trace()[0], reranker, *openinference_trace()[1:3]]
    (event,) = assemble(spans, None).events
    assert [c.text for c in event.context_passages] == ["Paris is the capital of France."]
    bare = [openinference_trace()[0], openinference_trace()[2]]
    (alone,) = assemble(bare, None).events
    assert alone.contexts == []


def test_genai_attributes_and_events_are_read_too() -> None:
    llm = SpanRecord(
        trace_id=TRACE, span_id="f" * 16, parent_span_id=None, start_unix_nano=1,
        end_unix_nano=2_000_000_000,
        attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "m1",
            "gen_ai.input.messages": orjson.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "Hi?"}]}]
            ).decode(),
        },
        events=[SpanEvent(name="gen_ai.choice", attributes={"message": '{"content": "Hello."}'})],
    )  # fmt: skip
    (event,) = assemble([llm], None).events
    assert (event.query, event.answer, event.model, event.ts) == ("Hi?", "Hello.", "m1", 2.0)


def test_an_llm_span_without_output_is_skipped_with_a_reason() -> None:
    silent = span("c" * 16, "a" * 16, 20, **{"openinference.span.kind": "LLM"})
    spans = [*openinference_trace()[:2], silent]
    result = assemble(spans, None)
    assert result.events == []
    assert "no output" in result.skipped[0]


def test_two_traces_whose_llm_spans_share_a_span_id_get_different_ids_and_verdict_ids() -> None:
    """Span ids are unique within a trace only (a QA probe: two traces with LLM span
    ``0000000000000003`` got the same groundedness verdict id, one PASS, one FAIL)."""
    from verdictflow.evaluators.answer_verdicts import verdict_id
    from verdictflow.models.verdicts import VerdictKind

    other = "1" * 32
    first = assemble(openinference_trace(), None).events[0]
    second = assemble(
        [s.model_copy(update={"trace_id": other}) for s in openinference_trace()], None
    ).events[0]
    assert first.span_id == second.span_id
    assert first.id != second.id
    assert other in second.id
    kind = VerdictKind.GROUNDEDNESS
    assert verdict_id(first.id, kind, "d") != verdict_id(second.id, kind, "d")
