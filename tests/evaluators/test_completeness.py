"""Completeness (spec 003): keyword coverage, and the tokenizer it runs on."""

from __future__ import annotations

import itertools
import unicodedata

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.tokenize import NLTKWordTokenizer

from tests.support.paths import SHARED_DATA
from verdictflow.evaluators.completeness import _tokenizer, completeness, keywords

#: Inputs that reach every rule family of the Treebank tokenizer: quotes, contractions (both
#: lists), parentheses, double dashes, ellipses, currency, a sentence-final period, and
#: characters the two regex engines classify (non-ASCII letters, digits, spaces).
TRICKY = [
    "He said, \"I cannot go.\" 'Tis true -- isn't it?",
    "Gimme the d'ye wanna gonna lemme more'n 'twas (a) [b] {c} <d>...",
    "Costs $3.88 (roughly 3,36 euros)\nin New York.  Please buy me\ntwo of them.\nThanks.",
    "`quoted' \u201csmart\u201d \u00abguillemets\u00bb caf\u00e9"
    " na\u00efve \u0663\u0664 \u00a0nbsp",
    "e.g. U.S.A. 1.5m 10%; a/b & c@d #tag: x! y? z... -- end.",
    "",
    "   ",
]


def test_completeness_counts_query_keywords_in_the_response() -> None:
    result = completeness("What is the capital of France?", "Paris is France's capital.")
    assert result.query_keywords == ("capital", "france")
    assert result.found == ("capital", "france")
    assert result.score == 1.0
    half = completeness("capital of France and Spain", "The capital of France is Paris")
    assert half.score == pytest.approx(2 / 3)
    assert half.missing == ("spain",)


def test_completeness_without_keywords_is_one() -> None:
    result = completeness("Is it?", "No.")
    assert result.no_keywords
    assert result.score == 1.0


def test_keywords_keep_hyphenated_words_and_drop_punctuation_and_contractions() -> None:
    assert keywords("Don't the COVID-19 vaccines work?") == ["covid-19", "vaccines", "work"]


@pytest.mark.parametrize("text", TRICKY)
def test_the_fast_tokenizer_is_nltks_token_for_token(text: str) -> None:
    for variant in (text, unicodedata.normalize("NFKC", text).lower()):
        assert _tokenizer().tokenize(variant) == NLTKWordTokenizer().tokenize(variant)


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data not present")
def test_the_fast_tokenizer_is_nltks_on_real_answers_and_documents() -> None:
    """The stdlib ``re`` compilation of NLTK's patterns must not change a token on human text:
    the first rows of every JSONL data set in ``../shared/data`` (articles, summaries,
    abstracts, queries), as written and lowercased."""
    texts: list[str] = []
    for path in sorted(SHARED_DATA.glob("*/*.jsonl")):
        with path.open("rb") as rows:
            for line in itertools.islice(rows, 60):
                texts += [v for v in orjson.loads(line).values() if isinstance(v, str)]
    assert len(texts) > 500
    reference, fast = NLTKWordTokenizer(), _tokenizer()
    differ = [
        t[:80]
        for t in texts + [t.lower() for t in texts]
        if fast.tokenize(t) != reference.tokenize(t)
    ]
    assert differ == []


def test_every_treebank_rule_but_whitespace_has_required_strings() -> None:
    """A new NLTK pattern runs unguarded (correct, slower); this says when that happens."""
    t = _tokenizer()
    rules = t.starting_quotes + t.punctuation + t.ending_quotes + t.contractions
    assert [rule.pattern.pattern for rule in rules if rule.needs is None] == [r"\s+"]


#: Characters every skipped rule looks for, and the letters of the contractions.
_ALPHABET = "abcdegimnorstvwyACDNT '\"`.,:;?!*()[]{}<>-@#$%&\u2013\u2019\u201c\u00ab\u00bb\u0130\n"


@given(st.text(alphabet=_ALPHABET, max_size=60))
@settings(max_examples=400)
def test_skipping_rules_never_changes_a_token(text: str) -> None:
    assert _tokenizer().tokenize(text) == NLTKWordTokenizer().tokenize(text)


#: Pieces of ASCII text without a quote mark (the planned path): every mark a rule looks for,
#: the contraction words in both cases, digits, whitespace of several kinds.
_PIECES = [
    *".,:;?!*()[]{}<>-@#$%&_/+=", "..", "--", "...", " ", "  ", "\n", "\t", "a", "b1", "3",
    "1,000", "3.5", "u.s.", "cannot", "CanNot", "gimme", "gonna", "gotta", "lemme", "wanna",
    "Wanna", "end", "covid-19",
]  # fmt: skip


@given(st.lists(st.sampled_from(_PIECES), max_size=25).map("".join))
@settings(max_examples=600)
def test_planned_rules_never_change_a_token(text: str) -> None:
    assert _tokenizer().tokenize(text) == NLTKWordTokenizer().tokenize(text)
