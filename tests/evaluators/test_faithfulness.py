"""Faithfulness: its signals on the real spaCy pipeline, the packaged model and the verdict."""

from __future__ import annotations

import json
import math
from importlib import resources

import pytest

from verdictflow.evaluators.faithfulness import faithfulness_signals, score_faithfulness
from verdictflow.evaluators.faithfulness_model import (
    FaithfulnessModel,
    FaithfulnessModelError,
    load_model,
    model_bytes,
)
from verdictflow.evaluators.faithfulness_signals import SIGNAL_NAMES
from verdictflow.evaluators.policy import Policy
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Decision, ReasonCode, Verdict
from verdictflow.scoring_setup import Scoring, load_scoring

CONTEXT = (
    "Protesters gathered in front of the Russian embassy in Berlin on Friday. "
    "They marked the first anniversary of Russia's invasion of Ukraine. "
    "Police said about 2,000 people took part. Moscow did not comment."
)


@pytest.fixture(scope="module")
def scoring() -> Scoring:
    return load_scoring(Policy(), None)


def score(scoring: Scoring, answer: str, contexts: list[str] | None = None) -> Verdict:
    event = AnswerEvent(id="a", answer=answer, contexts=[CONTEXT] if contexts is None else contexts)
    (parsed,) = scoring.analyzer.analyze([event])
    return score_faithfulness(event, parsed, scoring.ctx)


def signals(scoring: Scoring, answer: str) -> dict[str, float]:
    event = AnswerEvent(id="a", answer=answer, contexts=[CONTEXT])
    (parsed,) = scoring.analyzer.analyze([event])
    return faithfulness_signals(event, parsed, scoring.ctx).values


def findings(v: Verdict, signal: str) -> list[str]:
    return [f["text"] for f in v.evidence["findings"] if f["signal"] == signal]


def test_a_fabricated_name_fails_where_a_paraphrase_passes(scoring) -> None:
    paraphrase = score(
        scoring, "Demonstrators assembled outside the Russian embassy in Berlin on Friday."
    )
    fabricated = score(
        scoring, "Demonstrators assembled outside the Russian embassy in Paris on Friday."
    )
    assert paraphrase.decision is Decision.PASS, paraphrase.evidence
    assert fabricated.decision is Decision.FAIL, fabricated.evidence
    assert fabricated.score < paraphrase.score
    assert "Paris" in findings(fabricated, "novel_propn")
    assert "Paris" in findings(fabricated, "fabricated_facts")
    reason = next(r for r in fabricated.reasons if r.code is ReasonCode.UNSUPPORTED_DETAIL)
    assert "'Paris'" in reason.detail
    assert "detail factor" in reason.detail
    assert fabricated.evidence["drivers"][0] in {"novel_propn", "novel_named_share"}


def test_a_name_taken_from_another_passage_is_misplaced(scoring) -> None:
    """A window is a sentence and its neighbours, so the two passages are kept apart."""
    context = [
        "The mayor of Springfield opened the new bridge on Monday. "
        "The ceremony drew a large crowd from the city. "
        "Traffic was diverted for three hours. "
        "Schools closed early. "
        "Later that month, the governor of Shelbyville visited a farm. "
        "He praised the farmers for their harvest and their patience."
    ]
    right = score(scoring, "The mayor of Springfield opened the new bridge.", context)
    swapped = score(scoring, "The mayor of Shelbyville opened the new bridge.", context)
    assert "Shelbyville" in findings(swapped, "misplaced_words")
    assert not findings(right, "misplaced_words")
    assert swapped.score < right.score


def test_an_added_negation_counts_against_the_answer(scoring) -> None:
    plain = signals(scoring, "Police said about 2,000 people took part.")
    negated = signals(scoring, "Police said about 2,000 people did not take part.")
    assert plain["negation_added"] == 0.0
    assert negated["negation_added"] > 0.0


def test_a_wrong_number_is_a_fabricated_fact(scoring) -> None:
    right = signals(scoring, "About 2,000 people took part, police said.")
    wrong = signals(scoring, "About 9,000 people took part, police said.")
    assert right["fabricated_facts"] == 0.0
    assert right["novel_number"] == 0.0
    assert wrong["fabricated_facts"] > 0.0
    assert wrong["novel_number"] > 0.0


def test_nothing_to_check_defers(scoring) -> None:
    yes = score(scoring, "Yes.")
    assert yes.decision is Decision.DEFER
    assert yes.score is None
    assert yes.reasons[0].code is ReasonCode.NO_ANCHORS
    assert score(scoring, "Berlin.", []).reasons[0].code is ReasonCode.NO_CONTEXTS


def test_evidence_explains_the_score(scoring) -> None:
    v = score(scoring, "Demonstrators assembled outside the Russian embassy in Paris on Friday.")
    model = scoring.ctx.faithfulness
    rows = {r["name"]: r for r in v.evidence["signals"]}
    assert tuple(rows) == model.signals
    for factor in model.factors:
        logit = math.fsum([factor.intercept, *(rows[n]["contribution"] for n in factor.signals)])
        assert v.evidence["factors"][factor.name] == pytest.approx(1 / (1 + math.exp(-logit)))
    assert v.score == pytest.approx(math.prod(v.evidence["factors"].values()))
    assert v.evidence["model_digest"] == model.digest


def test_verdicts_are_byte_identical_and_the_model_is_in_the_digest(scoring, tmp_path) -> None:
    answer = "Demonstrators assembled outside the Russian embassy in Paris on Friday."
    first, second = score(scoring, answer), score(scoring, answer)
    assert first.model_dump_json() == second.model_dump_json()
    raw = json.loads(model_bytes(scoring.ctx.faithfulness))
    raw["factors"]["detail"]["intercept"] += 1.0
    changed = tmp_path / "model.json"
    changed.write_text(json.dumps(raw))
    other = load_scoring(Policy.model_validate({"faithfulness": {"model": str(changed)}}), None)
    assert other.ctx.config_digest != scoring.ctx.config_digest


def test_the_packaged_model_is_canonical_and_its_threshold_the_default() -> None:
    packaged = resources.files("verdictflow.data").joinpath("faithfulness_model.json").read_bytes()
    model = load_model()
    assert model_bytes(model) == packaged  # what train-faithfulness writes, byte for byte
    assert Policy().faithfulness.threshold == model.threshold
    assert set(model.signals) == set(SIGNAL_NAMES)
    names = {s["name"] for s in model.training["sets"]}
    assert {"halueval-qa", "qags-cnndm", "summeval", "summedits-news"} <= names


def test_bad_model_files_are_refused_with_the_reason(tmp_path) -> None:
    with pytest.raises(FaithfulnessModelError, match="cannot read"):
        load_model(str(tmp_path / "missing.json"))
    raw = json.loads(model_bytes(load_model()))
    raw["factors"]["detail"]["signals"][0]["name"] = "vibes"
    with pytest.raises(FaithfulnessModelError, match="vibes"):
        FaithfulnessModel.from_bytes(json.dumps(raw).encode(), "x.json")
    with pytest.raises(FaithfulnessModelError, match="format"):
        FaithfulnessModel.from_bytes(b'{"format": "other"}', "x.json")
