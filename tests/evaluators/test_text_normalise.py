"""Text normalisation: what is removed, folded or kept, and offsets back into the original."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verdictflow.evaluators.text_normalise import _needs_work, _normalise, clean, normalise
from verdictflow.evaluators.tokenize import Tokenizer


@pytest.mark.parametrize(
    "dirty",
    [
        "The c\u200bat sat on the m\u200bat.",  # zero-width space
        "The c\u200dat sat on the m\u200cat.",  # joiners
        "\ufeffThe ca\u00adt sat on the mat.",  # BOM, soft hyphen
        "The c\x00at sat on the m\x07at.",  # NUL, BEL
        "The \x1b[1;31mcat\x1b[0m sat on the m\x1b[4mat\x1b[0m.",  # ANSI colours
        "The \x1b]8;;http://x\x1b\\cat\x1b]8;;\x1b\\ sat on the mat.",  # OSC hyperlink
        "The \u202ecat\u202c sat on the mat.",  # bidirectional override
        "The ｃａｔ sat on the mat.",  # full-width letters
    ],
)
def test_invisible_characters_and_compatibility_forms_go(dirty: str) -> None:
    assert clean(dirty) == "The cat sat on the mat."


def test_separators_become_spaces_and_line_breaks_stay() -> None:
    assert clean("one\x0btwo\x0cthree\x1ffour") == "one two three four"
    assert clean("one\ttwo\nthree\r\n") == "one\ttwo\nthree\r\n"


def test_printable_ascii_is_returned_as_it_is() -> None:
    text = "The capital of France is Paris. (Q1 = 1.00)"
    result = normalise(text)
    assert result.text == text
    assert _normalise(text).text is text  # not copied (the memo may hold an equal string)
    assert not result.changed
    assert result.original_span(4, 11) == (4, 11)


def test_combining_marks_compose_with_their_letter() -> None:
    assert clean("cafe\u0301 na\u0131ve") == unicodedata.normalize("NFKC", "cafe\u0301 na\u0131ve")


def test_spans_point_into_the_original() -> None:
    original = "\x1b[1mThe\x1b[0m c\u200bat sat on the ﬁle."
    result = normalise(original)
    assert result.text == "The cat sat on the file."
    for match in re.finditer(r"\w+", result.text):
        start, end = result.original_span(*match.span())
        assert clean(original[start:end]) == match.group()
    # a span does not take in what was removed just before or after it
    assert result.original_span(0, 3) == (4, 7)


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=80))
def test_the_result_is_stable_and_its_spans_are_in_range(text: str) -> None:
    result = normalise(text)
    assert clean(result.text) == result.text  # idempotent
    assert not any(
        unicodedata.category(c) in ("Cf", "Cc") and c not in "\t\n\r" for c in result.text
    )
    for start in range(len(result.text) + 1):
        first, last = result.original_span(start, len(result.text))
        assert 0 <= first <= last <= len(text)


@given(st.text(alphabet=st.characters(max_codepoint=0x2FF), max_size=40))
def test_plain_text_is_told_apart_from_text_that_needs_work(text: str) -> None:
    """The byte check finds exactly what a search for a character outside printable ASCII,
    tab, LF and CR finds (controls, DEL and any non-ASCII letter included)."""
    assert _needs_work(text) == bool(re.search(r"[^\t\n\r\x20-\x7e]", text))
    if not _needs_work(text):
        # Plain text is not copied. Asked of the uncached function: the memo is keyed by
        # equality, so ``normalise`` may hand back an equal string another caller made first
        # (``"$".lower()`` is a new object, not the interpreter's cached "$").
        assert _normalise(text).text is text
        assert normalise(text).text == text


def test_the_tokenizer_version_names_the_normalisation() -> None:
    tokenizer = Tokenizer()
    assert "clean/1" in tokenizer.version
    assert tokenizer.tokens("c\u200bat") == tokenizer.tokens("cat") == {"cat"}
