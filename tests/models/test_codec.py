from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC
from enum import Enum

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verdictflow.exceptions import InvalidEvent
from verdictflow.models.codec import decode, encode
from verdictflow.models.events import AnswerEvent, Context
from verdictflow.models.verdicts import Decision, Reason, ReasonCode, Verdict, VerdictKind

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
        (b"[" * 5000 + b"]" * 5000, "too_deep"),
        (b'{"a": ' * 1100 + b"1" + b"}" * 1100, "too_deep"),
        (b"[" * 1000 + b"]" * 1000, "not_object"),  # under the limit: parsed
        (b'{"id": "a", \xff "answer": "x"}', "invalid_utf8"),  # outside a string too
        (b'{"id": "a", "answer": "trunc\xc3', "invalid_utf8"),  # cut inside a character
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


def test_dead_letter_of_an_oversized_record_is_bounded_and_names_the_whole_value():
    import hashlib

    from verdictflow.models.dead_letter import RAW_PREVIEW_CHARS
    from verdictflow.streams.records import Record, dead_letter

    raw = b'{"id": "big", "answer": "' + "é".encode() * 600_000 + b'"}'
    record = Record(topic="vf.answers", partition=3, offset=7, key=b"big", value=raw)
    with pytest.raises(InvalidEvent) as info:
        decode(raw, AnswerEvent)
    letter = dead_letter(record, info.value)
    assert letter.error_code == "oversized"
    assert letter.raw_size == len(raw)
    assert letter.raw_sha256 == hashlib.sha256(raw).hexdigest()
    assert len(letter.raw) == RAW_PREVIEW_CHARS
    assert len(encode(letter)) < 3 * RAW_PREVIEW_CHARS + 1024  # fits any broker's record limit


@pytest.mark.parametrize(
    "ts", [1e308, -1.0, 1.7e12, "9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00"]
)
def test_an_event_time_outside_1970_2200_is_refused_with_the_reason(ts: object) -> None:
    with pytest.raises(InvalidEvent) as info:
        decode(orjson.dumps({"id": "a", "answer": "x", "ts": ts}), AnswerEvent)
    assert info.value.code == "schema"
    assert "ts" in info.value.detail


def test_an_iso_time_without_an_offset_is_utc() -> None:
    event = decode(b'{"id": "a", "answer": "x", "ts": "2024-05-01T12:00:00"}', AnswerEvent)
    assert event.ts == 1714564800.0


_JSON_LEAF = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats() | st.text()
_JSON = st.recursive(
    _JSON_LEAF,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(score=st.none() | st.floats(), evidence=st.dictionaries(st.text(), _JSON, max_size=5))
@settings(max_examples=300)
def test_encode_writes_what_orjson_wrote_before(score: float | None, evidence: dict) -> None:
    """Verdicts must stay byte-identical across the switch to pydantic-core's writer (issue 41):
    any float (NaN and infinities as null), any text, nested evidence."""
    verdict = Verdict(
        verdict_id="v", kind=VerdictKind.GROUNDEDNESS, input_id="a\u2028é\x00", score=score,
        threshold=0.5, decision=Decision.PASS,
        reasons=[Reason(code=ReasonCode.AT_OR_ABOVE_THRESHOLD, detail="ok")], evidence=evidence,
        config_digest="c", tokenizer_version="t",
    )  # fmt: skip
    assert encode(verdict) == orjson.dumps(verdict.model_dump(mode="json"))


class _Colour(Enum):
    RED = "red"


@dataclass(frozen=True)
class _Span:
    start: int
    end: int


#: Values whose JSON a writer could get wrong: pydantic-core's is the reference.
_AWKWARD = (
    _JSON_LEAF
    | st.integers()  # past 64 bits too
    | st.sets(st.integers(0, 9), max_size=3)
    | st.tuples(st.integers(), st.text())
    | st.datetimes(timezones=st.none() | st.just(UTC))
    | st.dates()
    | st.uuids()
    | st.builds(_Span, st.integers(), st.integers())
    | st.sampled_from([_Colour.RED, Decision.FAIL, ReasonCode.NO_QUERY])
    | st.dictionaries(st.integers(0, 9), st.text(), max_size=2)  # keys that are not strings
)


@given(
    score=st.none() | st.floats(),
    evidence=st.dictionaries(st.text(), _AWKWARD | st.lists(_AWKWARD, max_size=3), max_size=4),
    copied=st.booleans(),
)
@settings(max_examples=300)
def test_a_verdict_is_written_as_pydantic_core_writes_it(
    score: float | None, evidence: dict, copied: bool
) -> None:
    """orjson writes verdicts in the lexical tier (issue 41): byte for byte pydantic-core's JSON
    for any evidence, handing over to pydantic-core where it cannot be sure."""
    verdict = Verdict(
        verdict_id="v", kind=VerdictKind.RELEVANCE, input_id="a\u2028é\x00\x7f", score=score,
        threshold=0.5, decision=Decision.DEFER,
        reasons=[Reason(code=ReasonCode.NO_QUERY, detail="q\n\t\"\\"), Reason(
            code=ReasonCode.TOPIC_DRIFT, detail="ü")], evidence=evidence,
        config_digest="c", tokenizer_version="t", tenant="t1", event_ts=1.5,
    )  # fmt: skip
    if copied:  # as scorers give evidence back in the original text's offsets
        verdict = verdict.model_copy(update={"evidence": {"changed": True, **evidence}})
    assert encode(verdict) == Verdict.__pydantic_serializer__.to_json(verdict)
