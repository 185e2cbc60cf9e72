"""Hallucination anchors, hedging filter, matching and verdicts, on the real spaCy pipeline."""

from __future__ import annotations

import pytest

from verdictflow.evaluators.answer_quality_verdicts import (
    score_completeness,
    score_hallucination,
    score_relevance,
)
from verdictflow.evaluators.evidence_index import EvidenceIndex
from verdictflow.evaluators.hallucination import drift_overlap
from verdictflow.evaluators.policy import Policy
from verdictflow.models.events import AnswerEvent
from verdictflow.scoring_setup import Scoring, load_scoring


@pytest.fixture(scope="module")
def scoring() -> Scoring:
    return load_scoring(Policy())


def verdict(scoring: Scoring, answer: str, contexts: list[str], query: str = "q"):
    event = AnswerEvent(id="a", query=query, answer=answer, contexts=contexts)
    (parsed,) = scoring.analyzer.analyze([event])
    return score_hallucination(event, parsed, scoring.ctx)


def anchors_of(v) -> dict[str, str]:
    return {a["text"]: a["support"] for a in v.evidence["anchors"]}


def test_numbers_match_as_values_with_offsets_in_answer_and_context(scoring) -> None:
    answer = "Apple hired 1,200 engineers."
    context = "Last year Apple hired twelve hundred engineers, or 1.2 thousand."
    v = verdict(scoring, answer, [context])
    number = next(a for a in v.evidence["anchors"] if a["kind"] == "number")
    assert number["support"] == "supported"
    assert answer[number["start"] : number["end"]] == number["text"] == "1,200"
    where = number["context"]
    assert context[where["start"] : where["end"]] == where["text"] == "1.2 thousand"


def test_billion_matches_digits_and_wrong_number_is_unsupported(scoring) -> None:
    ctx = ["The company reported revenue of 3,200,000,000 dollars in 2020."]
    good = verdict(scoring, "The company reported revenue of $3.2 billion in 2020.", ctx)
    bad = verdict(scoring, "The company reported revenue of $4.5 billion in 2020.", ctx)
    assert anchors_of(good)["$3.2 billion"] == "supported"
    assert anchors_of(bad)["$4.5 billion"] == "unsupported"
    assert bad.score > good.score


def test_dates_are_parsed(scoring) -> None:
    v = verdict(scoring, "It opened on March 3, 2021.", ["The store opened on 3 March 2021."])
    assert anchors_of(v)["March 3, 2021"] == "supported"
    v = verdict(scoring, "It opened on April 3, 2021.", ["The store opened on 3 March 2021."])
    assert anchors_of(v)["April 3, 2021"] == "unsupported"


def test_hedged_claims_are_filtered_with_their_cue(scoring) -> None:
    ctx = ["Apple sells phones."]
    v = verdict(scoring, "Apple might buy Netflix. Apple sells phones.", ctx)
    assert [h["cue"] for h in v.evidence["hedged"]] == ["modal 'might'"]
    assert "hedged_claims_filtered" in [r.code for r in v.reasons]
    assert not any(a["kind"] == "claim" and "Netflix" in a["text"] for a in v.evidence["anchors"])
    v = verdict(scoring, "Apple probably acquired Netflix.", ctx)
    assert v.evidence["hedged"][0]["cue"] == "adverb 'probably'"
    v = verdict(scoring, "Analysts think Apple acquired Netflix.", ctx)
    assert v.evidence["hedged"][0]["cue"] == "under 'think'"


def test_assertive_claim_matched_on_lemmas(scoring) -> None:
    v = verdict(scoring, "The committee approved the budget.", ["The committee approves budgets."])
    claims = [a for a in v.evidence["anchors"] if a["kind"] == "claim"]
    assert claims
    assert claims[0]["support"] == "supported"


def test_negated_claim_is_not_supported_by_the_positive(scoring) -> None:
    v = verdict(
        scoring, "The committee did not approve the budget.", ["The committee approved the budget."]
    )
    claims = [a for a in v.evidence["anchors"] if a["kind"] == "claim"]
    assert claims
    assert claims[0]["support"] != "supported"


def test_drift_gate_penalises_off_topic_answers(scoring) -> None:
    v = verdict(
        scoring,
        "Paris hosts the Louvre museum and beautiful gardens everywhere.",
        ["Paris hosts the Olympic games in 2024."],
    )
    assert v.evidence["drift_overlap"] >= 0.2
    assert v.evidence["drift_penalty"] == 0.0
    v = verdict(
        scoring,
        "Bananas contain potassium, fibre and vitamin B6 in generous amounts.",
        ["Paris hosted the Olympic games."],
    )
    assert v.evidence["drift_overlap"] < 0.2
    assert v.evidence["drift_penalty"] == 0.2
    assert "topic_drift" in [r.code for r in v.reasons]
    assert v.score == max(v.evidence["claim_error"], 0.2)


def test_drift_overlap_is_one_for_an_answer_without_content_words() -> None:
    assert drift_overlap([], []) == 1.0


def test_no_anchors_defers(scoring) -> None:
    v = verdict(scoring, "Yes.", ["The sky is blue."])
    assert v.decision == "DEFER"
    assert v.score is None
    assert v.reasons[0].code == "no_anchors"


def test_no_context_and_empty_answer_defer(scoring) -> None:
    assert verdict(scoring, "Apple hired 12 engineers.", []).reasons[0].code == "no_contexts"
    assert verdict(scoring, "   ", ["x"]).reasons[0].code == "empty_answer"


def test_lower_is_better_gate(scoring) -> None:
    ctx = ["Apple hired 12 engineers in Paris in 2020."]
    good = verdict(scoring, "Apple hired 12 engineers in 2020.", ctx)
    assert good.score == 0.0
    assert good.decision == "PASS"
    assert good.reasons[0].code == "at_or_below_threshold"
    bad = verdict(scoring, "Google fired 40 managers in Berlin in 1999.", ctx)
    assert bad.score > 0.3
    assert bad.decision == "FAIL"
    assert bad.reasons[0].code == "above_threshold"


def test_glued_sentences_in_scraped_text_are_split(scoring) -> None:
    v = verdict(scoring, "Barton Mine", ["Development halted in 1939.Barton Mine is a mine."])
    assert anchors_of(v)["Barton Mine"] == "supported"


def test_relevance_and_completeness_defer_without_a_query(scoring) -> None:
    event = AnswerEvent(id="a", answer="Paris", contexts=["Paris"])
    assert score_relevance(event, scoring.ctx).reasons[0].code == "no_query"
    assert score_completeness(event, scoring.ctx).reasons[0].code == "no_query"


def test_completeness_without_keywords_records_the_reason(scoring) -> None:
    event = AnswerEvent(id="a", query="Is it?", answer="Yes.", contexts=["x"])
    v = score_completeness(event, scoring.ctx)
    assert v.score == 1.0
    assert v.decision == "PASS"
    assert [r.code for r in v.reasons] == ["at_or_above_threshold", "no_query_keywords"]


def test_relevance_verdict_records_the_idf_digest(scoring) -> None:
    event = AnswerEvent(id="a", query="capital of France", answer="Paris is the capital of France")
    v = score_relevance(event, scoring.ctx)
    assert scoring.ctx.background is not None
    assert v.evidence["idf"] == scoring.ctx.background.digest
    assert v.score is not None
    assert 0.0 < v.score <= 1.0


def test_batch_and_single_parsing_give_the_same_verdicts(scoring) -> None:
    events = [
        AnswerEvent(id=f"e{i}", query="q", answer=a, contexts=["Apple hired 12 engineers in 2020."])
        for i, a in enumerate(["Apple hired 12 engineers.", "Google hired 40.", "In 2020."])
    ]
    together = scoring.analyzer.analyze(events)
    alone = [scoring.analyzer.analyze([e])[0] for e in events]
    for event, a, b in zip(events, together, alone, strict=True):
        va = score_hallucination(event, a, scoring.ctx).model_dump_json()
        vb = score_hallucination(event, b, scoring.ctx).model_dump_json()
        assert va == vb


def test_evidence_index_phrase_search_returns_character_spans() -> None:
    from verdictflow.evaluators.evidence_index import build_evidence_index
    from verdictflow.nlp import load_pipeline

    index: EvidenceIndex = build_evidence_index(load_pipeline()("I met Ada Lovelace's friend."))
    start, end = index.find_phrase(("ada", "lovelace"))  # type: ignore[misc]
    assert index.text[start:end] == "Ada Lovelace"
    assert index.find_phrase(("lovelace", "ada")) is None


def test_an_acronym_is_found_as_the_name_it_spells_out() -> None:
    from verdictflow.evaluators.evidence_index import build_evidence_index
    from verdictflow.nlp import load_pipeline

    index = build_evidence_index(
        load_pipeline()(
            "It is spring in the United States. The Department of Defense and the "
            "National Football League met in San Francisco."
        )
    )
    found = {a: index.find_acronym(a) for a in ("US", "nfl", "SF", "DoD", "is", "UK", "NFLX")}
    assert {a: index.text[s[0] : s[1]] for a, s in found.items() if s} == {
        "US": "United States",
        "nfl": "National Football League",
        "SF": "San Francisco",
    }
    assert index.find_acronym("a") is None  # one letter is no acronym
