"""The rubric's judgements (spec 002): what a judge decides, apart from the arithmetic.

Twin-Lock and Judge-Lock each decide some things about a (summary, article) pair (which key
points the article has and how far the summary covers each; which summary tokens and claims
the article does not back; the intent and how far the summary drifts from it; the QAG answers;
the theme; the tone and the bias and toxicity findings) and then apply fixed formulas, caps
and safeguards to them. :class:`Judgements` holds the first part for one framework, and
:mod:`~verdictflow.evaluators.summary_judges.rubric` is the second, the only code that turns
judgements into scores. The deterministic judges extract their judgements with token rules
(:mod:`twin_lock`, :mod:`judge_lock`); the judge-model path reads them from a model's reply
(:mod:`~verdictflow.evaluators.summary_judges.rubric_model`). Both go through the same
arithmetic, so they cannot disagree on it.

Fields marked *computed* are never asked of a model: the summary's token count and the
relevance segments' overlaps are the spec's own arithmetic (Jaccard-style overlap), computed
from the texts in both paths. Optional fields (``sentence``, ``covered``, ``support``) are
evidence the deterministic judges have and a model does not give.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

CoverageLabel = Literal["Fully", "Partial", "Not"]
ClaimLabel = Literal["Supported", "Partially", "Unsupported"]
QagLabel = Literal["Correct", "Partial", "Wrong"]
SegmentLabel = Literal["High", "Some", "None"]
Tone = Literal["neutral", "subjective", "hostile", "unclear"]


class _Judgement(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class KeyPoint(_Judgement):
    point: str
    sentence: int | None = None  # its article sentence (deterministic judges)
    covered: float | None = None  # share of its content words in the summary (deterministic)
    label: CoverageLabel


class Claim(_Judgement):
    claim: str
    label: ClaimLabel
    support: float | None = None  # best local share of its words in the article (deterministic)
    missing_anchors: list[str] = Field(default_factory=list)


class Segment(_Judgement):
    """*Computed*: a summary segment and its overlap with the article."""

    segment: str
    overlap: float
    label: SegmentLabel


class QagAnswer(_Judgement):
    """A question, its expected answer, and how the other text answers it."""

    question: str
    expected: str
    label: QagLabel
    answered_from: str = ""  # the answering sentence ("" when none)


class Alignment(_Judgement):
    article_intent: str
    summary_intent: str = ""
    #: Each aspect's deviation in [0, 1] (deterministic: tone, subjectivity, hedging, focus,
    #: meaning; model: meaning, tone, framing, from its labels).
    deviations: dict[str, float] = Field(default_factory=dict)
    #: The overall deviation D in [0, 1] that the spec's bands score (none <= 0.1 < mild <=
    #: 0.35 < severe).
    deviation: float = Field(ge=0.0, le=1.0)


class BiasToxicity(_Judgement):
    tone: Tone
    strong_slurs_or_obscenities: list[str] = Field(default_factory=list)
    mild_profanity: list[str] = Field(default_factory=list)
    stereotypes: list[str] = Field(default_factory=list)
    loaded_wording: list[str] = Field(default_factory=list)


class Judgements(_Judgement):
    """One framework's judgements on one (summary, article) pair. ``None`` for a part that is
    missing (a model reply without it): its metric is the spec's ``{"error": ...}``."""

    key_points: list[KeyPoint] | None
    #: Summary tokens the article does not entail (repeats count; precision's numerator).
    extraneous_tokens: list[str]
    summary_tokens: int  # computed: the summary's content tokens (precision's denominator)
    claims: list[Claim] | None
    segments: list[Segment]  # computed
    theme: str
    alignment: Alignment | None
    bias_toxicity: BiasToxicity | None
    #: Judge-Lock: questions on the article answered from the summary (coverage), and on the
    #: summary's claims answered from the article (hallucination), and whether either set
    #: credits one span twice.
    qag: list[QagAnswer] | None = None
    claim_qag: list[QagAnswer] | None = None
    qag_duplicate_spans: bool = False
    claim_qag_duplicate_spans: bool = False
    #: Why a part the arithmetic needs is absent, by metric (deterministic: ``no_key_points``,
    #: ``no_claims``, ``no_segments`` with the spec's wording; model: ``missing_metric``).
    missing: dict[str, str] = Field(default_factory=dict)
