"""A trace's spans in, answer events out: what the trace assembler emits once a trace is
complete (pure: no I/O, no clock; the agent decides *when*, this module decides *what*).

Per LLM span of the trace (several give several answers), in start order:

- **query**: the last user message of its input (OpenInference ``llm.input_messages.N``; GenAI
  ``gen_ai.input.messages`` or ``gen_ai.user.message`` events), else the root span's
  ``input.value``, else its own ``input.value``;
- **answer**: the last assistant message of its output (``llm.output_messages.N``;
  ``gen_ai.output.messages`` or ``gen_ai.choice`` events), else its ``output.value``; an LLM
  span without an answer gives no event (counted);
- **contexts**: the documents of the retriever spans that started before it
  (``retrieval.documents.N.document.content``, with ``document.id`` as the doc id); when a
  reranker span started before it, the documents of the latest reranker's output
  (``reranker.output_documents.N...``) instead; none: an answer with no contexts (the verdicts
  DEFER ``no_contexts``), not a dropped one;
- **model**: ``llm.model_name``, else ``gen_ai.response.model`` / ``gen_ai.request.model``;
- **tenant**: the configured attribute, looked up on the span, then the root span, then the
  resource;
- ``id`` = ``<trace id>-<LLM span id>`` (span ids are unique only within a trace: two traces
  whose LLM spans share a span id must not share verdict ids), ``request_id`` = ``trace_id`` =
  the trace id, ``span_id`` = the LLM span's id, ``ts`` = its end time.

Attribute names come from the conventions' own packages (``openinference-semantic-conventions``
and OpenTelemetry's ``gen_ai`` attributes), never re-typed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from openinference.semconv.trace import (
    DocumentAttributes,
    MessageAttributes,
    OpenInferenceSpanKindValues,
    RerankerAttributes,
    SpanAttributes,
)
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from pydantic import ValidationError

from verdictflow.models.events import AnswerEvent
from verdictflow.models.spans import SpanRecord

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
LLM = OpenInferenceSpanKindValues.LLM.value
RETRIEVER = OpenInferenceSpanKindValues.RETRIEVER.value
RERANKER = OpenInferenceSpanKindValues.RERANKER.value
#: GenAI operations that are a model call answering a prompt.
GENAI_LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
#: GenAI events that carry messages (the older event-based layout).
GENAI_USER_EVENT = "gen_ai.user.message"
GENAI_CHOICE_EVENT = "gen_ai.choice"


def span_role(span: SpanRecord) -> str | None:
    """``llm``, ``retriever``, ``reranker``, or None (another kind: ignored, but a root span
    is kept for its input and its end)."""
    kind = span.attributes.get(KIND)
    if kind == LLM:
        return "llm"
    if kind == RETRIEVER:
        return "retriever"
    if kind == RERANKER:
        return "reranker"
    if kind is None and span.attributes.get(gen_ai.GEN_AI_OPERATION_NAME) in GENAI_LLM_OPERATIONS:
        return "llm"
    return None


def keep(span: SpanRecord) -> bool:
    """Whether assembly needs the span at all."""
    return span.is_root or span_role(span) is not None


@dataclass
class Assembly:
    """What a trace gave: its answer events, and why some LLM spans gave none."""

    events: list[AnswerEvent] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def assemble(spans: Iterable[SpanRecord], tenant_attribute: str | None) -> Assembly:
    """The answer events of one trace's spans (see the module docstring)."""
    ordered = sorted(
        {s.span_id: s for s in spans}.values(), key=lambda s: (s.start_unix_nano, s.span_id)
    )
    root = next((s for s in ordered if s.is_root), None)
    out = Assembly()
    for llm in (s for s in ordered if span_role(s) == "llm"):
        answer = _answer(llm)
        if not answer:
            out.skipped.append(f"LLM span {llm.span_id} has no output")
            continue
        before = [s for s in ordered if s.start_unix_nano <= llm.start_unix_nano and s is not llm]
        query = (
            _last_user_message(llm)
            or _text(root, SpanAttributes.INPUT_VALUE)
            or _text(llm, SpanAttributes.INPUT_VALUE)
        )
        record: dict[str, Any] = {
            "id": answer_id(llm.trace_id, llm.span_id),
            "request_id": llm.trace_id,
            "trace_id": llm.trace_id,
            "span_id": llm.span_id,
            "query": query or "",
            "answer": answer,
            "contexts": _contexts(before),
            "model": _model(llm),
            "tenant": _tenant(tenant_attribute, llm, root),
            "ts": llm.end_unix_nano / 1e9 if llm.end_unix_nano else None,
        }
        try:
            out.events.append(AnswerEvent.model_validate(record))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            out.skipped.append(f"LLM span {llm.span_id}: {where}: {first['msg']}")
    return out


def answer_id(trace_id: str, span_id: str) -> str:
    """The answer event's id for an LLM span: trace id and span id (see the module doc)."""
    return f"{trace_id}-{span_id}"


def _text(span: SpanRecord | None, key: str) -> str | None:
    if span is None:
        return None
    value = span.attributes.get(key)
    return value if isinstance(value, str) and value.strip() else None


def _indexed(attributes: dict[str, Any], prefix: str, suffix: str) -> list[tuple[int, Any]]:
    """``prefix.N.suffix`` values by N, in order (OpenInference's flattened lists)."""
    found = []
    head, tail = prefix + ".", "." + suffix
    for key, value in attributes.items():
        if key.startswith(head) and key.endswith(tail):
            middle = key[len(head) : len(key) - len(tail)]
            if middle.isdigit():
                found.append((int(middle), value))
    return sorted(found, key=lambda item: item[0])


def _messages(span: SpanRecord, prefix: str) -> list[tuple[str, str]]:
    """(role, content) of OpenInference's flattened messages under ``prefix``."""
    roles = dict(_indexed(span.attributes, prefix, MessageAttributes.MESSAGE_ROLE))
    contents = dict(_indexed(span.attributes, prefix, MessageAttributes.MESSAGE_CONTENT))
    return [
        (str(roles.get(i, "")), content)
        for i, content in sorted(contents.items())
        if isinstance(content, str)
    ]


def _genai_messages(span: SpanRecord, key: str) -> list[tuple[str, str]]:
    """(role, text) from a GenAI ``gen_ai.input.messages`` / ``gen_ai.output.messages``
    attribute (a JSON list of ``{role, parts: [{type: text, content}]}``)."""
    raw = span.attributes.get(key)
    if not isinstance(raw, str):
        return []
    try:
        messages = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return []
    out = []
    for m in messages if isinstance(messages, list) else []:
        if not isinstance(m, dict):
            continue
        found = m.get("parts")
        parts: list[Any] = found if isinstance(found, list) else []
        texts = [p.get("content") for p in parts if isinstance(p, dict) and p.get("type") == "text"]
        text = "".join(t for t in texts if isinstance(t, str)) or m.get("content")
        if isinstance(text, str):
            out.append((str(m.get("role", "")), text))
    return out


def _event_content(span: SpanRecord, name: str) -> list[str]:
    """The contents of the span's GenAI message events called ``name``."""
    out = []
    for event in span.events:
        if event.name != name:
            continue
        content = event.attributes.get("content")
        message = event.attributes.get("message")
        if isinstance(message, str):
            try:
                message = orjson.loads(message)
            except orjson.JSONDecodeError:
                message = None
        if not isinstance(content, str) and isinstance(message, dict):
            content = message.get("content")
        if isinstance(content, str) and content.strip():
            out.append(content)
    return out


def _last_user_message(llm: SpanRecord) -> str | None:
    candidates = [
        c
        for role, c in _messages(llm, SpanAttributes.LLM_INPUT_MESSAGES)
        + _genai_messages(llm, gen_ai.GEN_AI_INPUT_MESSAGES)
        if role == "user" and c.strip()
    ] + _event_content(llm, GENAI_USER_EVENT)
    return candidates[-1] if candidates else None


def _answer(llm: SpanRecord) -> str | None:
    candidates = [
        c
        for role, c in _messages(llm, SpanAttributes.LLM_OUTPUT_MESSAGES)
        + _genai_messages(llm, gen_ai.GEN_AI_OUTPUT_MESSAGES)
        if role in ("assistant", "") and c.strip()
    ] + _event_content(llm, GENAI_CHOICE_EVENT)
    if candidates:
        return candidates[-1]
    return _text(llm, SpanAttributes.OUTPUT_VALUE)


def _documents(span: SpanRecord, prefix: str) -> list[dict[str, Any]]:
    contents = dict(_indexed(span.attributes, prefix, DocumentAttributes.DOCUMENT_CONTENT))
    ids = dict(_indexed(span.attributes, prefix, DocumentAttributes.DOCUMENT_ID))
    out = []
    for i, content in sorted(contents.items()):
        if isinstance(content, str) and content.strip():
            doc_id = ids.get(i)
            out.append({"text": content, "doc_id": str(doc_id) if doc_id is not None else None})
    return out


def _contexts(before: Sequence[SpanRecord]) -> list[dict[str, Any]]:
    rerankers = [s for s in before if span_role(s) == "reranker"]
    if rerankers:
        docs = _documents(rerankers[-1], RerankerAttributes.RERANKER_OUTPUT_DOCUMENTS)
        if docs:
            return docs
    docs = []
    seen: set[str] = set()
    for span in before:
        if span_role(span) != "retriever":
            continue
        for doc in _documents(span, SpanAttributes.RETRIEVAL_DOCUMENTS):
            if doc["text"] not in seen:
                seen.add(doc["text"])
                docs.append(doc)
    return docs


def _model(llm: SpanRecord) -> str | None:
    for key in (
        SpanAttributes.LLM_MODEL_NAME,
        gen_ai.GEN_AI_RESPONSE_MODEL,
        gen_ai.GEN_AI_REQUEST_MODEL,
    ):
        value = llm.attributes.get(key)
        if isinstance(value, str) and value:
            return value[:256]
    return None


def _tenant(attribute: str | None, llm: SpanRecord, root: SpanRecord | None) -> str | None:
    if not attribute:
        return None
    for source in (llm.attributes, root.attributes if root else {}, llm.resource):
        value = source.get(attribute)
        if value is not None and str(value):
            return str(value)[:256]
    return None
