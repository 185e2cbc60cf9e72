"""The verdict-kind registry: one entry per kind, and everything that lists kinds reads it."""

from __future__ import annotations

import re

import pytest

from tests.support.paths import ROOT
from verdictflow.evaluators.answer_batch import score_answers
from verdictflow.evaluators.answer_verdicts import ScoringContext
from verdictflow.evaluators.kinds import (
    BY_NAME,
    KINDS,
    Need,
    Scope,
    Tier,
    UnknownKindError,
    answer_kinds,
    series_name,
    spec_for,
)
from verdictflow.evaluators.policy import Policy
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Decision, JudgeVerdict, Verdict, VerdictKind
from verdictflow.monitoring.drift_alerts import topics_for
from verdictflow.scoring_jobs.batch.topic_schemas import TOPIC_VALUE_MODELS


def test_every_topic_kind_has_an_entry_and_every_entry_a_page() -> None:
    assert {spec.kind for spec in KINDS} == set(VerdictKind)
    for spec in KINDS:
        assert (ROOT / spec.doc).is_file(), spec.doc
        assert spec.scope is Scope.ANSWER or spec.tier in (None, Tier.JUDGE), spec.name
        offline = spec.scope is Scope.SUMMARY or spec.tier is Tier.JUDGE  # a judge asks an endpoint
        assert spec.score is not None or offline, spec.name


def test_the_readme_table_has_each_kind_with_its_default_threshold_and_page() -> None:
    """The README's verdict table is written by hand; it must say what the registry says."""
    readme = (ROOT / "README.md").read_text()
    rows = {
        m[0]: m
        for m in re.findall(
            r"^\| (\w+) \| `vf\.verdicts\.\w+` \|.*"
            r"\| PASS (>=|<=) ([\d.]+) \| \[\w+\]\(([^)]+)\) \|$",
            readme,
            re.M,
        )
    }
    for spec in KINDS:
        row = rows[spec.kind.value]
        assert row[1] == (">=" if spec.direction == "higher" else "<="), spec.name
        assert float(row[2]) == spec.threshold(Policy()), spec.name
        assert row[3] == spec.doc, spec.name


def test_lexical_and_nlp_tiers_split_the_answer_kinds() -> None:
    lexical = [s.name for s in answer_kinds(Tier.LEXICAL)]
    nlp = [s.name for s in answer_kinds(Tier.NLP)]
    assert lexical == ["groundedness", "relevance", "completeness"]
    assert nlp == ["hallucination", "faithfulness"]
    assert [s.name for s in answer_kinds()] == lexical + nlp
    assert all(Need.SPACY not in s.needs for s in answer_kinds(Tier.LEXICAL))


def test_score_answers_emits_the_tiers_kinds_in_registry_order() -> None:
    event = AnswerEvent(id="a1", query="capital of France", answer="Paris.", contexts=["Paris"])
    ctx = ScoringContext(Policy())
    (verdicts,) = score_answers([event], ctx, analyzer=None, tier=Tier.LEXICAL)  # type: ignore[arg-type]
    assert [v.kind for v in verdicts] == [s.kind for s in answer_kinds(Tier.LEXICAL)]


@pytest.mark.parametrize("name", list(BY_NAME))
def test_threshold_written_where_it_is_read(name: str) -> None:
    spec = spec_for(name)
    data = Policy().model_dump(mode="json")
    new = round(spec.scale * 0.37, 12)
    spec.set_threshold(data, new)
    policy = Policy.model_validate(data)
    assert spec.threshold(policy) == new
    # the model path of a judge (judge_llm.<judge>) gates at the judge's own threshold
    others = [s for s in KINDS if s is not spec and (s.judge is None or s.judge != spec.judge)]
    assert all(s.threshold(policy) == s.threshold(Policy()) for s in others)


def test_gate_space_flips_lower_is_better_and_scales_judges() -> None:
    def verdict(kind: VerdictKind, score: float | None, decision: Decision) -> Verdict:
        return Verdict(
            verdict_id="v", kind=kind, input_id="i", score=score, threshold=0.0,
            decision=decision, reasons=[], evidence={}, config_digest="c", tokenizer_version="t",
        )  # fmt: skip

    hallucination, judge = spec_for("hallucination"), spec_for("judge.twin_lock")
    assert hallucination.to_gate(verdict(VerdictKind.HALLUCINATION, 0.2, Decision.PASS)) == 0.8
    assert hallucination.from_gate(0.7) == 0.3
    assert judge.to_gate(verdict(VerdictKind.JUDGE, 7.5, Decision.PASS)) == 0.75
    assert judge.from_gate(0.72) == 7.2
    assert judge.to_gate(verdict(VerdictKind.JUDGE, None, Decision.DEFER)) < 0


def test_unknown_kind_names_the_choices() -> None:
    with pytest.raises(UnknownKindError, match=r"judge\.judge_lock"):
        spec_for("fluency")


def test_schemas_and_drift_topics_come_from_the_registry() -> None:
    assert TOPIC_VALUE_MODELS["verdicts.judge"] is JudgeVerdict
    assert all(TOPIC_VALUE_MODELS[f"verdicts.{s.kind.value}"] is s.verdict_model for s in KINDS)
    assert topics_for(["judge.twin_lock", "hallucination"]) == [
        "verdicts.hallucination",
        "verdicts.judge",
    ]
    assert series_name("judge", "judge_lock") == "judge.judge_lock"
    assert series_name("relevance", None) == "relevance"
