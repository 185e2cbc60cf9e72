from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from verdictflow.evaluators.tokenize import Tokenizer, _words


def test_lowercases_and_splits_on_word_characters():
    assert Tokenizer().tokens("Hello, WORLD! hello_there 42x") == {
        "hello",
        "world",
        "hello_there",
        "42x",
    }


def test_empty_and_punctuation_only_give_empty_set():
    assert Tokenizer().tokens("") == frozenset()
    assert Tokenizer().tokens(" ... !?") == frozenset()


def test_nfkc_folds_compatibility_forms():
    assert Tokenizer().tokens("ﬁle ＡＢＣ") == {"file", "abc"}


def test_unicode_word_characters_are_kept():
    assert Tokenizer().tokens("Café naïve Ärger") == {"café", "naïve", "ärger"}


def test_stop_words_off_by_default_and_removable():
    default = Tokenizer()
    assert "the" in default.tokens("the cat")
    assert default.version.endswith("stop=off")
    stop = Tokenizer(remove_stopwords=True)
    assert stop.tokens("the cat is on the mat") == {"cat", "mat"}
    assert stop.version != default.version


@given(st.text(alphabet=st.characters(max_codepoint=0x7F)) | st.text())
def test_ascii_fast_path_finds_the_same_words_as_the_regex(text: str) -> None:
    """ASCII text is split by a byte translation, not by ``\\w+``: the same runs, in order."""
    assert _words(text) == re.findall(r"\w+", text)
