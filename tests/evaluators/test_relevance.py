"""Relevance (spec 003): (TF-IDF cosine + Jaccard) / 2, with or without background statistics."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer, TfidfVectorizer

from tests.support.paths import SHARED_DATA
from tests.support.scorer_bytes import labelled_texts
from verdictflow import english_stop_words
from verdictflow.evaluators.relevance import (
    BackgroundStats,
    build_background_stats,
    relevance,
    tfidf_vector,
)
from verdictflow.evaluators.tokenize import Tokenizer, english_words, stop_words
from verdictflow.idf_stats import read_stats, write_stats

TOK = Tokenizer()


def score(query: str, response: str, stats: BackgroundStats | None = None):
    return relevance(query, response, TOK.tokens(query), TOK.tokens(response), stats)


def test_hand_computed_without_background() -> None:
    # tf vectors {cats, chase, mice} . {cats, eat, mice} = 2 / 3; Jaccard 2 / 4.
    result = score("cats chase mice", "cats eat mice")
    assert result.cosine == pytest.approx(2 / 3)
    assert result.jaccard == pytest.approx(0.5)
    assert result.score == pytest.approx((2 / 3 + 0.5) / 2)


def test_stop_words_are_ignored_by_the_cosine_but_not_the_jaccard() -> None:
    result = score("what is the capital", "the capital is Paris")
    assert result.cosine == pytest.approx(1 / math.sqrt(2))  # {capital} vs {capital, paris}
    assert result.jaccard == pytest.approx(3 / 5)


CORPUS = [
    "the cat sat on the mat",
    "the dog chased the cat",
    "kafka partitions keep order",
    "the cat and the dog are friends",
]


def test_weights_equal_sklearn_tfidf_fitted_on_the_background() -> None:
    stats = build_background_stats(CORPUS, min_df=1)
    reference = TfidfVectorizer(stop_words="english").fit(CORPUS)
    text = "cat chased dog cat"
    expected = reference.transform([text])
    vocabulary = reference.get_feature_names_out()
    want = {vocabulary[j]: expected[0, j] for j in expected.nonzero()[1]}
    got = tfidf_vector(text, stats)
    assert got.keys() == want.keys()
    for term, weight in want.items():
        assert got[term] == pytest.approx(weight)


def test_rare_terms_weigh_more_with_background() -> None:
    stats = build_background_stats(CORPUS, min_df=1)
    plain = score("cat kafka", "kafka")
    weighted = score("cat kafka", "kafka", stats)
    assert weighted.cosine > plain.cosine  # "kafka" (df 1) outweighs "cat" (df 3)


def test_empty_response_scores_zero() -> None:
    assert score("cats", "").score == 0.0


def test_stats_file_round_trip_and_stable_digest(tmp_path) -> None:
    stats = build_background_stats(CORPUS, min_df=1, source="test")
    path = tmp_path / "df.json.gz"
    write_stats(stats, path)
    first = path.read_bytes()
    write_stats(stats, path)
    assert path.read_bytes() == first  # gzip mtime 0: same bytes
    again = read_stats(path)
    assert again.digest == stats.digest
    assert dict(again.df) == dict(stats.df)


def test_min_df_drops_rare_terms() -> None:
    stats = build_background_stats(CORPUS, min_df=2)
    assert "kafka" not in stats.df
    assert stats.df["cat"] == 3


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"{", "not JSON"),
        (b'{"format": "other"}', "verdictflow-df/1"),
    ],
)
def test_bad_stats_are_rejected(payload: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BackgroundStats.from_json(payload)


#: Texts where a hand-written analyzer could part from scikit-learn's: case folding that
#: changes length or adds a combining mark, scripts without case, underscores, digits,
#: one-letter words, compatibility forms, stop words in capitals.
EDGE_TEXTS = [
    "The U.S. AND the UK: 42 x_y_z, a1 b 2b I'm naïve.",
    "İstanbul ΣΊΣΥΦΟΣ straße ﬁle Ǆemal ＦＵＬＬ",
    "北京是中国的首都 and 東京",
    "",
    "   \t\n",
]


def test_the_analyzer_and_stop_words_are_scikit_learns_on_real_texts() -> None:
    """``english_words`` (relevance's terms, the hashing embedder's features) is written out,
    and the stop words are read from scikit-learn's file, so that scoring never imports
    scikit-learn (verdictflow/english_stop_words.py): both must be exactly what
    ``CountVectorizer(stop_words="english")`` does, on the data's questions, answers and
    contexts."""
    assert stop_words() == ENGLISH_STOP_WORDS
    reference = CountVectorizer(stop_words="english").build_analyzer()
    texts = [*EDGE_TEXTS, *labelled_texts()]
    assert len(texts) > 1000 or not SHARED_DATA.is_dir()
    assert [english_words(t) for t in texts] == [reference(t) for t in texts]


def test_the_stop_words_are_imported_where_scikit_learns_file_is_not_as_expected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "_stop_words.py"
    other.write_text("ENGLISH_STOP_WORDS = set(load_them())\n")
    with pytest.raises(ValueError, match="no ENGLISH_STOP_WORDS"):
        english_stop_words.read_stop_words(other)
    for found in (other, tmp_path / "missing.py", None):
        monkeypatch.setattr(english_stop_words, "_source_file", lambda found=found: found)
        english_stop_words.english_stop_words.cache_clear()
        try:
            assert english_stop_words.english_stop_words() == ENGLISH_STOP_WORDS
        finally:
            english_stop_words.english_stop_words.cache_clear()
    literal = tmp_path / "literal.py"
    literal.write_text('# words\nOTHER = 1\nENGLISH_STOP_WORDS = frozenset(["a", "the"])\n')
    assert english_stop_words.read_stop_words(literal) == {"a", "the"}
