"""Every verdict kind, declared once: the registry.

An entry is a kind's whole contract: the input it scores, the tier that scores it (answers),
any other input it is also scored on (faithfulness: summaries), how to read its score
(direction and scale), where
its threshold lives in the policy, what a process must load to score it, its scorer, and its
documentation page. The
answers pipeline (:mod:`~verdictflow.evaluators.answer_batch`), ``eval``, ``calibrate``,
``drift``, the monitor, ``schemas`` and the docs tests iterate :data:`KINDS`; nothing else
lists kinds or picks a scorer by position.

Judge verdicts share one topic (``verdicts.judge``), but each judge is its own entry
(``judge.twin_lock``, ``judge.judge_lock``): each has its own threshold, calibration record and
drift baseline. An entry's ``name`` is that series' name; ``kind`` is the topic's.

Adding a kind: its scorer module in ``evaluators/``, a :class:`VerdictKind` value, a policy
section with a ``threshold``, one entry here, and a page in ``docs/verdicts/``. The registry
names no Faust agent: which agent emits a kind is :mod:`verdictflow.agents.names`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from verdictflow.evaluators.answer_quality_verdicts import (
    score_completeness,
    score_hallucination,
    score_relevance,
)
from verdictflow.evaluators.answer_verdicts import ScoringContext, score_groundedness
from verdictflow.evaluators.faithfulness import score_faithfulness
from verdictflow.evaluators.policy import Policy
from verdictflow.evaluators.variant_groups import score_self_contained
from verdictflow.models.events import AnswerEvent, SummaryEvent
from verdictflow.models.verdicts import Decision, JudgeVerdict, Verdict, VerdictKind

if TYPE_CHECKING:
    from verdictflow.evaluators.answer_analysis import ParsedAnswer


class Tier(StrEnum):
    """Which answers agent (and consumer group) computes a per-answer kind. The **lexical**
    tier needs only tokens and lookups (~100 us per answer); the **NLP** tier needs the spaCy
    parse of the answer (milliseconds). Each is its own consumer group on ``answers``, so a
    backlog of parses never holds back a lexical verdict (docs/architecture.md)."""

    LEXICAL = "lexical"
    NLP = "nlp"
    #: The judge tier (issue 29): escalated verdicts reviewed by an LLM or a cross-encoder,
    #: its own consumer group on ``internal.judge-requests``; only with a judge backend.
    JUDGE = "judge"


class Scope(StrEnum):
    """What one verdict is about."""

    ANSWER = "answer"  # one verdict per answer event, from the answers agents
    VARIANT_GROUP = "variant-group"  # one per request's set of answer variants (consistency)
    SUMMARY = "summary"  # one per summary event (and judge, for the judges)


class Need(StrEnum):
    """What a process must load before it can score a kind."""

    SPACY = "spacy"  # the English pipeline (``verdictflow.nlp``): hundreds of MB, seconds
    BACKGROUND_STATS = "background-stats"  # document frequencies for TF-IDF (relevance)


#: A DEFER's score in gate space: below every threshold in [0, 1], so a DEFER never passes.
DEFER_SCORE = -1.0
#: Which side of the threshold passes.
Direction = Literal["higher", "lower"]
#: A per-answer scorer: the event, its spaCy parse (None unless the kind needs spaCy) and the
#: policy's scoring context, to one verdict.
AnswerScorer = Callable[[AnswerEvent, "ParsedAnswer | None", ScoringContext], Verdict]


@dataclass(frozen=True, kw_only=True)
class KindSpec:
    """One verdict kind's contract (see the module docstring)."""

    name: str
    kind: VerdictKind
    scope: Scope
    direction: Direction
    scale: float  # the score's upper bound: 1 for answer kinds, 10 for judges
    doc: str  # the kind's page, relative to the repository root
    tier: Tier | None = None
    needs: frozenset[Need] = frozenset()
    #: Perturbations calibration measures the threshold's margin under (None: all of them;
    #: scorers on spaCy's cased model skip case changes, see ``evaluators/perturb``).
    perturbations: frozenset[str] | None = None
    #: Answer and variant-group kinds: the scorer of one answer event (a variant group's
    #: scorer takes an event that carries all its variants inline).
    score: AnswerScorer | None = None
    judge: str | None = None  # summary kinds: the judge's name in the policy and the verdict
    #: Other inputs the kind is also scored on (same topic, scorer, threshold and page):
    #: faithfulness on summaries (:mod:`~verdictflow.evaluators.summary_faithfulness`). Which
    #: agent emits a kind for which input is the drivers' business (``agents/names.py``).
    also_emitted: tuple[Scope, ...] = ()

    @property
    def event_model(self) -> type[BaseModel]:
        """The topic record a golden set row or an input line must validate as."""
        return SummaryEvent if self.scope is Scope.SUMMARY else AnswerEvent

    @property
    def verdict_model(self) -> type[Verdict]:
        return JudgeVerdict if self.scope is Scope.SUMMARY else Verdict

    def threshold(self, policy: Policy) -> float:
        """The threshold the agents gate this kind's score at, in its own units."""
        if self.judge is not None:
            return policy.judge.threshold_for(self.judge)
        section: Any = getattr(policy, self.kind.value)
        return float(section.threshold)

    def set_threshold(self, data: dict[str, Any], threshold: float) -> None:
        """Write ``threshold`` where :meth:`threshold` reads it, in a policy's JSON form."""
        if self.judge is not None:
            judge = data["judge"]
            judge["thresholds"] = {**judge["thresholds"], self.judge: threshold}
        else:
            data[self.kind.value] = {**data[self.kind.value], "threshold": threshold}

    def to_gate(self, verdict: Verdict) -> float:
        """The verdict's score in *gate space* (higher passes, [0, 1]), where calibration's ROC
        code works for every kind; a DEFER never passes."""
        if verdict.decision is Decision.DEFER or verdict.score is None:
            return DEFER_SCORE
        unit = verdict.score / self.scale
        return 1.0 - unit if self.direction == "lower" else unit

    def from_gate(self, value: float) -> float:
        """A gate-space threshold in the kind's own units (rounded to 12 decimals, so 1 - 0.7
        is written as 0.3)."""
        unit = 1.0 - value if self.direction == "lower" else value
        return round(min(max(unit, 0.0), 1.0) * self.scale, 12)


def _lexical(scorer: Callable[[AnswerEvent, ScoringContext], Verdict]) -> AnswerScorer:
    return lambda event, _parsed, ctx: scorer(event, ctx)


def _parsed(
    scorer: Callable[[AnswerEvent, ParsedAnswer, ScoringContext], Verdict],
) -> AnswerScorer:
    def score(event: AnswerEvent, parsed: ParsedAnswer | None, ctx: ScoringContext) -> Verdict:
        if parsed is None:
            raise ValueError(f"{scorer.__name__} needs the answer's parse")
        return scorer(event, parsed, ctx)

    return score


#: Scorers on spaCy's cased model: case changes move entities, so they are not perturbations.
_CASED_MODEL = frozenset({"spacing", "order", "duplicate_context"})

#: Every kind, in emission order within a scope (an answer's verdicts come out in this order).
KINDS: tuple[KindSpec, ...] = (
    KindSpec(
        name="groundedness",
        kind=VerdictKind.GROUNDEDNESS,
        scope=Scope.ANSWER,
        direction="higher",
        scale=1.0,
        doc="docs/verdicts/groundedness.md",
        tier=Tier.LEXICAL,
        score=_lexical(score_groundedness),
    ),
    KindSpec(
        name="relevance",
        kind=VerdictKind.RELEVANCE,
        scope=Scope.ANSWER,
        direction="higher",
        scale=1.0,
        doc="docs/verdicts/relevance.md",
        tier=Tier.LEXICAL,
        needs=frozenset({Need.BACKGROUND_STATS}),
        score=_lexical(score_relevance),
    ),
    KindSpec(
        name="completeness",
        kind=VerdictKind.COMPLETENESS,
        scope=Scope.ANSWER,
        direction="higher",
        scale=1.0,
        doc="docs/verdicts/completeness.md",
        tier=Tier.LEXICAL,
        score=_lexical(score_completeness),
    ),
    KindSpec(
        name="hallucination",
        kind=VerdictKind.HALLUCINATION,
        scope=Scope.ANSWER,
        direction="lower",
        scale=1.0,
        doc="docs/verdicts/hallucination.md",
        tier=Tier.NLP,
        needs=frozenset({Need.SPACY}),
        perturbations=_CASED_MODEL,
        score=_parsed(score_hallucination),
    ),
    KindSpec(
        name="faithfulness",
        kind=VerdictKind.FAITHFULNESS,
        scope=Scope.ANSWER,
        direction="higher",
        scale=1.0,
        doc="docs/verdicts/faithfulness.md",
        tier=Tier.NLP,
        needs=frozenset({Need.SPACY}),
        perturbations=_CASED_MODEL,
        score=_parsed(score_faithfulness),
        also_emitted=(Scope.SUMMARY,),
    ),
    KindSpec(
        name="faithfulness_llm",
        kind=VerdictKind.FAITHFULNESS_LLM,
        scope=Scope.ANSWER,
        direction="higher",
        scale=1.0,
        doc="docs/verdicts/faithfulness_llm.md",
        tier=Tier.JUDGE,
        # no offline scorer: it asks a judge endpoint (verdictflow/judge_tier), a driver's job
        also_emitted=(Scope.SUMMARY,),
    ),
    KindSpec(
        name="consistency",
        kind=VerdictKind.CONSISTENCY,
        scope=Scope.VARIANT_GROUP,
        direction="higher",
        scale=1.0,
        doc="docs/verdicts/consistency.md",
        score=_lexical(score_self_contained),
    ),
    *(
        KindSpec(
            name=f"judge.{judge}",
            kind=VerdictKind.JUDGE,
            scope=Scope.SUMMARY,
            direction="higher",
            scale=10.0,
            doc="docs/verdicts/judge.md",
            needs=frozenset({Need.SPACY}),
            perturbations=_CASED_MODEL,
            judge=judge,
        )
        for judge in ("twin_lock", "judge_lock")
    ),
    *(
        KindSpec(
            name=f"judge_llm.{judge}",
            kind=VerdictKind.JUDGE_LLM,
            scope=Scope.SUMMARY,
            direction="higher",
            scale=10.0,
            doc="docs/verdicts/judge.md",
            tier=Tier.JUDGE,
            # no offline scorer: the judge tier asks a model for the rubric's judgements
            # (evaluators/summary_judges/rubric_model.py); thresholds are the judges' own
            judge=judge,
        )
        for judge in ("twin_lock", "judge_lock")
    ),
)

BY_NAME: dict[str, KindSpec] = {spec.name: spec for spec in KINDS}


class UnknownKindError(ValueError):
    """A kind name that is not in the registry."""


def spec_for(name: str) -> KindSpec:
    """The entry called ``name`` (``groundedness``, ``judge.twin_lock``, ...)."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise UnknownKindError(
            f"unknown verdict kind {name!r}; kinds: {', '.join(BY_NAME)}"
        ) from None


def answer_kinds(tier: Tier | None = None) -> tuple[KindSpec, ...]:
    """The per-answer kinds one tier emits, in emission order; for ``None``, every kind the
    answers tiers score (the lexical and NLP tiers': what ``eval answers`` scores; the judge
    tier's kind asks an endpoint, and only for escalated verdicts)."""
    if tier is None:
        return tuple(
            s for s in KINDS if s.scope is Scope.ANSWER and s.tier in (Tier.LEXICAL, Tier.NLP)
        )
    return tuple(s for s in KINDS if s.scope is Scope.ANSWER and s.tier is tier)


def series_name(kind: str, judge: object = None) -> str:
    """The entry name of a verdict read as JSON: ``judge.<judge>`` for judges, else its kind."""
    if kind in (VerdictKind.JUDGE.value, VerdictKind.JUDGE_LLM.value):
        return f"{kind}.{judge}"
    return kind
