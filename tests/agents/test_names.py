"""Which agent emits which kind: decided beside the agents, from the registry's scopes and tiers."""

from __future__ import annotations

from verdictflow.agents.names import agents_of, emitted_by
from verdictflow.evaluators.kinds import KINDS, Scope, spec_for


def test_faithfulness_is_also_emitted_for_summaries_by_the_summaries_agent() -> None:
    faithfulness = spec_for("faithfulness")
    assert faithfulness.also_emitted == (Scope.SUMMARY,)
    assert agents_of(faithfulness) == ("vf-answers-nlp", "vf-summaries")
    assert faithfulness.scope is Scope.ANSWER  # calibrated on answers; its tier is unchanged
    assert [s.name for s in emitted_by("vf-summaries")] == [
        "faithfulness",
        "judge.twin_lock",
        "judge.judge_lock",
    ]
    assert [s.name for s in emitted_by("vf-answers-nlp")] == ["hallucination", "faithfulness"]
    judged = spec_for("faithfulness_llm")  # the judge tier reviews both scopes
    assert agents_of(judged) == ("vf-judge", "vf-judge")
    assert all(not s.also_emitted for s in KINDS if s not in (faithfulness, judged))


def test_every_kind_has_its_agents_as_before_the_registry_stopped_naming_them() -> None:
    """The names are contracts (consumer groups, tables, dashboards): issue 42 moved them here
    unchanged."""
    assert {s.name: agents_of(s) for s in KINDS} == {
        "groundedness": ("vf-answers",),
        "relevance": ("vf-answers",),
        "completeness": ("vf-answers",),
        "hallucination": ("vf-answers-nlp",),
        "faithfulness": ("vf-answers-nlp", "vf-summaries"),
        "faithfulness_llm": ("vf-judge", "vf-judge"),
        "consistency": ("vf-consistency",),
        "judge.twin_lock": ("vf-summaries",),
        "judge.judge_lock": ("vf-summaries",),
        "judge_llm.twin_lock": ("vf-judge",),  # issue 45: the rubric by a judge model
        "judge_llm.judge_lock": ("vf-judge",),
    }
