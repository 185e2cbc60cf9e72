"""The Faust agents' names (each also names its consumer's state and metrics) and which agent
emits each verdict kind, for each input it is scored on.

The scoring registry (:mod:`verdictflow.evaluators.kinds`) says what a kind scores and in which
tier; the deployment names live here, beside the agents that carry them. The names are
contracts: topic offsets, tables and dashboards key on them.
"""

from __future__ import annotations

from verdictflow.evaluators.kinds import KINDS, KindSpec, Scope, Tier

#: The Faust agent of each answers tier (and, so, its consumer group's agent).
TIER_AGENTS: dict[Tier, str] = {
    Tier.LEXICAL: "vf-answers",
    Tier.NLP: "vf-answers-nlp",
    Tier.JUDGE: "vf-judge",
}
#: The Faust agent of ``summaries``: the judges, and faithfulness on summaries.
SUMMARIES_AGENT = "vf-summaries"
#: The agent that collects a request's answer variants and emits consistency.
CONSISTENCY_AGENT = "vf-consistency"


def agent_for(scope: Scope, tier: Tier | None) -> str:
    """The agent that emits a kind of ``tier`` for inputs of ``scope``: the judge tier's agent
    reviews answers and summaries alike; otherwise summaries go to the summaries agent,
    variant groups to the consistency agent, answers to their tier's agent."""
    if tier is Tier.JUDGE:
        return TIER_AGENTS[Tier.JUDGE]
    if scope is Scope.SUMMARY:
        return SUMMARIES_AGENT
    if scope is Scope.VARIANT_GROUP:
        return CONSISTENCY_AGENT
    if tier is None:
        raise ValueError(f"an answer kind needs a tier (scope {scope})")
    return TIER_AGENTS[tier]


def agents_of(spec: KindSpec) -> tuple[str, ...]:
    """Every agent that emits ``spec``: its own, then those of the inputs it is also scored on."""
    return (
        agent_for(spec.scope, spec.tier),
        *(agent_for(scope, spec.tier) for scope in spec.also_emitted),
    )


def emitted_by(agent: str) -> tuple[KindSpec, ...]:
    """The kinds ``agent`` emits."""
    return tuple(spec for spec in KINDS if agent in agents_of(spec))
