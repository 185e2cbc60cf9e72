"""Completeness (spec 003): the share of the query's keywords that the response contains.

Keywords: NLTK's Treebank word tokenizer (``NLTKWordTokenizer``, which needs no downloaded data,
unlike ``nltk.word_tokenize`` whose sentence splitter needs punkt), after NFKC and lowercasing;
tokens that are stop words (scikit-learn's English list, the same as relevance uses) or not
alphanumeric are dropped. "Alphanumeric" admits inner hyphens, so "covid-19" and "state-of-the-art"
stay one keyword each; contractions and punctuation ("n't", "'s", "?") go. A query with no
keyword scores 1.0 (the spec's default), and the verdict says so.

Speed: NLTK 3.10 runs each of the tokenizer's ~40 substitutions through its ReDoS guard (the
third-party ``regex`` engine under a wall-clock timeout), ~450 us for a 75-character answer and
its query, most of the lexical tier's time. Those guards are for caller-supplied patterns; the
Treebank patterns are fixed, and were run by the standard ``re`` engine for a decade. So the
tokenizer here (:class:`TreebankWords`) runs NLTK's ``NLTKWordTokenizer.tokenize`` rule for
rule, in its order, with NLTK's own pattern strings compiled by ``re``, and is token for token
NLTK's on the 45,111 texts of ``../shared/data`` (25 MB; ``tests/evaluators/
test_completeness.py`` keeps checking, with a Hypothesis property over the rules' characters).

Each of its ~33 substitutions is also skipped when the text cannot match it: nearly every rule
needs a literal string (a quote, a bracket, ``;@#$%&``, a period, ...), and one search for
those (a compiled alternation of the escaped strings) costs far less than the substitution's
pass. A rule is skipped only when none of its required strings is in the text as it stands at
that rule (earlier rules insert quotes and spaces), so skipping cannot change a token; a
pattern this module does not know (a new NLTK version) is always run. Measured on the
benchmark's answers: keywords of a query and its answer 142-237 us before, 46-68 us after
(``docs/benchmarks.md``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from verdictflow.evaluators import text_normalise
from verdictflow.evaluators.tokenize import stop_words

TOKENIZER_VERSION = (
    f"nltk-treebank-word:{text_normalise.VERSION}+lower:alnum(-):stop=sklearn-english"
)


def _stdlib_pattern(pattern: Any) -> re.Pattern[str]:
    """``pattern`` (an NLTK ``TimedPattern`` or a ``re.Pattern``) compiled by ``re``, with the
    flags both engines share (the ``regex`` engine adds its own version and Unicode bits)."""
    inner = getattr(pattern, "_rx", pattern)
    shared = re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE
    return re.compile(inner.pattern, inner.flags & shared)


#: For each Treebank pattern (its source text), strings of which the text must hold one for the
#: pattern to match: every alternative of the pattern starts with, or contains, one of them.
#: Patterns not listed (``\\s+``) always run.
_REQUIRED: dict[str, tuple[str, ...]] = {
    # starting quotes
    "([«“‘„]|[`]+)": ("«", "“", "‘", "„", "`"),
    r"^\"": ('"',),
    r"(``)": ("``",),
    r"([ \(\[{<])(\"|\'{2})": ('"', "''"),
    r"(?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)": ("'",),
    # punctuation
    r'([^\.])(\.)([\]\)}>"\'' "»”’ " r"]*+)\s*$": (".",),
    r"([:,])([^\d])": (":", ","),
    r"([:,])$": (":", ","),
    r"\.{2,}": ("..",),
    r"[;@#$%&]": (";", "@", "#", "$", "%", "&"),
    r"[\u2012-\u2015]": ("\u2012", "\u2013", "\u2014", "\u2015"),
    r'([^\.])(\.)([\]\)}>"\']*)\s*$': (".",),
    r"[?!]": ("?", "!"),
    r"([^'])' ": ("' ",),
    r"[*]": ("*",),
    r"[\]\[\(\)\{\}\<\>]": tuple("[](){}<>"),
    r"--": ("--",),
    # ending quotes
    "([»”’])": ("»", "”", "’"),
    r"''": ("''",),
    r'"': ('"',),
    r"([^' ])('[sS]|'[mM]|'[dD]|') ": ("'",),
    r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ": ("'",),
    # contractions, case-insensitive: the strings are looked for in the lowercased text, and
    # only when it is ASCII (IGNORECASE also folds a few non-ASCII letters onto ASCII ones)
    r"(?i)\b(can)(?#X)(not)\b": ("cannot",),
    r"(?i)\b(d)(?#X)('ye)\b": ("'",),
    r"(?i)\b(gim)(?#X)(me)\b": ("gimme",),
    r"(?i)\b(gon)(?#X)(na)\b": ("gonna",),
    r"(?i)\b(got)(?#X)(ta)\b": ("gotta",),
    r"(?i)\b(lem)(?#X)(me)\b": ("lemme",),
    r"(?i)\b(more)(?#X)('n)\b": ("'",),
    r"(?i)\b(wan)(?#X)(na)(?=\s)": ("wanna",),
    r"(?i) ('t)(?#X)(is)\b": ("'",),
    r"(?i) ('t)(?#X)(was)\b": ("'",),
}

#: A substitution: the pattern, its replacement, and a search for the strings it needs.
_Rule = tuple[re.Pattern[str], str, re.Pattern[str] | None]


def _rules(pairs: Any, replacement: str | None = None) -> tuple[_Rule, ...]:
    """NLTK's ``(pattern, replacement)`` pairs (or bare patterns with one ``replacement``)
    compiled by ``re``, each with its required strings."""
    out = []
    for item in pairs:
        rx, sub = (item, replacement) if replacement is not None else item
        compiled = _stdlib_pattern(rx)
        required = _REQUIRED.get(compiled.pattern)
        needs = None if required is None else re.compile("|".join(map(re.escape, required)))
        out.append((compiled, sub, needs))
    return tuple(out)


def _apply(rules: Sequence[_Rule], text: str, *, ignore_case: bool = False) -> str:
    """Run each rule unless the text, as it stands at that rule, holds none of its required
    strings (``ignore_case``: looked for in the lowercased text, and never skipped when the text
    is not ASCII)."""
    for pattern, sub, needs in rules:
        if (
            needs is not None
            and (not ignore_case or text.isascii())
            and needs.search(text.lower() if ignore_case else text) is None
        ):
            continue
        text = pattern.sub(sub, text)
    return text


class TreebankWords:
    """NLTK's ``NLTKWordTokenizer.tokenize`` (default arguments), rule for rule in its order,
    with its own patterns compiled by ``re`` and rules that cannot match skipped."""

    def __init__(self) -> None:
        from nltk.tokenize import NLTKWordTokenizer as T

        self.starting_quotes = _rules(T.STARTING_QUOTES)
        self.punctuation = _rules([*T.PUNCTUATION, T.PARENS_BRACKETS, T.DOUBLE_DASHES])
        self.ending_quotes = _rules(T.ENDING_QUOTES)
        self.contractions = _rules([*T.CONTRACTIONS2, *T.CONTRACTIONS3], r" \1 \2 ")

    def tokenize(self, text: str) -> list[str]:
        text = _apply(self.starting_quotes, text)
        text = _apply(self.punctuation, text)
        text = _apply(self.ending_quotes, " " + text + " ")
        return _apply(self.contractions, text, ignore_case=True).split()


@lru_cache(maxsize=1)
def _tokenizer() -> TreebankWords:
    return TreebankWords()


def keywords(text: str) -> list[str]:
    """Distinct keywords of ``text`` in first-seen order."""
    normalised = text_normalise.clean(text).lower()
    stop = stop_words()
    seen: dict[str, None] = {}
    for token in _tokenizer().tokenize(normalised):
        if token in stop or not token.replace("-", "").isalnum():
            continue
        seen.setdefault(token, None)
    return list(seen)


@dataclass(frozen=True, slots=True)
class CompletenessResult:
    score: float
    query_keywords: tuple[str, ...]
    found: tuple[str, ...]
    missing: tuple[str, ...]

    @property
    def no_keywords(self) -> bool:
        return not self.query_keywords


def completeness(query: str, response: str) -> CompletenessResult:
    """|query keywords in the response| / |query keywords|; 1.0 when the query has none."""
    query_keywords = keywords(query)
    response_keywords = set(keywords(response))
    found = tuple(k for k in query_keywords if k in response_keywords)
    missing = tuple(k for k in query_keywords if k not in response_keywords)
    score = len(found) / len(query_keywords) if query_keywords else 1.0
    return CompletenessResult(score, tuple(query_keywords), found, missing)
