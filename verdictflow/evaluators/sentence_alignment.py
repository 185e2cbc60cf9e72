"""Which context sentences hold which words of an answer sentence, for the faithfulness
signals' alignment (best-supporting sentence, its best partner) and misplaced-word deficits.

The words an answer sentence shares with each context sentence are kept as bit sets, one
column per context sentence (``uint64`` words: bit ``i`` of column ``c`` says that context
sentence ``c`` holds the answer sentence's word ``i``, as a word or a lemma), so every question
the signals ask is a few vectorised operations over the context's sentences instead of a
Python loop over (answer word, context sentence) pairs. The first version tested every answer
word against every context sentence: a 10,000-character answer against 64 contexts of 12,000
characters took 30 s. The answers are the same sets, so no signal moves (a test checks the
vectorised path against that direct definition on random sets).

Ties go to the earliest context sentence everywhere (``numpy.argmax`` returns the first
maximum), so the choice is deterministic.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

#: Context sentences on each side that a window adds: a summary sentence often joins a
#: sentence and the next, and a pronoun's name is in the sentence before.
WINDOW = 1
#: Bits per word of a bit set.
_BITS = 64

Masks = npt.NDArray[np.uint64]


@dataclass(frozen=True, slots=True)
class SentenceCoverage:
    """One answer sentence of ``n`` words against every context sentence."""

    n: int
    #: ``(ceil(n / 64), context sentences)`` bit sets: the words each context sentence holds.
    held: Masks
    #: The same for each sentence's window (itself and its ``WINDOW`` neighbours on each side
    #: in the same context).
    windows: Masks

    def best_pair(self) -> tuple[int, int, int]:
        """``(best, second, words)``: the context sentence holding most of the answer
        sentence's words, the one whose union with it holds most, and how many ``best``
        holds (``second == best`` when no other sentence adds a word)."""
        counts = _popcount(self.held)
        best = int(np.argmax(counts))
        union = _popcount(self.held | self.held[:, best : best + 1])
        return best, int(np.argmax(union)), int(counts[best])

    def deficits(self) -> list[float]:
        """For each word: how many fewer of the sentence's other words occur around it (in
        the best window holding it) than in the best window without it, over ``n - 1``; 0
        for a word found nowhere."""
        n = self.n
        if n < 2 or self.windows.shape[1] == 0:
            return [0.0] * n
        counts = _popcount(self.windows)
        top = int(counts.max())
        if top == 0:
            return [0.0] * n
        # The best window without word i holds ``top`` words unless every window holding
        # ``top`` holds i as well (then ``top - 1``).
        in_every_top = np.bitwise_and.reduce(self.windows[:, counts == top], axis=1)
        # each word's bit in each window, all words at once (a loop per word cost ~20 us each)
        position = np.arange(n)
        rows, bits = position // _BITS, (position % _BITS).astype(np.uint64)
        one = np.uint64(1)
        holding = ((self.windows[rows] >> bits[:, np.newaxis]) & one).astype(bool)
        found: list[bool] = np.logical_or.reduce(holding, axis=1).tolist()
        around: list[int] = (np.where(holding, counts, -1).max(axis=1) - 1).tolist()
        every: list[bool] = ((in_every_top[rows] >> bits) & one).astype(bool).tolist()
        out = []
        for i in range(n):
            if not found[i]:  # found nowhere: a novel word, counted elsewhere
                out.append(0.0)
                continue
            best_without = top - 1 if every[i] else top
            out.append(max(0, best_without - around[i]) / (n - 1))
        return out


class SentenceIndex:
    """The context sentences' words, looked up by the answer's words (built once per answer:
    only the words the answer uses are indexed)."""

    def __init__(
        self,
        sentence_terms: Sequence[frozenset[str]],
        sentence_contexts: Sequence[int],
        answer_words: Iterable[str],
    ) -> None:
        vocabulary = set(answer_words)
        found: dict[str, list[int]] = {}
        for c, terms in enumerate(sentence_terms):
            for word in terms & vocabulary:
                found.setdefault(word, []).append(c)
        self._found = {w: np.array(cs, dtype=np.intp) for w, cs in found.items()}
        self.count = len(sentence_terms)
        self._contexts = np.asarray(sentence_contexts, dtype=np.intp)

    def coverage(self, words: Sequence[tuple[str, str]]) -> SentenceCoverage:
        """The coverage of an answer sentence given as its words' ``(lower, lemma)`` forms."""
        n = len(words)
        held = np.zeros(((n + _BITS - 1) // _BITS, self.count), dtype=np.uint64)
        for i, (lower, lemma) in enumerate(words):
            row, bit = divmod(i, _BITS)
            mask = np.uint64(1 << bit)
            for form in (lower, lemma) if lemma != lower else (lower,):
                sentences = self._found.get(form)
                if sentences is not None:
                    held[row, sentences] |= mask
        return SentenceCoverage(n, held, self._windows(held))

    def _windows(self, held: Masks) -> Masks:
        windows = held.copy()
        zero = np.uint64(0)
        for d in range(1, min(WINDOW, self.count - 1) + 1):
            # sentences d apart in the same context see each other's words
            same = (self._contexts[d:] == self._contexts[:-d])[np.newaxis, :]
            windows[:, d:] |= np.where(same, held[:, :-d], zero)
            windows[:, :-d] |= np.where(same, held[:, d:], zero)
        return windows


def _popcount(masks: Masks) -> npt.NDArray[np.int64]:
    """Words held per context sentence: the set bits of each column."""
    counts: npt.NDArray[np.int64] = np.bitwise_count(masks).sum(axis=0, dtype=np.int64)
    return counts
