"""Which context sentences hold which words of an answer sentence, for the faithfulness
signals' alignment (best-supporting sentence, its best partner) and misplaced-word deficits.

The words an answer sentence shares with each context sentence are kept as bit sets, one per
context sentence: a Python ``int`` whose bit ``i`` says that the sentence holds the answer
sentence's word ``i``, as a word or a lemma. So every question the signals ask is a few integer
operations per context sentence (``|``, ``&``, ``int.bit_count``, all in C whatever the
answer's length) instead of a Python loop over (answer word, context sentence) pairs. The first
version tested every answer word against every context sentence: a 10,000-character answer
against 64 contexts of 12,000 characters took 30 s. The second kept ``uint64`` NumPy columns:
right for that answer, but an ordinary claim (a dozen words, ~30 context sentences) paid a
NumPy call per word and form, ~0.5 ms an answer on RAG traffic (issue 41). The answers are the
same sets, so no signal moves (a test checks this against the direct definition on random
sets).

Ties go to the earliest context sentence everywhere (the first maximum), so the choice is
deterministic.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: Context sentences on each side that a window adds: a summary sentence often joins a
#: sentence and the next, and a pronoun's name is in the sentence before.
WINDOW = 1

#: One bit set per context sentence: bit ``i`` set when it holds the answer sentence's word ``i``.
Masks = tuple[int, ...]


def _first_max(values: Sequence[int]) -> int:
    """The position of the first largest value."""
    best = 0
    for position, value in enumerate(values):
        if value > values[best]:
            best = position
    return best


@dataclass(frozen=True, slots=True)
class SentenceCoverage:
    """One answer sentence of ``n`` words against every context sentence."""

    n: int
    #: The words each context sentence holds.
    held: Masks
    #: The same for each sentence's window (itself and its ``WINDOW`` neighbours on each side
    #: in the same context).
    windows: Masks

    def best_pair(self) -> tuple[int, int, int]:
        """``(best, second, words)``: the context sentence holding most of the answer
        sentence's words, the one whose union with it holds most, and how many ``best``
        holds (``second == best`` when no other sentence adds a word)."""
        if not self.held:
            raise ValueError("no context sentence to align with")
        counts = [h.bit_count() for h in self.held]
        best = _first_max(counts)
        with_best = self.held[best]
        second = _first_max([(h | with_best).bit_count() for h in self.held])
        return best, second, counts[best]

    def deficits(self) -> list[float]:
        """For each word: how many fewer of the sentence's other words occur around it (in
        the best window holding it) than in the best window without it, over ``n - 1``; 0
        for a word found nowhere."""
        n = self.n
        if n < 2 or not self.windows:
            return [0.0] * n
        counts = [w.bit_count() for w in self.windows]
        top = max(counts)
        if top == 0:
            return [0.0] * n
        # The best window without word i holds ``top`` words unless every window holding
        # ``top`` holds i as well (then ``top - 1``).
        in_every_top = -1
        for window, count in zip(self.windows, counts, strict=True):
            if count == top:
                in_every_top &= window
        # Each word's best window holding it: windows from the fullest down, each word taking
        # the first that holds it (one pass over each word, not one per word and window).
        around: dict[int, int] = {}
        left = (1 << n) - 1
        for count, window in sorted(
            zip(counts, self.windows, strict=True), key=lambda pair: -pair[0]
        ):  # fmt: skip
            newly = window & left
            if not newly:
                continue
            left &= ~newly
            while newly:
                low = newly & -newly
                around[low.bit_length() - 1] = count - 1
                newly ^= low
            if not left:
                break
        out = []
        for i in range(n):
            held_around = around.get(i)
            if held_around is None:  # found nowhere: a novel word, counted elsewhere
                out.append(0.0)
                continue
            best_without = top - 1 if in_every_top >> i & 1 else top
            out.append(max(0, best_without - held_around) / (n - 1))
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
        self._found = found
        self.count = len(sentence_terms)
        self._contexts = tuple(sentence_contexts)

    def coverage(self, words: Sequence[tuple[str, str]]) -> SentenceCoverage:
        """The coverage of an answer sentence given as its words' ``(lower, lemma)`` forms."""
        held = [0] * self.count
        for i, (lower, lemma) in enumerate(words):
            bit = 1 << i
            for form in (lower, lemma) if lemma != lower else (lower,):
                for sentence in self._found.get(form, ()):
                    held[sentence] |= bit
        return SentenceCoverage(len(words), tuple(held), self._windows(held))

    def _windows(self, held: list[int]) -> Masks:
        windows = list(held)
        contexts = self._contexts
        for d in range(1, WINDOW + 1):
            # sentences d apart in the same context see each other's words
            for c in range(d, self.count):
                if contexts[c] == contexts[c - d]:
                    windows[c] |= held[c - d]
                    windows[c - d] |= held[c]
        return tuple(windows)
