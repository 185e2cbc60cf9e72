"""Generated malformed ``answers`` payloads for the bad-input test, drawn with Hypothesis.

Each kind is drawn by its own derandomized Hypothesis run (``max_examples`` = how many are
wanted), so the same call gives the same payloads: the test is reproducible, and a failure
names the payload's offset. Every payload is invalid by construction; the test checks it with
the production decoder before sending, so a strategy that drifts into valid input fails loudly.
"""

from __future__ import annotations

from collections.abc import Callable

import orjson
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

#: orjson encodes 64-bit integers only.
_int = st.integers(-(2**63), 2**63 - 1)
#: What a valid event looks like before it is broken.
_words = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
_event = st.fixed_dictionaries(
    {
        "id": st.text(min_size=1, max_size=12),
        "query": _words,
        "answer": _words,
        "contexts": st.lists(_words, max_size=3),
    }
)
#: Values of a type the field does not accept (known fields are never coerced).
_not_text = st.one_of(_int, st.floats(allow_nan=False), st.booleans(), st.lists(_int, max_size=3))
_WRONG: dict[str, st.SearchStrategy[object]] = {
    "id": _not_text,
    "query": _not_text,
    "answer": st.one_of(_not_text, st.none()),
    "contexts": st.one_of(_int, st.text(max_size=5), st.lists(_int, min_size=1)),
    "variants": st.one_of(_int, st.lists(_int, min_size=1)),
    "expected_variants": st.one_of(st.text(max_size=3), st.integers(-(2**63), 0)),
}
_INVALID_UTF8 = (
    b"\xff",
    b"\xfe\xff",
    b"\xc3\x28",
    b"\xed\xa0\x80",
    b"\xe2\x82",
    b"\xf8\x88\x80\x80",
)


@st.composite
def wrong_types(draw: st.DrawFn) -> bytes:
    event = draw(_event)
    field = draw(st.sampled_from(sorted(_WRONG)))
    event[field] = draw(_WRONG[field])
    return orjson.dumps(event)


@st.composite
def truncated_json(draw: st.DrawFn) -> bytes:
    raw = orjson.dumps(draw(_event))
    return raw[: draw(st.integers(1, len(raw) - 1))]


@st.composite
def invalid_utf8(draw: st.DrawFn) -> bytes:
    raw = orjson.dumps(draw(_event))
    at = draw(st.integers(0, len(raw)))
    return raw[:at] + draw(st.sampled_from(_INVALID_UTF8)) + raw[at:]


@st.composite
def deep_nesting(draw: st.DrawFn) -> bytes:
    depth = draw(st.integers(1025, 20_000))  # orjson refuses more than 1024 levels
    opener, closer = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}")]))
    return (
        b'{"id": "deep", "query": "q", "answer": ' + opener * depth + b"1" + closer * depth + b"}"
    )


#: JSON that is not an object, or no value at all.
not_an_object = st.one_of(
    st.just(b""),
    st.recursive(
        st.none() | st.booleans() | _int | st.floats(allow_nan=False) | st.text(),
        lambda inner: st.lists(inner, max_size=4),
        max_leaves=8,
    ).map(orjson.dumps),
)


@st.composite
def huge_field(draw: st.DrawFn) -> bytes:
    """A text field over the 200,000-character limit, in a record under the size limit."""
    size = draw(st.integers(200_001, 260_000))
    field = draw(st.sampled_from(["answer", "query", "id"]))
    event = {
        "id": "huge",
        "query": "q",
        "answer": "a",
        field: draw(st.characters(min_codepoint=0x20, max_codepoint=0x7FF)) * size,
    }
    return orjson.dumps(event)


def oversized(max_event_bytes: int, broker_limit: int) -> st.SearchStrategy[bytes]:
    """A record over the worker's limit but still under the broker's: an answer padded out."""

    def build(size: int) -> bytes:
        head = b'{"id": "big", "query": "q", "answer": "'
        return head + b"x" * (size - len(head) - 2) + b'"}'

    return st.integers(max_event_bytes + 1, broker_limit).map(build)


def draw_many(strategy: st.SearchStrategy[bytes], n: int) -> list[bytes]:
    """``n`` examples of ``strategy`` from a derandomized Hypothesis run (same bytes each time)."""
    drawn: list[bytes] = []

    @settings(
        max_examples=n,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def keep(payload: bytes) -> None:
        drawn.append(payload)

    keep()
    return drawn[:n]


def malformed_mix(counts: dict[str, int], max_event_bytes: int, broker_limit: int) -> list[bytes]:
    """Payloads of every kind, interleaved round-robin so each kind spreads over the replay."""
    kinds: dict[str, Callable[[], st.SearchStrategy[bytes]]] = {
        "wrong_types": wrong_types,
        "truncated_json": truncated_json,
        "invalid_utf8": invalid_utf8,
        "deep_nesting": deep_nesting,
        "not_an_object": lambda: not_an_object,
        "huge_field": huge_field,
        "oversized": lambda: oversized(max_event_bytes, broker_limit),
    }
    pools = [draw_many(kinds[kind](), n) for kind, n in counts.items()]
    mixed: list[bytes] = []
    while any(pools):
        for pool in pools:
            if pool:
                mixed.append(pool.pop())
    return mixed
