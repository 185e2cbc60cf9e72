"""Relation checks on the real spaCy pipeline: each kind fires on a swap and stays silent on the
faithful sentence (sentences of their own, not the probes'), and the analyzer parses only the
supporting sentence, caching it."""

from __future__ import annotations

from typing import Any

import pytest

from verdictflow.evaluators.answer_analysis import AnswerAnalyzer
from verdictflow.evaluators.relation_frames import frame
from verdictflow.evaluators.relations import Conflict, confirmed_comparisons, conflicts
from verdictflow.models.events import AnswerEvent
from verdictflow.nlp import load_pipeline


@pytest.fixture(scope="module")
def nlp() -> Any:
    return load_pipeline()


def check(nlp: Any, answer: str, support: str) -> list[Conflict]:
    answer_doc, support_doc = nlp(answer), nlp(support)
    return conflicts(frame(answer_doc[:]), frame(support_doc[:]))


def kinds(found: list[Conflict]) -> set[str]:
    return {c.signal for c in found}


@pytest.mark.parametrize(
    ("support", "faithful", "swapped", "kind"),
    [
        ("Oracle acquired Sun Microsystems in 2010.",
         "Oracle acquired Sun Microsystems.", "Sun Microsystems acquired Oracle.", "role_swaps"),
        ("The novel was written by Toni Morrison in 1987.",
         "Toni Morrison wrote the novel.", "The novel wrote Toni Morrison.", "role_swaps"),
        ("Spain lost to Italy in the semi-final on penalties.",
         "Italy beat Spain in the semi-final.", "Spain beat Italy in the semi-final.",
         "role_swaps"),
        ("The board did not renew the contract of the coach.",
         "The board did not renew the coach's contract.", "The board renewed the contract.",
         "negated_clauses"),
        ("Brazil exported 38 million tonnes, while Argentina exported 12 million tonnes.",
         "Argentina exported 12 million tonnes.", "Argentina exported 38 million tonnes.",
         "misbound_facts"),
        ("The bridge opened in 1932, and the tunnel opened in 1954.",
         "The tunnel opened in 1954.", "The tunnel opened in 1932.", "misbound_facts"),
        ("The Danube is 2,850 kilometres long, while the Rhine is 1,230 kilometres long.",
         "The Danube is longer than the Rhine.", "The Rhine is longer than the Danube.",
         "order_conflicts"),
        ("Mercury takes 88 days to orbit the Sun, Venus 225 days and Mars 687 days.",
         "Mars takes the longest.", "Mercury takes the longest.", "order_conflicts"),
        ("The museum was founded in 1753, and the gallery was founded in 1824.",
         "The museum was founded before the gallery was founded.",
         "The gallery was founded before the museum was founded.", "order_conflicts"),
    ],
)  # fmt: skip
def test_a_swap_is_seen_and_the_faithful_sentence_is_not(
    nlp: Any, support: str, faithful: str, swapped: str, kind: str
) -> None:
    assert kind in kinds(check(nlp, swapped, support)), swapped
    assert check(nlp, faithful, support) == [], faithful


@pytest.mark.parametrize(
    ("support", "answer"),
    [
        # symmetric verbs: either order states the same fact
        ("Ann met Bob in Paris in 2001.", "Bob met Ann in Paris."),
        # a value bound as the context binds it, with the subject elided in the second half
        ("Curie won the physics prize in 1903 and the chemistry prize in 1911.",
         "Curie won the chemistry prize in 1911."),
        # two values of one kind in one answer clause compare, they do not bind
        ("Sales were 5 million in 2019 and 7 million in 2020.",
         "Sales were higher in 2020 than in 2019."),
        # an ordinal in a noun phrase is not a superlative claim
        ("The first model sold 200 units in 2001, and the second sold 900 in 2003.",
         "The first model sold 200 units."),
        # one side's value lost to the tokenizer ("Teacher($1,010,000"): the subject's words
        # are in both valued parts, so the other part is not guessed to be its value (a BEGIN
        # false alarm)
        ("The Average Lifetime Earnings of a Nurse ( $ 2,016,723 ) is higher than the average "
         "lifetime earnings of a School Teacher($1,010,000 ) and an average Public Librarian "
         "( $ 912,000 ).",
         "the average lifetime earnings of a nurse is higher than the average lifetime "
         "earnings of a school teacher."),
    ],
)  # fmt: skip
def test_no_conflict_where_the_relation_holds(nlp: Any, support: str, answer: str) -> None:
    assert check(nlp, answer, support) == []


@pytest.mark.parametrize(
    ("answer", "confirmed"),
    [
        ("The Danube is longer than the Rhine.", True),
        ("The Rhine is longer than the Danube.", False),  # contradicted: a conflict instead
        ("The Danube is a long river.", False),  # no comparison
    ],
)
def test_a_comparison_the_values_bear_out_is_confirmed(
    nlp: Any, answer: str, confirmed: bool
) -> None:
    """What the faithfulness ceiling counts as covered: an inference from the values."""
    support = "The Danube is 2,850 kilometres long, while the Rhine is 1,230 kilometres long."
    found = confirmed_comparisons(frame(nlp(answer)[:]), frame(nlp(support)[:]))
    assert bool(found) is confirmed
    assert all(answer[c.start : c.end].startswith("The") for c in found)


def test_conflict_spans_point_into_the_answer(nlp: Any) -> None:
    answer = "In short, Sun Microsystems acquired Oracle."
    (found,) = check(nlp, answer, "Oracle acquired Sun Microsystems in 2010.")
    assert "acquired" in answer[found.start : found.end]
    assert "oracle" in found.detail


def test_the_analyzer_parses_each_supporting_sentence_once(nlp: Any) -> None:
    context = (
        "The weather was mild all week. Oracle acquired Sun Microsystems in 2010. "
        "Analysts expected more deals. " * 3
    )
    analyzer = AnswerAnalyzer(nlp)
    events = [
        AnswerEvent(id=str(n), answer="Sun Microsystems acquired Oracle.", contexts=[context])
        for n in range(3)
    ]
    parsed = analyzer.analyze(events)
    for item in parsed:
        (relation,) = item.relations
        assert relation.support.text == "Oracle acquired Sun Microsystems in 2010."
    assert list(analyzer._support_frames) == ["Oracle acquired Sun Microsystems in 2010."]
    # a sentence without a relation to check (no verb with roles, no value) parses nothing
    (quiet,) = analyzer.analyze([AnswerEvent(id="q", answer="Mild weather.", contexts=[context])])
    assert quiet.relations == ()


def test_a_claim_the_context_states_word_for_word_is_not_parsed_again(nlp: Any) -> None:
    """Its relations are the source's own: no check, no parse of the supporting sentence; a
    claim that differs by one word still is checked."""
    context = "The weather was mild all week. Oracle acquired  Sun Microsystems in 2010."
    analyzer = AnswerAnalyzer(nlp)
    quoted, reworded = analyzer.analyze(
        [
            AnswerEvent(id=year, answer=f"Oracle acquired Sun Microsystems in {year}.",
                        contexts=[context])
            for year in ("2010", "2011")
        ]
    )  # fmt: skip
    assert quoted.relations == ()
    assert [r.support.text for r in reworded.relations] == [
        "Oracle acquired  Sun Microsystems in 2010."
    ]
