"""Context evidence indexes without the neural pipeline.

A retrieved context is only ever *looked up*: does the answer's number, date, entity, claim or
term occur in it, and where. Running tok2vec, tagger, parser and NER over kilobytes of context
per answer cost nine tenths of the NLP tier's time on RAG-shaped traffic (issue 15), so this
module builds the same :class:`EvidenceIndex` from what matching needs, at a small fraction of
the cost:

- **tokens, words, content words**: the pipeline's own tokenizer (``nlp.make_doc``) and spaCy's
  lexical attributes (``is_punct``, ``is_stop``, ``like_num``), which need no model, so spans
  and words are exactly those of a full parse;
- **sentences**: spaCy's rule-based ``Sentencizer`` instead of the parser;
- **lemmas**: the pipeline's rule lemmatizer asked for every part of speech a word could have
  (noun, verb, adjective; adverbs are their own lemma but for a few exceptions) instead of the
  one the tagger would pick, and the attribute
  ruler's word exceptions ("n't" -> not, "them" -> they). A sentence's
  ``terms`` are the union, so an answer lemma found by the full parse is found here too; the
  price is rare extra matches (an answer's verb matching a context noun of the same lemma);
- **numbers**: digits by the same regex as before (``quantity_spans``), and number words
  ("twenty-five", "three million") from runs of ``like_num`` tokens, both read by
  ``parse_quantity``: the answer side's code;
- **dates and times**: runs of tokens around month names, years and ISO or slash dates, read by
  ``parse_date``; clock times by ``parse_time``;
- **negation**: a sentence's negated words are the lemmas of the auxiliary before a "not" /
  "n't" / "never" and of the first content word after it (the parser's head of the ``neg``
  arc is one of the two).

Every pass reads the tokens as :class:`Word` rows made in one go (``Doc.to_array`` of the
token ids, offsets, norms and sentence starts; a word form's flags read once per process),
not as spaCy ``Token`` objects: each ``Token`` is a Python object made afresh on every access,
and five passes over every context token made them 40 % of the NLP tier's time on RAG-shaped
traffic with rarely recurring contexts (issue 41). The index is the same, value for value.

``tests/evaluators/test_context_index.py`` compares it with the parsed index; the agreement of
the hallucination decision on HaluEval and QAGS is in docs/verdicts/hallucination.md.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from verdictflow.evaluators.evidence_index import (
    EvidenceIndex,
    SentenceLemmas,
    bigrams,
    content_words,
)
from verdictflow.evaluators.quantities import (
    DatePoint,
    Quantity,
    parse_date,
    parse_quantity,
    parse_time,
    quantity_spans,
)

#: Parts of speech the rule lemmatizer is asked for, for every context word.
LEMMA_POS = ("NOUN", "VERB", "ADJ")
#: Distinct words whose lemmas are kept (a language's working vocabulary; cleared when full).
LEMMA_CACHE_WORDS = 500_000

_NEGATIONS = frozenset({"not", "n't", "never", "nt"})
_SCALE_WORDS = frozenset(
    {"hundred", "thousand", "million", "billion", "trillion", "dozen", "dozens", "percent"}
)
_MONTH_WORDS = frozenset(
    {
        "january", "february", "march", "april", "may", "june", "july", "august",
        "september", "october", "november", "december", "jan", "feb", "mar", "apr", "jun",
        "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    }
)  # fmt: skip
_YEAR_TOKEN = re.compile(r"^(1[5-9]\d\d|20\d\d|2100)s?$")
_DAY_TOKEN = re.compile(r"^([12]?\d|3[01])(st|nd|rd|th)?$")
_DATE_TOKEN = re.compile(r"^\d{4}-\d{1,2}-\d{1,2}$|^\d{1,2}/\d{1,2}/\d{2,4}$")
_DATE_GLUE = frozenset({",", "of", "the", "-", "–"})
_CLOCK_TEXT = re.compile(
    r"\b\d{1,2}:\d{2}(?:\s*[ap]\.?m\.?)?(?![\w])|\b\d{1,2}\s*[ap]\.?m\.?(?![\w])|\bnoon\b"
    r"|\bmidnight\b|\bmidday\b",
    re.IGNORECASE,
)


class Word(NamedTuple):
    """A token's attributes as the index reads them (names as spaCy's ``Token``'s, so helpers
    shared with parsed docs, like ``content_words``, read either)."""

    i: int
    idx: int
    norm_: str
    text: str
    lower_: str
    is_punct: bool
    is_space: bool
    is_stop: bool
    is_alpha: bool
    like_num: bool


#: A word form's attributes (``Word`` from ``norm_`` on): its norm and spaCy's lexeme flags.
_Lexical = tuple[str, str, str, bool, bool, bool, bool, bool]


class ContextIndexer:
    """Builds :class:`EvidenceIndex` values from context text with the pipeline's tokenizer
    and rule lemmatizer only (no tok2vec, tagger, parser or NER)."""

    def __init__(self, nlp: Any) -> None:
        from spacy.pipeline import Sentencizer

        self._nlp = nlp
        self._lemmatizer = nlp.get_pipe("lemmatizer")
        # The attribute ruler's single-word lemma patterns ("n't" -> not, "them" -> they,
        # "'re" -> be), whatever tag they ask for (there are no tags here): running the ruler
        # itself cost a third of the indexing time, for the 70 patterns that set a lemma.
        self._word_exceptions: dict[str, set[str]] = {}
        for rule in nlp.get_pipe("attribute_ruler").patterns:
            lemma = rule["attrs"].get("LEMMA")
            for pattern in rule["patterns"]:
                if lemma and len(pattern) == 1 and "LOWER" in pattern[0]:
                    word = str(pattern[0]["LOWER"]).lower()
                    self._word_exceptions.setdefault(word, set()).add(lemma.lower())
        self._sentencizer = Sentencizer()
        self._lemmas: dict[str, frozenset[str]] = {}
        #: By (orth, norm) id: a word form's attributes, read once.
        self._lexical: dict[tuple[int, int], _Lexical] = {}
        # The rule lemmatizer returns the word itself unless one of its suffix rules or
        # exceptions for that part of speech applies: read both from the model's own tables,
        # and skip the call (~100-200 us) when neither can apply.
        lookups = self._lemmatizer.lookups
        rules = lookups.get_table("lemma_rules", {})
        exceptions = lookups.get_table("lemma_exc", {})
        self._applicable = {
            pos: (
                tuple(old for old, _ in rules.get(pos.lower(), [])),
                exceptions.get(pos.lower(), {}),
            )
            for pos in LEMMA_POS
        }

    def index(self, text: str) -> EvidenceIndex:
        doc = self._sentencizer(self._nlp.make_doc(text))
        words, starts = self._words(doc)
        tokens = [t for t in words if not (t.is_punct or t.is_space or t.lower_ in ("'s", "’s"))]
        sentences = []
        for first, last in itertools.pairwise([*starts, len(words)]):
            terms: set[str] = set()
            negated: set[str] = set()
            sentence = words[first:last]
            for i, t in enumerate(sentence):
                terms.add(t.lower_)
                terms |= self._candidate_lemmas(t.lower_, doc, t.i)
                if t.norm_ != t.lower_:  # contractions: "n't" is "not", "'re" is "are"
                    terms.add(t.norm_)
                    terms |= self._word_lemmas(t.norm_)
                if t.lower_ in _NEGATIONS:
                    negated |= self._negated_heads(sentence, i, doc)
            end = sentence[-1]
            sentences.append(
                SentenceLemmas(
                    sentence[0].idx, end.idx + len(end.text), frozenset(terms), frozenset(negated)
                )
            )
        content = content_words(words)
        return EvidenceIndex(
            text=text,
            quantities=tuple(quantity_spans(text) + _number_word_spans(words, text)),
            dates=tuple(_date_spans(words, text)),
            times=tuple(_time_spans(text)),
            words=tuple(t.lower_ for t in tokens),
            word_spans=tuple((t.idx, t.idx + len(t.text)) for t in tokens),
            sentences=tuple(sentences),
            content_unigrams=frozenset(content),
            content_bigrams=bigrams(content),
        )

    def _words(self, doc: Any) -> tuple[list[Word], list[int]]:
        """The doc's tokens as :class:`Word` rows, from one ``to_array`` call, and where its
        sentences start (as ``Doc.sents`` has them: the first at 0, the others where the
        sentencizer marked a start)."""
        from spacy.attrs import IDX, NORM, ORTH, SENT_START

        rows = doc.to_array([ORTH, IDX, NORM, SENT_START]).tolist() if len(doc) else []
        new = tuple.__new__  # a NamedTuple's own __new__ is a Python call per token
        words = []
        for i, (orth, idx, norm, _) in enumerate(rows):
            lexical = self._lexical.get((orth, norm))
            if lexical is None:
                lexical = self._lexical[orth, norm] = _lexical(doc.vocab, orth, norm)
            words.append(new(Word, (i, idx, *lexical)))
        starts = [0, *(i for i, row in enumerate(rows) if i and row[3] == 1)] if rows else []
        if len(self._lexical) >= LEMMA_CACHE_WORDS:
            self._lexical.clear()
        return words, starts

    def _candidate_lemmas(self, key: str, doc: Any, i: int) -> frozenset[str]:
        """Every lemma the rule lemmatizer gives the word ``key`` (token ``i`` of ``doc``,
        lowercased) as a noun, verb or adjective (cached by that form: the rules read nothing
        else; the spaCy token they read is made only for a new form)."""
        cached = self._lemmas.get(key)
        if cached is not None:
            return cached
        if not any(c.isalpha() for c in key):
            found = frozenset({key, *self._word_exceptions.get(key, ())})
        else:
            lemmas: set[str] = {key, *self._word_exceptions.get(key, ())}
            spacy_token = None
            for pos, (suffixes, exceptions) in self._applicable.items():
                if key.endswith(suffixes) or key in exceptions:
                    spacy_token = spacy_token or doc[i]
                    spacy_token.pos_ = pos
                    lemmas.update(
                        lemma.lower() for lemma in self._lemmatizer.rule_lemmatize(spacy_token)
                    )
            if spacy_token is not None:
                spacy_token.pos_ = ""
            found = frozenset(lemmas)
        if len(self._lemmas) >= LEMMA_CACHE_WORDS:
            self._lemmas.clear()
        self._lemmas[key] = found
        return found

    def _word_lemmas(self, word: str) -> frozenset[str]:
        cached = self._lemmas.get(word)
        if cached is not None:
            return cached
        doc = self._nlp.make_doc(word)
        return self._candidate_lemmas(doc[0].lower_, doc, 0) if len(doc) == 1 else frozenset({word})

    def _negated_heads(self, words: Sequence[Word], i: int, doc: Any) -> set[str]:
        heads: set[str] = set()
        if i > 0 and words[i - 1].is_alpha:
            before = words[i - 1]
            heads |= self._candidate_lemmas(before.lower_, doc, before.i)
        for t in words[i + 1 : i + 4]:
            if t.is_alpha and not t.is_stop and not t.lower_.endswith("ly"):
                heads |= self._candidate_lemmas(t.lower_, doc, t.i)
                break
        return heads


def _lexical(vocab: Any, orth: int, norm: int) -> _Lexical:
    lexeme = vocab[orth]
    return (
        vocab.strings[norm],
        lexeme.orth_,
        lexeme.lower_,
        lexeme.is_punct,
        lexeme.is_space,
        lexeme.is_stop,
        lexeme.is_alpha,
        lexeme.like_num,
    )


def _number_word_spans(doc: Sequence[Word], text: str) -> list[tuple[Quantity, int, int]]:
    """Numbers written in words: maximal runs of number-like tokens (and scale words, hyphens,
    "a"/"an" before a scale word) with at least one alphabetic number word; and every number
    of a run that ends in a percent sign ("3-5%"), as a percentage."""
    found = []
    run: list[Word] = []
    for t in [*doc, None]:
        if t is not None and (
            t.like_num
            or t.lower_ == "half"
            or t.lower_ in _SCALE_WORDS
            or (run and t.text in ("-", "%"))
            or (
                t.lower_ in ("a", "an")
                and t.i + 1 < len(doc)
                and doc[t.i + 1].lower_ in _SCALE_WORDS
            )
        ):
            run.append(t)
            continue
        if run and any(r.is_alpha and (r.like_num or r.lower_ == "half") for r in run):
            start, end = run[0].idx, run[-1].idx + len(run[-1].text)
            quantity = parse_quantity(text[start:end])
            if quantity is not None:
                found.append((quantity, start, end))
        if any(r.text == "%" or r.lower_ == "percent" for r in run):  # "3-5%": 3 % and 5 %
            for r in run:
                if r.like_num and not r.is_alpha:
                    quantity = parse_quantity(r.text + "%")
                    if quantity is not None:
                        found.append((quantity, r.idx, r.idx + len(r.text)))
        run = []
    return found


def _is_date_core(token: Word) -> bool:
    lower = token.lower_
    if lower == "may":  # the modal far more often than the month
        return False
    return lower in _MONTH_WORDS or bool(_YEAR_TOKEN.match(lower) or _DATE_TOKEN.match(lower))


def _date_spans(doc: Sequence[Word], text: str) -> list[tuple[DatePoint, int, int]]:
    """Runs of tokens around a month name, a year or an ISO / slash date, with day numbers
    and ``,``/``of``/``the`` between them, read by ``parse_date``."""
    found = []
    n = len(doc)
    i = 0
    while i < n:
        t = doc[i]
        month_may = t.lower_ == "may" and (
            (i + 1 < n and doc[i + 1].like_num) or (i > 0 and doc[i - 1].like_num)
        )
        if not (_is_date_core(t) or month_may):
            i += 1
            continue
        start = i
        while start > 0 and (
            _DAY_TOKEN.match(doc[start - 1].lower_) or doc[start - 1].lower_ in ("the", "of")
        ):
            start -= 1
        end = i + 1
        while end < n and (
            _is_date_core(doc[end])
            or _DAY_TOKEN.match(doc[end].lower_)
            or (doc[end].lower_ in _DATE_GLUE and end + 1 < n and (
                _is_date_core(doc[end + 1]) or _DAY_TOKEN.match(doc[end + 1].lower_)
            ))
        ):  # fmt: skip
            end += 1
        first, last = doc[start], doc[end - 1]
        s, e = first.idx, last.idx + len(last.text)
        point = parse_date(text[s:e])
        if not point.empty:
            found.append((point, s, e))
        i = end
    return found


def _time_spans(text: str) -> list[tuple[tuple[int, int], int, int]]:
    found = []
    for match in _CLOCK_TEXT.finditer(text):
        clock = parse_time(match.group(0))
        if clock is not None:
            found.append((clock, match.start(), match.end()))
    return found
