"""The attribute ruler's matches by table lookup (``verdictflow.attribute_rules``) are the very
list spaCy's ``Matcher`` gives, so every part of speech, lemma and morphology is the model's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from verdictflow.attribute_rules import RuleMatches, UnsupportedRuleError, faster_attribute_rules
from verdictflow.evaluators.answer_analysis import COMPONENTS
from verdictflow.nlp import _import_model, import_spacy, load_pipeline

DATA = Path(__file__).parent / "data"

#: Every kind of rule the English model has: tag map, lemma exceptions, two-token patterns
#: ("gon na", "y' all", "c'm on", "let 's", "there is"), regular expressions ("ain't",
#: "nothin'"), dependency tests ("it" as subject and object, "but" as an adverb), spaces.
RULE_PROBES = [
    "We're gonna win, y'all, and I ain't kidding: c'mon, let's go!  There is nothin' left.",
    "It said it wanted it; you gave it to you and I told them I'd have had it.\n\nBut but.",
    "Those who have done it do what they did, whether or not that is what they've said.",
    "Y'all gotta see it:   the 3.5 kg box costs $40 (25% off) on 2024-03-01 at 9 a.m.\t\n ",
    "",
    "   ",
]


def _texts() -> list[str]:
    texts = list(RULE_PROBES)
    for name in ("dialogue_turns.jsonl", "relation_swaps.jsonl"):
        for line in (DATA / name).read_text().splitlines():
            texts.extend(v for v in json.loads(line).values() if isinstance(v, str) and v)
    return texts


@pytest.fixture(scope="module")
def stock() -> Any:
    """The model as shipped, spaCy's ``Matcher`` in its attribute ruler."""
    nlp = _import_model().load()
    assert not isinstance(nlp.get_pipe("attribute_ruler").match, RuleMatches)
    return nlp


def test_the_loaded_pipeline_matches_by_table() -> None:
    assert isinstance(load_pipeline(COMPONENTS).get_pipe("attribute_ruler").match, RuleMatches)


def test_the_matches_are_the_matchers_own_list(stock: Any) -> None:
    ruler = stock.get_pipe("attribute_ruler")
    fast = RuleMatches(ruler)
    texts = _texts()
    docs = list(stock.pipe(texts, disable=["attribute_ruler", "lemmatizer", "ner"]))
    longer = 0
    for text, doc in zip(texts, docs, strict=True):
        expected = ruler.match(doc)
        assert fast(doc) == expected, text
        assert fast(doc) == expected, text  # from the table this time
        longer += sum(end - start > 1 for *_, start, end in expected)
    assert longer >= 6  # the two-token rules were exercised


def test_parses_are_the_shipped_models(stock: Any) -> None:
    ours = load_pipeline()
    for text in _texts():
        got = [(t.pos_, t.tag_, t.lemma_, str(t.morph), t.dep_) for t in ours(text)]
        assert got == [(t.pos_, t.tag_, t.lemma_, str(t.morph), t.dep_) for t in stock(text)]


def test_a_pattern_it_cannot_match_leaves_spacys_matcher() -> None:
    nlp = import_spacy().blank("en")
    ruler = nlp.add_pipe("attribute_ruler")
    ruler.add([[{"LOWER": "big"}, {"LOWER": "apple", "OP": "+"}]], {"LEMMA": "nyc"})
    assert faster_attribute_rules(nlp) is False
    assert not isinstance(ruler.match, RuleMatches)
    any_token = import_spacy().blank("en").add_pipe("attribute_ruler")
    any_token.add([[{"LOWER": "big"}, {}]], {"LEMMA": "nyc"})  # ``{}``: any token
    with pytest.raises(UnsupportedRuleError):
        RuleMatches(any_token)


def test_rules_added_later_are_matched_by_spacy() -> None:
    nlp = import_spacy().blank("en")
    ruler = nlp.add_pipe("attribute_ruler")
    ruler.add([[{"LOWER": "big"}]], {"LEMMA": "large"})
    assert faster_attribute_rules(nlp) is True
    ruler.add([[{"LOWER": "apple"}]], {"LEMMA": "fruit"})
    assert [t.lemma_ for t in nlp("big apple")] == ["large", "fruit"]
