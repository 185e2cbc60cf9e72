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

``tests/evaluators/test_context_index.py`` compares it with the parsed index; the agreement of
the hallucination decision on HaluEval and QAGS is in docs/verdicts/hallucination.md.
"""

from __future__ import annotations

import re
from typing import Any

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
        tokens = [t for t in doc if not (t.is_punct or t.is_space or t.lower_ in ("'s", "’s"))]
        sentences = []
        for sent in doc.sents:
            terms: set[str] = set()
            negated: set[str] = set()
            words = list(sent)
            for i, t in enumerate(words):
                terms.add(t.lower_)
                terms |= self._candidate_lemmas(t)
                if t.norm_ != t.lower_:  # contractions: "n't" is "not", "'re" is "are"
                    terms.add(t.norm_)
                    terms |= self._word_lemmas(t.norm_)
                if t.lower_ in _NEGATIONS:
                    negated |= self._negated_heads(words, i)
            sentences.append(
                SentenceLemmas(sent.start_char, sent.end_char, frozenset(terms), frozenset(negated))
            )
        content = content_words(doc)
        return EvidenceIndex(
            text=text,
            quantities=tuple(quantity_spans(text) + _number_word_spans(doc)),
            dates=tuple(_date_spans(doc)),
            times=tuple(_time_spans(text)),
            words=tuple(t.lower_ for t in tokens),
            word_spans=tuple((t.idx, t.idx + len(t.text)) for t in tokens),
            sentences=tuple(sentences),
            content_unigrams=frozenset(content),
            content_bigrams=bigrams(content),
        )

    def _candidate_lemmas(self, token: Any) -> frozenset[str]:
        """Every lemma the rule lemmatizer gives the word as a noun, verb or adjective
        (cached by lowercased form: the rules read nothing else)."""
        key = token.lower_
        cached = self._lemmas.get(key)
        if cached is not None:
            return cached
        if not any(c.isalpha() for c in key):
            found = frozenset({key, *self._word_exceptions.get(key, ())})
        else:
            lemmas: set[str] = {key, *self._word_exceptions.get(key, ())}
            for pos, (suffixes, exceptions) in self._applicable.items():
                if key.endswith(suffixes) or key in exceptions:
                    token.pos_ = pos
                    lemmas.update(lemma.lower() for lemma in self._lemmatizer.rule_lemmatize(token))
            token.pos_ = ""
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
        return self._candidate_lemmas(doc[0]) if len(doc) == 1 else frozenset({word})

    def _negated_heads(self, words: list[Any], i: int) -> set[str]:
        heads: set[str] = set()
        if i > 0 and words[i - 1].is_alpha:
            heads |= self._candidate_lemmas(words[i - 1])
        for t in words[i + 1 : i + 4]:
            if t.is_alpha and not t.is_stop and not t.lower_.endswith("ly"):
                heads |= self._candidate_lemmas(t)
                break
        return heads


def _number_word_spans(doc: Any) -> list[tuple[Quantity, int, int]]:
    """Numbers written in words: maximal runs of number-like tokens (and scale words, hyphens,
    "a"/"an" before a scale word) with at least one alphabetic number word; and every number
    of a run that ends in a percent sign ("3-5%"), as a percentage."""
    found = []
    text = doc.text  # built from every token on each access: once, not per number
    run: list[Any] = []
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


def _is_date_core(token: Any) -> bool:
    lower = token.lower_
    if lower == "may":  # the modal far more often than the month
        return False
    return lower in _MONTH_WORDS or bool(_YEAR_TOKEN.match(lower) or _DATE_TOKEN.match(lower))


def _date_spans(doc: Any) -> list[tuple[DatePoint, int, int]]:
    """Runs of tokens around a month name, a year or an ISO / slash date, with day numbers
    and ``,``/``of``/``the`` between them, read by ``parse_date``."""
    found = []
    text = doc.text  # built from every token on each access: once, not per date
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
