"""Context evidence indexes without the neural pipeline.

A retrieved context is only ever *looked up*: does the answer's number, date, entity, claim or
term occur in it, and where. Running tok2vec, tagger, parser and NER over kilobytes of context
per answer cost nine tenths of the NLP tier's time on RAG-shaped traffic (issue 15), so this
module builds the same :class:`EvidenceIndex` from what matching needs, at a small fraction of
the cost:

- **tokens, words, content words**: the pipeline's own tokenizer, read chunk by chunk with each
  chunk's tokens kept (:mod:`~verdictflow.evaluators.chunk_tokens`: the same tokens as
  ``nlp.make_doc``), and spaCy's lexical attributes (``is_punct``, ``is_stop``, ``like_num``),
  which need no model, so spans and words are exactly those of a full parse;
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

Every pass reads the tokens as :class:`Form` values, one per word form and shared by its
tokens, and character offsets, made in one go (``Doc.to_array`` of the token ids, offsets and
norms; sentence starts by the ``Sentencizer``'s rule over those forms), not as spaCy ``Token``
objects: each ``Token`` is a Python object
made afresh on every access, and five passes over every context token made them 40 % of the
NLP tier's time on RAG-shaped traffic with rarely recurring contexts (issue 41). The index is
the same, value for value.

``tests/evaluators/test_context_index.py`` compares it with the parsed index; the agreement of
the hallucination decision on HaluEval and QAGS is in docs/verdicts/hallucination.md.
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from verdictflow.evaluators.chunk_tokens import ChunkMemo, ChunkTokens
from verdictflow.evaluators.evidence_index import (
    EvidenceIndex,
    SentenceLemmas,
    bigrams,
    is_content_word,
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


class Form(NamedTuple):
    """A word form's attributes as the index reads them, made once per form and shared by its
    tokens (names as spaCy's ``Token``'s, so helpers shared with parsed docs, like
    ``content_words``, read either); a token is its form and its offset in the text."""

    norm_: str
    text: str
    lower_: str
    is_punct: bool
    is_space: bool
    is_stop: bool
    is_alpha: bool
    like_num: bool
    #: A month name (not "may"), a year, or an ISO / slash date: what a date span is built
    #: around (:func:`_date_spans`), decided once per form.
    date_core: bool
    #: What a token of this form adds to its sentence's terms: every lemma the rule
    #: lemmatizer gives its word, and for a contraction ("n't", "'re") its norm and the norm's
    #: lemmas. Read once per form, so a sentence's terms are one union of these, not a Python
    #: step per context token (with the flags below: 0.62 -> 0.55 ms a context whose chunks
    #: are all known, issue 41).
    terms: frozenset[str]
    #: "not", "n't", "never": the negation a sentence's negated words are read around.
    negation: bool
    #: A number word, "half", "%" or "percent": a text without one has no number-word span
    #: (:func:`_number_word_spans`).
    number_hint: bool
    #: Kept as an index word (not punctuation, whitespace or a possessive "'s").
    word: bool
    #: A content word (not punctuation, whitespace or a stop word: ``content_words``).
    content: bool


_TERMS = operator.attrgetter("terms")
_NUMBER_HINT = operator.attrgetter("number_hint")
_NO_TERMS: frozenset[str] = frozenset()


class ContextIndexer:
    """Builds :class:`EvidenceIndex` values from context text with the pipeline's tokenizer
    and rule lemmatizer only (no tok2vec, tagger, parser or NER)."""

    def __init__(
        self,
        nlp: Any,
        lemmas: dict[str, frozenset[str]] | None = None,
        forms: dict[tuple[int, int], Form] | None = None,
        chunks: ChunkMemo[Form] | None = None,
    ) -> None:
        """``lemmas``, ``forms`` and ``chunks``: caches to share with earlier indexers
        (strings by word, by vocabulary hash and by chunk, the same for every load of one
        model), so that an indexer made per batch does not start cold and does not keep a
        pipeline alive after its batch."""
        from spacy.pipeline import Sentencizer

        self.nlp = nlp
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
        # Sentence-final characters of spaCy's rule-based sentencizer, whose rule
        # (:meth:`_sentence_starts`) is applied to the token arrays here: the pipe itself made
        # a ``Token`` object per token, a fifth of the indexing time.
        self._sentence_ends = frozenset(Sentencizer().punct_chars)
        self._lemmas: dict[str, frozenset[str]] = {} if lemmas is None else lemmas
        #: By (orth, norm) id: a word form's attributes, read once.
        self._forms: dict[tuple[int, int], Form] = {} if forms is None else forms
        #: Context text by its whitespace-separated chunks, each read once (spaCy's own cache
        #: stops at a text's first tokenizer exception): the same tokens.
        memo = chunks if chunks is not None else ChunkMemo[Form]()
        self._chunks = ChunkTokens(nlp.tokenizer, self._forms_of, memo)
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
        chunked = self._chunks.tokens(text)
        if chunked is None:
            forms, offsets, starts = self._tokens(self.nlp.make_doc(text))
        else:
            forms, offsets = chunked
            starts = self._sentence_starts(forms) if forms else []
        kept = [
            (f.lower_, (start, start + len(f.text)))
            for f, start in zip(forms, offsets, strict=True)
            if f.word
        ]
        negations = [i for i, f in enumerate(forms) if f.negation]
        sentences = []
        for first, last in itertools.pairwise([*starts, len(forms)]):
            terms = _NO_TERMS.union(*map(_TERMS, forms[first:last]))
            negated: set[str] = set()
            for i in negations:
                if first <= i < last:
                    negated |= self._negated_heads(forms, first, last, i)
            end = offsets[last - 1] + len(forms[last - 1].text)
            sentences.append(SentenceLemmas(offsets[first], end, terms, frozenset(negated)))
        content = [f.lower_ for f in forms if f.content]
        return EvidenceIndex(
            text=text,
            quantities=tuple(quantity_spans(text) + _number_word_spans(forms, offsets, text)),
            dates=tuple(_date_spans(forms, offsets, text)),
            times=tuple(_time_spans(text)),
            words=tuple(word for word, _ in kept),
            word_spans=tuple(span for _, span in kept),
            sentences=tuple(sentences),
            content_unigrams=frozenset(content),
            content_bigrams=bigrams(content),
        )

    def _tokens(self, doc: Any) -> tuple[list[Form], list[int], list[int]]:
        """The doc's tokens as their forms and character offsets, and where its sentences
        start (:meth:`_sentence_starts`)."""
        if not len(doc):
            return [], [], []
        from spacy.attrs import IDX

        forms = self._forms_of(doc)
        return forms, doc.to_array(IDX).tolist(), self._sentence_starts(forms)

    def _forms_of(self, doc: Any) -> list[Form]:
        """The doc's tokens as their forms, from one ``to_array`` call."""
        from spacy.attrs import NORM, ORTH

        if not len(doc):
            return []
        # One column at a time: a column's tolist() is ~70x faster than the 2-D array's.
        orths, norms = (column.tolist() for column in doc.to_array([ORTH, NORM]).T)
        if len(self._forms) >= LEMMA_CACHE_WORDS:
            self._forms.clear()
        known = self._forms
        forms = []
        for key in zip(orths, norms, strict=True):
            form = known.get(key)
            if form is None:
                form = known[key] = self._form(doc.vocab, *key)
            forms.append(form)
        return forms

    def _form(self, vocab: Any, orth: int, norm: int) -> Form:
        lexeme = vocab[orth]
        norm_, lower = vocab.strings[norm], lexeme.lower_
        terms = self._candidate_lemmas(lower, lexeme.orth_)
        if norm_ != lower:  # contractions: "n't" is "not", "'re" is "are"
            terms = terms | {norm_} | self._word_lemmas(norm_)
        punct, space, alpha, like_num = (
            lexeme.is_punct, lexeme.is_space, lexeme.is_alpha, lexeme.like_num
        )  # fmt: skip
        spelled = _is_spelled_number(alpha, like_num, lower)
        return Form(
            norm_,
            lexeme.orth_,
            lower,
            punct,
            space,
            lexeme.is_stop,
            alpha,
            like_num,
            _is_date_core(lower),
            terms,
            lower in _NEGATIONS,
            spelled or lexeme.orth_ == "%" or lower == "percent",
            not (punct or space or lower in ("'s", "’s")),
            is_content_word(lexeme),
        )

    def _sentence_starts(self, forms: Sequence[Form]) -> list[int]:
        """Where sentences start, by spaCy's ``Sentencizer`` rule (``Doc.sents`` as that pipe
        would make them): the first token, and each token that is not punctuation after a
        sentence-final character ("." "!" "?" ...) since the last start."""
        ends = self._sentence_ends
        starts = [0]
        seen_end = False
        for i, form in enumerate(forms):
            if form.text in ends:
                seen_end = True
            elif seen_end and not form.is_punct:
                starts.append(i)
                seen_end = False
        return starts

    def _candidate_lemmas(self, key: str, word: str) -> frozenset[str]:
        """Every lemma the rule lemmatizer gives ``word`` (``key`` lowercased) as a noun, verb
        or adjective (cached by that form: the rules read nothing but the word's text; the
        spaCy token they read is made only for a new form)."""
        cached = self._lemmas.get(key)
        if cached is not None:
            return cached
        if not any(c.isalpha() for c in key):
            found = frozenset({key, *self._word_exceptions.get(key, ())})
        else:
            from spacy.tokens import Doc

            lemmas: set[str] = {key, *self._word_exceptions.get(key, ())}
            spacy_token = None
            for pos, (suffixes, exceptions) in self._applicable.items():
                if key.endswith(suffixes) or key in exceptions:
                    spacy_token = spacy_token or Doc(self.nlp.vocab, words=[word])[0]
                    spacy_token.pos_ = pos
                    lemmas.update(
                        lemma.lower() for lemma in self._lemmatizer.rule_lemmatize(spacy_token)
                    )
            found = frozenset(lemmas)
        if len(self._lemmas) >= LEMMA_CACHE_WORDS:
            self._lemmas.clear()
        self._lemmas[key] = found
        return found

    def _word_lemmas(self, word: str) -> frozenset[str]:
        cached = self._lemmas.get(word)
        if cached is not None:
            return cached
        doc = self.nlp.make_doc(word)
        if len(doc) != 1:
            return frozenset({word})
        return self._candidate_lemmas(doc[0].lower_, doc[0].text)

    def _negated_heads(self, forms: Sequence[Form], first: int, last: int, i: int) -> set[str]:
        """Lemmas of the word before a negation at ``i`` and of the first content word after
        it, within the sentence ``forms[first:last]``."""
        heads: set[str] = set()
        if i > first and forms[i - 1].is_alpha:
            heads |= self._candidate_lemmas(forms[i - 1].lower_, forms[i - 1].text)
        for j in range(i + 1, min(i + 4, last)):
            f = forms[j]
            if f.is_alpha and not f.is_stop and not f.lower_.endswith("ly"):
                heads |= self._candidate_lemmas(f.lower_, f.text)
                break
        return heads


def _spelled_number(form: Form) -> bool:
    """A number written as a word ("three", "half"): what makes a run a number-word span."""
    return _is_spelled_number(form.is_alpha, form.like_num, form.lower_)


def _is_spelled_number(alpha: bool, like_num: bool, lower: str) -> bool:
    return alpha and (like_num or lower == "half")


def _number_word_spans(
    forms: Sequence[Form], offsets: Sequence[int], text: str
) -> list[tuple[Quantity, int, int]]:
    """Numbers written in words: maximal runs of number-like tokens (and scale words, hyphens,
    "a"/"an" before a scale word) with at least one alphabetic number word; and every number
    of a run that ends in a percent sign ("3-5%"), as a percentage."""
    found: list[tuple[Quantity, int, int]] = []
    if not any(map(_NUMBER_HINT, forms)):
        return found  # every run found below has one of these
    n = len(forms)
    run: list[int] = []
    for j in range(n + 1):
        t = forms[j] if j < n else None
        if t is not None and (
            t.like_num
            or t.lower_ == "half"
            or t.lower_ in _SCALE_WORDS
            or (run and t.text in ("-", "%"))
            or (t.lower_ in ("a", "an") and j + 1 < n and forms[j + 1].lower_ in _SCALE_WORDS)
        ):
            run.append(j)
            continue
        if not run:  # most tokens: nothing to close
            continue
        if any(_spelled_number(forms[r]) for r in run):
            start, end = offsets[run[0]], offsets[run[-1]] + len(forms[run[-1]].text)
            quantity = parse_quantity(text[start:end])
            if quantity is not None:
                found.append((quantity, start, end))
        if any(forms[r].text == "%" or forms[r].lower_ == "percent" for r in run):  # "3-5%"
            for r in run:
                if forms[r].like_num and not forms[r].is_alpha:
                    quantity = parse_quantity(forms[r].text + "%")
                    if quantity is not None:
                        found.append((quantity, offsets[r], offsets[r] + len(forms[r].text)))
        run = []
    return found


def _is_date_core(lower: str) -> bool:
    if lower == "may":  # the modal far more often than the month
        return False
    return lower in _MONTH_WORDS or bool(_YEAR_TOKEN.match(lower) or _DATE_TOKEN.match(lower))


def _date_spans(
    forms: Sequence[Form], offsets: Sequence[int], text: str
) -> list[tuple[DatePoint, int, int]]:
    """Runs of tokens around a month name, a year or an ISO / slash date, with day numbers
    and ``,``/``of``/``the`` between them, read by ``parse_date``."""
    found: list[tuple[DatePoint, int, int]] = []
    n = len(forms)
    end = 0  # where the last span ended: a candidate inside it was read with it
    for i in [i for i, t in enumerate(forms) if t.date_core or t.lower_ == "may"]:
        if i < end:
            continue
        month_may = forms[i].lower_ == "may" and (
            (i + 1 < n and forms[i + 1].like_num) or (i > 0 and forms[i - 1].like_num)
        )
        if not (forms[i].date_core or month_may):
            continue
        start = i
        while start > 0 and (
            _DAY_TOKEN.match(forms[start - 1].lower_) or forms[start - 1].lower_ in ("the", "of")
        ):
            start -= 1
        end = i + 1
        while end < n and (
            forms[end].date_core
            or _DAY_TOKEN.match(forms[end].lower_)
            or (forms[end].lower_ in _DATE_GLUE and end + 1 < n and (
                forms[end + 1].date_core or _DAY_TOKEN.match(forms[end + 1].lower_)
            ))
        ):  # fmt: skip
            end += 1
        s, e = offsets[start], offsets[end - 1] + len(forms[end - 1].text)
        point = parse_date(text[s:e])
        if not point.empty:
            found.append((point, s, e))
    return found


def _time_spans(text: str) -> list[tuple[tuple[int, int], int, int]]:
    found = []
    for match in _CLOCK_TEXT.finditer(text):
        clock = parse_time(match.group(0))
        if clock is not None:
            found.append((clock, match.start(), match.end()))
    return found
