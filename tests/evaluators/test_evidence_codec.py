"""Stored evidence indexes are the indexes: equal after a round trip on real articles and on
generated text, and a damaged body is refused, never half-read."""

from __future__ import annotations

import json
import zlib
from decimal import Decimal

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.paths import SHARED_DATA
from verdictflow.evaluators.answer_analysis import COMPONENTS
from verdictflow.evaluators.context_index import ContextIndexer
from verdictflow.evaluators.evidence_codec import decode_index, encode_index
from verdictflow.evaluators.evidence_index import build_evidence_index
from verdictflow.nlp import load_pipeline

TRICKY = [
    "",
    "It wasn't 3-5% in May 2019; twenty-five out of a hundred, may be 1.50 or 1,000,000.",
    "On 12/03/2020 and 2021-03-04, the 7th of May, 2020 at 3 pm; the 1990s. ’s 's",
]


@pytest.fixture(scope="module")
def nlp():
    return load_pipeline(COMPONENTS)


@pytest.fixture(scope="module")
def indexer(nlp):
    return ContextIndexer(nlp)


def articles(n: int) -> list[str]:
    path = SHARED_DATA / "qags" / "mturk_cnndm.jsonl"
    lines = path.read_text("utf-8").splitlines()
    return list(dict.fromkeys(json.loads(line)["article"] for line in lines))[:n]


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data not present")
def test_indexes_of_real_articles_come_back_equal(indexer) -> None:
    texts = articles(12) + TRICKY
    for text in texts:
        index = indexer.index(text)
        back = decode_index(encode_index(index), text)
        assert back == index
        # Field by field too, with the decimals' own digits (1.50 is not 1.5 to a verdict
        # that quotes the context's figure).
        assert [repr(q) for q in back.quantities] == [repr(q) for q in index.quantities]
        assert back.dates == index.dates
        assert back.times == index.times
    assert any(index.quantities for index in map(indexer.index, texts))


def test_parsed_indexes_come_back_equal(nlp) -> None:
    for doc in nlp.pipe(TRICKY[1:]):
        index = build_evidence_index(doc)
        assert decode_index(encode_index(index), doc.text) == index


@settings(max_examples=60)
@given(
    st.lists(
        st.sampled_from(
            ["The", "board", "didn't", "meet", "in", "May", "2019", "3.50", "%", "twenty-five",
             "at", "3", "pm", ".", ",", "Ada", "Lovelace", "never", "won", "1990s", "\n", "é"]
        ),
        max_size=40,
    )
)  # fmt: skip
def test_generated_text_round_trips(indexer, words: list[str]) -> None:
    text = " ".join(words)
    index = indexer.index(text)
    assert decode_index(encode_index(index), text) == index


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda raw: raw.update(f="verdictflow-evidence-index/0"), "not a verdictflow"),
        (lambda raw: raw["ws"].__setitem__(1, 10**6), "outside a text"),
        (lambda raw: raw["ws"].__setitem__(0, 0.0), "word spans"),
        (lambda raw: raw["ws"].pop(), "word spans"),
        (lambda raw: raw["q"][0].__setitem__(0, "NaN"), "finite"),
        (lambda raw: raw["q"][0].__setitem__(2, 1), "boolean"),
        (lambda raw: raw["b"].append(10**6), "word-pair"),
        (lambda raw: raw.pop("s"), "malformed"),
        (lambda raw: raw["w"].__setitem__(0, 7), "strings"),
    ],
)
def test_a_damaged_body_is_refused(indexer, damage, message) -> None:
    text = TRICKY[1]
    raw = orjson.loads(encode_index(indexer.index(text)))
    damage(raw)
    with pytest.raises(ValueError, match=message):
        decode_index(orjson.dumps(raw), text)


def test_truncated_or_foreign_bytes_are_refused(indexer) -> None:
    text = TRICKY[1]
    body = encode_index(indexer.index(text))
    for bad in (body[: len(body) // 2], b"", zlib.compress(body), b"[1, 2]"):
        with pytest.raises(ValueError, match=r"JSON|record"):
            decode_index(bad, text)
    # The same body read for a shorter text: its spans do not fit, so it is not that text's.
    with pytest.raises(ValueError, match="outside"):
        decode_index(body, text[:20])
    assert Decimal("1.50") in {q.value for q, _, _ in decode_index(body, text).quantities}
