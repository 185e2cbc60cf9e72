"""What a context passage offers as evidence, extracted once from its parsed ``Doc``.

A context is often longer than the answer and often repeated across requests (the same
retrieved document), so drivers build one :class:`EvidenceIndex` per distinct context text and
cache it; the index is small (values, word sequence, per-sentence lemma sets) compared with the
``Doc`` it came from, and it is all the hallucination check needs.
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from verdictflow.evaluators.anchors import DATE_LABELS, NUMBER_LABELS, TIME_LABELS
from verdictflow.evaluators.quantities import (
    DatePoint,
    Quantity,
    parse_date,
    parse_quantity,
    parse_time,
    quantity_spans,
)
from verdictflow.evaluators.tokenize import stop_words as _stop_words

Span = tuple[int, int]
#: A number as written: digit runs joined by separators ("1,000", "12.30", "12:30", "3/4");
#: in a context also with a space after the separator, as text detokenised from a tokenised
#: corpus or a PDF has it (QAGS CNN/DM's articles: "735, 000" for "735,000").
_NUMBER = re.compile(r"\d+(?:[.,:/]\d+)*")
_SPACED_NUMBER = re.compile(r"\d+(?:[.,:/] ?\d+)*")
_DIGITS = re.compile(r"\d+")
_PLUS_ONE = (1).__add__
#: The longest acronym :meth:`EvidenceIndex.find_acronym` expands.
ACRONYM_MAX_LETTERS = 6
_ACRONYM_CONNECTORS = frozenset({"of", "and", "the", "for", "&"})


@dataclass(frozen=True, slots=True)
class SentenceLemmas:
    """One sentence: its span, its lemmas and lowercased words, and its negated verbs."""

    start: int
    end: int
    terms: frozenset[str]
    negated: frozenset[str]


@dataclass(frozen=True)
class EvidenceIndex:
    """Values, words and sentences of one context passage, with character spans."""

    text: str
    quantities: tuple[tuple[Quantity, int, int], ...]
    dates: tuple[tuple[DatePoint, int, int], ...]
    times: tuple[tuple[tuple[int, int], int, int], ...]
    words: tuple[str, ...]
    word_spans: tuple[Span, ...]
    sentences: tuple[SentenceLemmas, ...]
    content_unigrams: frozenset[str]
    content_bigrams: frozenset[tuple[str, str]]
    _joined: str = field(init=False, repr=False)
    _offsets: tuple[int, ...] = field(init=False, repr=False)
    #: First position in ``quantities`` of each (percent, value rounded to n significant
    #: digits), per n, built on first use (``n = 0``: the value as stated).
    _by_value: dict[int, dict[tuple[bool, Decimal], int]] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    _written_numbers: frozenset[tuple[str, ...]] | None = field(
        init=False, repr=False, compare=False, default=None
    )

    def written_numbers(self) -> frozenset[tuple[str, ...]]:
        """Every number written in the text (:data:`_NUMBER`, :data:`_SPACED_NUMBER`) as its
        :func:`digit_runs`, built on first use: a recurring context pays for the scan once,
        not once per answer (the faithfulness signals' number checks read it)."""
        if self._written_numbers is None:
            found = frozenset(
                digit_runs(m.group())
                for pattern in (_NUMBER, _SPACED_NUMBER)
                for m in pattern.finditer(self.text)
            )
            object.__setattr__(self, "_written_numbers", found)
            return found
        return self._written_numbers

    def __post_init__(self) -> None:
        # Word i starts after a space and words 0..i-1, each with the space after it.
        starts = itertools.accumulate(map(_PLUS_ONE, map(len, self.words)), initial=1)
        object.__setattr__(self, "_joined", " " + " ".join(self.words) + " ")
        object.__setattr__(self, "_offsets", tuple(itertools.islice(starts, len(self.words))))

    def find_quantity(self, wanted: Quantity) -> Span | None:
        """Span of the first quantity that ``wanted`` matches (:meth:`Quantity.matches`).

        A lookup by value rounded to ``wanted``'s precision instead of a scan, so that checking
        every number of a long answer costs the number of distinct precisions times the
        context's quantities, not their product; the first match in order, as the scan found.
        """
        exact = self._positions(0).get((wanted.percent, wanted.value))
        rounded = (
            self._positions(wanted.significant).get((wanted.percent, wanted.value))
            if wanted.value != 0
            else None
        )
        found = [p for p in (exact, rounded) if p is not None]
        if not found:
            return None
        _, start, end = self.quantities[min(found)]
        return start, end

    def _positions(self, significant: int) -> dict[tuple[bool, Decimal], int]:
        positions = self._by_value.get(significant)
        if positions is None:
            positions = {}
            for i, (quantity, _, _) in enumerate(self.quantities):
                value = quantity.value if significant == 0 else quantity.rounded(significant)
                positions.setdefault((quantity.percent, value), i)
            self._by_value[significant] = positions
        return positions

    def find_acronym(self, letters: str) -> Span | None:
        """Character span of the first run of capitalised words whose initials spell
        ``letters`` (2-6 letters: "US" in "the United States", "SF" in "San Francisco", "NFL"
        in "National Football League"), connectors ("of", "and", "the", "for", "&") allowed
        between them. Capitalised only: a name's short form stands for a name, and lowercase
        runs match by chance ("is" in "in spring").

        A context written all in lowercase (chat logs, lowercased corpora: "in the united
        states") has no capitals to tell a name by, so there the run's words need only not be
        stop words ("us" in "the united states", never in "us some" or "used so"): without it
        every "the us" of such a conversation read as a name the context lacks (issue 43)."""
        letters = letters.lower()
        if not (2 <= len(letters) <= ACRONYM_MAX_LETTERS and letters.isalpha()):
            return None
        words, spans, text = self.words, self.word_spans, self.text
        if text.islower():
            stop = _stop_words()

            def named(position: int) -> bool:
                return words[position] not in stop
        else:

            def named(position: int) -> bool:
                return text[spans[position][0]].isupper()

        for first in range(len(words)):
            if words[first][:1] != letters[0] or not named(first):
                continue
            matched, position = 1, first + 1
            while matched < len(letters) and position < len(words):
                word = words[position]
                if word[:1] == letters[matched] and named(position):
                    matched += 1
                elif word not in _ACRONYM_CONNECTORS:
                    break
                position += 1
            if matched == len(letters):
                return spans[first][0], spans[position - 1][1]
        return None

    def find_phrase(self, words: tuple[str, ...]) -> Span | None:
        """Character span of the first occurrence of ``words`` as consecutive words."""
        if not words:
            return None
        position = self._joined.find(" " + " ".join(words) + " ")
        if position < 0:
            return None
        first = bisect_right(self._offsets, position + 1) - 1
        last = first + len(words) - 1
        return self.word_spans[first][0], self.word_spans[last][1]


#: Characters of context text an evidence record quotes at most.
EXCERPT_CHARS = 200


def context_excerpt(contexts: Sequence[EvidenceIndex], index: int, span: Span) -> dict[str, Any]:
    """The evidence record of a span of context ``index``: where it is and its text (capped)."""
    start, end = span
    return {
        "index": index,
        "start": start,
        "end": end,
        "text": contexts[index].text[start:end][:EXCERPT_CHARS],
    }


def is_content_word(token: Any) -> bool:
    """Neither punctuation, space nor a stop word (a spaCy ``Token`` or ``Lexeme``)."""
    return not (token.is_punct or token.is_space or token.is_stop)


def content_words(doc: Any) -> list[str]:
    """Lowercased words that are neither punctuation, space nor stop words, in order."""
    return [t.lower_ for t in doc if is_content_word(t)]


def digit_runs(text: str) -> tuple[str, ...]:
    """A written number as its runs of digits: "12.30" and "12:30", "£42.5m" and "42.5" agree."""
    return tuple(_DIGITS.findall(text))


def bigrams(words: Sequence[str]) -> frozenset[tuple[str, str]]:
    return frozenset(itertools.pairwise(words))


def build_evidence_index(doc: Any) -> EvidenceIndex:
    """Index a parsed context passage (NER, lemmas and sentence boundaries needed)."""
    quantities = list(quantity_spans(doc.text))
    dates, times = [], []
    for ent in doc.ents:
        if ent.label_ in NUMBER_LABELS:
            quantity = parse_quantity(ent.text)
            if quantity is not None:
                quantities.append((quantity, ent.start_char, ent.end_char))
        elif ent.label_ in DATE_LABELS:
            point = parse_date(ent.text)
            if not point.empty:
                dates.append((point, ent.start_char, ent.end_char))
        elif ent.label_ in TIME_LABELS:
            clock = parse_time(ent.text)
            if clock is not None:
                times.append((clock, ent.start_char, ent.end_char))
    tokens = [t for t in doc if not (t.is_punct or t.is_space or t.lower_ in ("'s", "’s"))]
    sentences = []
    for sent in doc.sents:
        terms = set()
        negated = set()
        for t in sent:
            terms.add(t.lower_)
            terms.add(t.lemma_.lower())
            if t.dep_ == "neg":  # the negated word is the head of the "neg" arc
                negated.add(t.head.lemma_.lower())
        sentences.append(
            SentenceLemmas(sent.start_char, sent.end_char, frozenset(terms), frozenset(negated))
        )
    content = content_words(doc)
    return EvidenceIndex(
        text=doc.text,
        quantities=tuple(quantities),
        dates=tuple(dates),
        times=tuple(times),
        words=tuple(t.lower_ for t in tokens),
        word_spans=tuple((t.idx, t.idx + len(t.text)) for t in tokens),
        sentences=tuple(sentences),
        content_unigrams=frozenset(content),
        content_bigrams=bigrams(content),
    )
