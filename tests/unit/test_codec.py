from __future__ import annotations

import orjson
import pytest

from verdictflow.exceptions import InvalidEvent
from verdictflow.models.codec import decode, encode
from verdictflow.models.events import AnswerEvent, Context

VALID = {"id": "a1", "query": "q", "answer": "x", "contexts": ["c", {"doc_id": "d", "text": "t"}]}


def test_decodes_mixed_contexts_and_ignores_unknown_fields():
    event = decode(orjson.dumps({**VALID, "future_field": 1}), AnswerEvent)
    assert event.context_passages == [Context(text="c"), Context(doc_id="d", text="t")]
    assert event.group_key == "a1"


def test_iso_timestamp_becomes_epoch_seconds():
    event = decode(orjson.dumps({**VALID, "ts": "2026-01-01T00:00:00Z"}), AnswerEvent)
    assert event.ts == 1767225600.0


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (None, "empty"),
        (b"", "empty"),
        (b'{"id": "a", "answer": "trunc', "not_json"),
        (b'{"id": "a", "answer": "\xff\xfe"}', "invalid_utf8"),
        (b"[1, 2]", "not_object"),
        (b'{"id": "a", "answer": 42}', "schema"),
        (b'{"answer": "no id"}', "schema"),
        (b'{"id": "", "answer": "empty id"}', "schema"),
        (b'{"id": "a", "answer": "x", "contexts": "not a list"}', "schema"),
        (b'{"id": "a", "answer": "x", "expected_variants": 0}', "schema"),
        (b"[" * 5000 + b"]" * 5000, "not_json"),
    ],
)
def test_malformed_values_raise_typed_reasons(raw, code):
    with pytest.raises(InvalidEvent) as info:
        decode(raw, AnswerEvent)
    assert info.value.code == code


def test_oversized_value_is_rejected_before_parsing():
    with pytest.raises(InvalidEvent, match="oversized"):
        decode(b" " * 2048, AnswerEvent, max_bytes=1024)


def test_schema_error_names_the_field():
    with pytest.raises(InvalidEvent) as info:
        decode(b'{"id": "a", "answer": 42}', AnswerEvent)
    assert info.value.detail.startswith("answer:")


def test_encode_round_trip():
    event = decode(orjson.dumps(VALID), AnswerEvent)
    assert decode(encode(event), AnswerEvent) == event
