"""A parsed text reduced to what the judges read: tokens with lemmas, sentences, entities, chunks.

Why a copy of spaCy's ``Doc`` and not the ``Doc`` itself: the judges are pure functions over
plain frozen data, so tests can build inputs by hand, a verdict never depends on spaCy objects'
identity, and the same values drive the stream agent and offline jobs. :func:`from_doc` is the
one place that reads spaCy attributes.

Matching key of a token (``key``): numbers are normalised (``1,000`` -> ``1000``, ``two`` ->
``2``), every other word is its lower-cased lemma. A summary token is *entailed* by the article
when its key or its lower-cased form occurs among the article's keys or forms; lemma matching
makes ``scored``/``scores``/``score`` one word, form matching covers lemmatiser slips on
lower-cased text (SummEval has systems that lower-case everything).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

#: Entity labels whose words are *anchors*: a claim that names one the article lacks is made up.
ANCHOR_LABELS = frozenset(
    {
        "PERSON",
        "ORG",
        "GPE",
        "LOC",
        "NORP",
        "FAC",
        "EVENT",
        "WORK_OF_ART",
        "LAW",
        "PRODUCT",
        "CARDINAL",
        "ORDINAL",
        "MONEY",
        "PERCENT",
        "QUANTITY",
        "DATE",
        "TIME",
    }
)
_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
}
_NUMERIC = re.compile(r"^[\d.,]*\d[\d.,]*(st|nd|rd|th|s|m|bn|k|%)?$")


def number_key(lower: str) -> str | None:
    """Canonical form of a number word or numeral, or None when ``lower`` is not one."""
    if lower in _NUMBER_WORDS:
        return _NUMBER_WORDS[lower]
    if _NUMERIC.match(lower):
        return lower.replace(",", "")
    return None


@dataclass(frozen=True, slots=True)
class Tok:
    """One token: its surface form, matching key, and the flags the judges need."""

    text: str
    lower: str
    key: str
    idx: int  # character offset in the text
    sent: int  # sentence index
    is_content: bool  # a word or number that is not a stop word
    is_word: bool  # not punctuation or space
    is_num: bool
    ent: str = ""  # entity label, "" outside entities
    pos: str = ""
    dep: str = ""
    head: int = -1  # index of the syntactic head token in the same Parsed


@dataclass(frozen=True, slots=True)
class Span:
    """A token range ``[start, end)`` with its text and a label (entity type or ``CHUNK``)."""

    start: int
    end: int
    text: str
    label: str


@dataclass(frozen=True)
class Parsed:
    """A text as the judges see it."""

    text: str
    tokens: tuple[Tok, ...]
    sentences: tuple[Span, ...]  # label "SENT"
    entities: tuple[Span, ...]
    chunks: tuple[Span, ...]  # noun chunks, label "CHUNK"
    keys: frozenset[str] = field(init=False)  # keys and lower forms of content tokens

    def __post_init__(self) -> None:
        found: set[str] = set()
        for t in self.tokens:
            if t.is_content:
                found.add(t.key)
                found.add(t.lower)
        object.__setattr__(self, "keys", frozenset(found))

    def content(self, start: int = 0, end: int | None = None) -> list[Tok]:
        """Content tokens in ``[start, end)``."""
        return [t for t in self.tokens[start:end] if t.is_content]

    def content_keys(self, start: int = 0, end: int | None = None) -> frozenset[str]:
        return frozenset(t.key for t in self.tokens[start:end] if t.is_content)

    def sentence_keys(self) -> list[frozenset[str]]:
        return [self.content_keys(s.start, s.end) for s in self.sentences]

    def word_count(self, start: int = 0, end: int | None = None) -> int:
        return sum(1 for t in self.tokens[start:end] if t.is_word)

    def span_text(self, start: int, end: int) -> str:
        if start >= end:
            return ""
        first, last = self.tokens[start], self.tokens[end - 1]
        return self.text[first.idx : last.idx + len(last.text)]


def entails(tok: Tok, keys: frozenset[str]) -> bool:
    """Whether a token's meaning-bearing form occurs in ``keys`` (lemma, form, or number)."""
    return tok.key in keys or tok.lower in keys


def from_doc(doc: Any) -> Parsed:
    """Copy what the judges use out of a spaCy ``Doc`` (tagger, lemmatizer, parser, NER)."""
    tokens = []
    sent_of: dict[int, int] = {}
    sentences = []
    for si, sent in enumerate(doc.sents):
        sentences.append(Span(sent.start, sent.end, sent.text, "SENT"))
        for i in range(sent.start, sent.end):
            sent_of[i] = si
    for t in doc:
        lower = t.lower_
        num = number_key(lower) if (t.like_num or lower in _NUMBER_WORDS) else None
        is_word = not (t.is_punct or t.is_space)
        lemma = (t.lemma_ or lower).lower()
        is_num = num is not None
        content = is_word and (is_num or (t.is_alpha and not t.is_stop and len(lower) > 1))
        tokens.append(
            Tok(
                text=t.text,
                lower=lower,
                key=num if num is not None else lemma,
                idx=t.idx,
                sent=sent_of.get(t.i, 0),
                is_content=content,
                is_word=is_word,
                is_num=is_num,
                ent=t.ent_type_,
                pos=t.pos_,
                dep=t.dep_,
                head=t.head.i,
            )
        )
    entities = tuple(Span(e.start, e.end, e.text, e.label_) for e in doc.ents)
    chunks = tuple(Span(c.start, c.end, c.text, "CHUNK") for c in doc.noun_chunks)
    return Parsed(doc.text, tuple(tokens), tuple(sentences), entities, chunks)


def parse_all(nlp: Any, texts: Iterable[str], batch_size: int = 32) -> list[Parsed]:
    """Parse ``texts`` with ``nlp.pipe`` (batched) into :class:`Parsed` values, in order."""
    return [from_doc(doc) for doc in nlp.pipe(texts, batch_size=batch_size)]
