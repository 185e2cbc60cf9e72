"""A (chunk, claim) pair's texts cut to what the cross-encoder's window keeps, before the pair
is tokenized.

Hugging Face's ``tokenizers`` truncates a pair by splitting what it removes from each text into
overflow windows and merging every window of one text with every window of the other, so its
time grows with the product of the two lengths: a chunk of 30,000 "=" against a claim of 15,000
"!" took 14 s to judge, a prose answer ~0.5 s (2026-11-29; an unspaced 15 KB URL against a 30 KB
one 7 s). Words do not bound either text (a flood, a URL, code, an unspaced sentence are one
"word"); the judge's ``max_prompt_chars`` bounds the whole prompt, not the pair.

So when either text is longer than :data:`LONG_CHARS`, both are first tokenized alone
(linear) and each is cut at the end of a word (a pre-tokenizer word: the pieces of a prefix
that ends with a whole word are that word's pieces, whatever the script or normaliser), past
its ``pieces``-th word piece. Truncation keeps at most ``pieces`` pieces of either text, and
when both are cut, which keeps the odd piece depends only on which is longer: so the cut keeps
the order of the two lengths (the longer is cut past the shorter's cut; two of one length at a
length that ends a word in both, or not at all). The pair's tokens do not change:
``tests/judge_tier/test_pair_window.py`` checks it on texts of many scripts and shapes.
"""

from __future__ import annotations

from typing import Any

#: Texts up to this many characters are left as they are (a chunk is at most 150 words, a
#: claim 60): the cut costs a second tokenization, paid only by texts that may need it.
LONG_CHARS = 2048


class PairWindow:
    """Cuts texts for one tokenizer (a ``tokenizers.Tokenizer``), through a copy of it
    without truncation or padding, whatever the original is set to."""

    def __init__(self, tokenizer: Any, pieces: int) -> None:
        from tokenizers import Tokenizer

        self.pieces = pieces
        self._alone = Tokenizer.from_str(tokenizer.to_str())
        self._alone.no_truncation()
        self._alone.no_padding()

    def pair(self, chunk: str, claim: str) -> tuple[str, str]:
        """The pair, each text cut as the module doc says (as it is when both are short)."""
        if len(chunk) <= LONG_CHARS and len(claim) <= LONG_CHARS:
            return chunk, claim
        first = self._alone.encode(chunk, add_special_tokens=False)
        second = self._alone.encode(claim, add_special_tokens=False)
        ends_first, ends_second = _word_ends(first.word_ids), _word_ends(second.word_ids)
        n_first, n_second = len(first.ids), len(second.ids)
        if n_first == n_second:
            common = set(ends_second)
            keep = next((n for n in ends_first if n >= self.pieces and n in common), n_first)
            keep_first = keep_second = keep
        elif n_first > n_second:
            keep_second = _at_least(ends_second, self.pieces)
            keep_first = _at_least(ends_first, max(self.pieces, keep_second + 1))
        else:
            keep_first = _at_least(ends_first, self.pieces)
            keep_second = _at_least(ends_second, max(self.pieces, keep_first + 1))
        return _prefix(chunk, first.offsets, keep_first), _prefix(
            claim, second.offsets, keep_second
        )


def _word_ends(word_ids: list[int | None]) -> list[int]:
    """The piece counts at which a word ends, ascending (the last is the text's count)."""
    return [
        i + 1
        for i in range(len(word_ids))
        if i + 1 == len(word_ids) or word_ids[i + 1] != word_ids[i]
    ]


def _at_least(ends: list[int], count: int) -> int:
    """The first word end of at least ``count`` pieces (the whole text when none is)."""
    return next((n for n in ends if n >= count), ends[-1] if ends else 0)


def _prefix(text: str, offsets: list[tuple[int, int]], keep: int) -> str:
    return text if keep >= len(offsets) else text[: offsets[keep - 1][1]]
