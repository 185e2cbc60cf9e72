"""A pair's texts cut to the window before tokenizing: the same tokens as the whole texts give,
with the shipped checker's tokenizer, for texts of many scripts and shapes."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from verdictflow.judge_tier.checker_backend import MAX_LENGTH, shipped_dir
from verdictflow.judge_tier.pair_window import LONG_CHARS, PairWindow

#: Pieces of text a long input is made of: prose, digits and units, punctuation runs, accents
#: and combining marks (stripped by the normaliser), CJK (a piece a character), Hangul (split
#: into jamo), emoji ([UNK]), zero-width and control characters (removed), a URL, long words
#: (over 100 characters: one [UNK]), and every kind of space.
PARTS = [
    "The Eiffel Tower is 330 metres tall. ", "In 2019, Acme's revenue rose 12%; ",
    "!!!", "==", "--", "...", "café naïve ", "e\u0301\u0301 ", "这是一个句子。", "한국어 문장 ",
    "😀🙂", "\u200b\u200d", "\x00\x07", "https://example.com/a-b/c?d=e ", "x" * 120,
    "unaffable", " ", "\n\n", "\t", "\u3000",
]  # fmt: skip


@lru_cache(maxsize=1)
def tokenizer() -> Any:
    from tokenizers import Tokenizer

    from verdictflow.evaluators.checker_chunks import PAIR_TRUNCATION

    t = Tokenizer.from_file(str(shipped_dir() / "tokenizer.json"))
    t.enable_truncation(MAX_LENGTH, strategy=PAIR_TRUNCATION)  # as CheckerModel does
    return t


def encoded(pair: tuple[str, str]) -> tuple[list[int], list[int], list[int]]:
    (e,) = tokenizer().encode_batch([pair])
    return e.ids, e.type_ids, e.attention_mask


#: 150-500 parts: ~1,200-6,000 characters, over LONG_CHARS more often than not.
texts = st.lists(st.sampled_from(PARTS), min_size=150, max_size=500).map("".join)


@settings(max_examples=40)
@given(first=texts, second=texts)
def test_a_cut_pair_has_the_tokens_of_the_whole_pair(first: str, second: str) -> None:
    window = PairWindow(tokenizer(), MAX_LENGTH)
    for pair in ((first, second), (first, "Paris is in France."), ("Paris.", second)):
        assert encoded(window.pair(*pair)) == encoded(pair)


def test_a_flood_is_cut_to_the_window_and_keeps_its_tokens() -> None:
    """The shapes that took seconds to judge (a chunk of "=" against a claim of "!": 14 s at
    30,000 and 15,000): each is cut after its 256th piece, with the pair's tokens unchanged
    (compared at a size the whole pair still tokenizes in a moment)."""
    window = PairWindow(tokenizer(), MAX_LENGTH)
    flood, url = "=" * 30_000, "https://x.com/" + "a-b/" * 4_000
    chunk, claim = window.pair(flood, "!" * 15_000)
    assert (len(chunk), len(claim)) == (MAX_LENGTH + 1, MAX_LENGTH)  # the longer keeps one more
    assert all(len(text) < 1_000 for text in window.pair(url, url[:-4]))
    prose = "The Eiffel Tower is 330 metres tall. " * 200  # over LONG_CHARS, 1,800 pieces
    assert len(prose) > LONG_CHARS
    assert window.pair(prose, "Short.")[0] != prose
    pairs = [("=" * 3_000, "!" * 2_500), ("!" * 2_500, "=" * 3_000), ("=" * 3_000, "=" * 3_000),
             (prose, url[:3_000]), (prose, "!" * 300), ("=" * 300, "!" * 2_100)]  # fmt: skip
    for pair in pairs:
        assert encoded(window.pair(*pair)) == encoded(pair)
