"""The decision policy: thresholds and options from a YAML file, and the fail-closed gate.

A policy is validated strictly (unknown keys and out-of-range values are errors), so a worker
refuses to start on a malformed file instead of gating traffic with a wrong threshold. Its
digest covers the *effective* configuration (defaults filled in) plus the tokenizer version, so
two files that mean the same thing share a digest and any change that can move a verdict
changes it.

Default thresholds are placeholders until calibrated on a golden set: 0.80 for groundedness
and 0.60 for consistency (the spec's toy examples: Q1 1.00 passes, 0.60 fails; Q2 0.6556 passes);
relevance 0.20, completeness 0.50 and hallucination at most 0.30 (see docs/verdicts/, validation
figures for where they sit on HaluEval).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

import orjson
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verdictflow.evaluators.fail_rate import AlertsPolicy
from verdictflow.evaluators.judge_tier_policy import FaithfulnessLlmPolicy, JudgeTierPolicy
from verdictflow.evaluators.review_policy import ReviewPolicy
from verdictflow.evaluators.tokenize import Tokenizer
from verdictflow.exceptions import PolicyError
from verdictflow.models.codec import summarize_validation_error
from verdictflow.models.events import MAX_ITEMS, MAX_TEXT_CHARS
from verdictflow.models.verdicts import Decision, Reason, ReasonCode

Unit = Annotated[float, Field(ge=0.0, le=1.0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TokenizerOptions(_Strict):
    remove_stopwords: bool = False


class GroundednessPolicy(_Strict):
    threshold: Unit = 0.80


class ConsistencyPolicy(_Strict):
    threshold: Unit = 0.60
    window_seconds: Annotated[float, Field(gt=0, le=86_400)] = 30.0
    max_variants: Annotated[int, Field(ge=2, le=256)] = 32


class RelevancePolicy(_Strict):
    threshold: Unit = 0.20


class CompletenessPolicy(_Strict):
    threshold: Unit = 0.50


class HallucinationPolicy(_Strict):
    """Lower is better: PASS at or below ``threshold`` (the largest tolerated score)."""

    threshold: Unit = 0.30
    drift_min_overlap: Unit = 0.20
    drift_penalty: Unit = 0.20
    entity_anchors: bool = True
    #: ``always``: content words outside other anchors are ``term`` anchors too; ``fallback``:
    #: only for an answer with no other anchor. ``always`` tracked human judgements better on
    #: QAGS and HaluEval (docs/verdicts/hallucination.md, validation), at the price of
    #: diluting one wrong number in a long answer.
    term_anchors: Literal["always", "fallback"] = "always"
    #: ``lexical``: contexts are indexed without the neural pipeline (tokenizer, rule-based
    #: sentences and lemmas; ``evaluators/context_index``), ~10x cheaper per character;
    #: ``parse``: the full spaCy parse of every context, as before (docs/verdicts/hallucination.md
    #: compares the two).
    context_index: Literal["lexical", "parse"] = "lexical"


class FaithfulnessPolicy(_Strict):
    """Higher is better: PASS at or above ``threshold``, the model's probability that the answer
    is fully supported by its contexts. ``model`` is ``default`` (the packaged model) or the
    path of a file ``verdictflow train-faithfulness`` wrote; its SHA-256 is in every verdict's
    ``config_digest``. The default threshold is the packaged model's suggested one (the
    probability at which the worst of its training sets has the highest balanced accuracy;
    ``tests/evaluators/test_faithfulness.py`` keeps the two equal)."""

    threshold: Unit = 0.40
    model: str = "default"
    #: Also score every summary against its article (the summaries agent and ``eval
    #: summaries``, on ``verdicts.faithfulness``; docs/verdicts/judge.md). It decides whether
    #: a verdict is emitted, not what any verdict says, so it is left out of the digest
    #: (:data:`EMISSION_SWITCHES`): switching it changes no verdict id.
    summaries: bool = True


class BudgetPolicy(_Strict):
    """What one record may cost the NLP tier (docs/architecture.md, "Per-record budget").

    A record past a limit is not parsed: its NLP kinds (hallucination, faithfulness) DEFER with
    ``too_long_for_nlp`` and the limits in the reason, so one tenant's huge record cannot hold
    up the records behind it in its partition, and nothing is scored from a silently cut
    prefix (a made-up fact past the cut would PASS). The lexical kinds, linear in the text,
    still score it. The defaults keep a record at the limits to a few seconds of one
    core (docs/benchmarks.md, "Per-record budget"). Characters are counted after text
    normalisation; contexts in total, blank ones left out."""

    answer_chars: Annotated[int, Field(ge=1, le=MAX_TEXT_CHARS)] = 20_000
    context_chars: Annotated[int, Field(ge=1, le=MAX_TEXT_CHARS * MAX_ITEMS)] = 200_000
    #: The summary judges parse both texts with the full spaCy pipeline (article included:
    #: ~20-30 KB/s), so a summary or article past these DEFERs ``too_long_for_nlp`` from both
    #: judges. The summary's faithfulness verdict reads the article as a context, through the
    #: lexical index, under ``answer_chars`` / ``context_chars``.
    summary_chars: Annotated[int, Field(ge=1, le=MAX_TEXT_CHARS)] = 20_000
    article_chars: Annotated[int, Field(ge=1, le=MAX_TEXT_CHARS)] = 50_000


class EvidencePolicy(_Strict):
    """Caps on evidence lists, so a verdict stays small whatever the input size."""

    max_tokens: Annotated[int, Field(ge=0, le=10_000)] = 64
    max_pairs: Annotated[int, Field(ge=0, le=10_000)] = 45


class DocQualityPolicy(_Strict):
    """Document quality (spec 004 IQS): the weights of the four signals, how many neighbours
    are checked for duplicates (``kdup``) and from which cosine a neighbour is one, and whether
    the CPESH margin is asked of the local LLM. Defaults are the spec's. Every one changes a
    DocQuality score, so they live here, under the policy's digest, and each row records
    their own digest (``config_digest``)."""

    w_text: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.4
    w_graph: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.3
    w_dup: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.2
    w_cpesh: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.1
    kdup: Annotated[int, Field(ge=1, le=1000)] = 5
    dup_threshold: Annotated[float, Field(gt=0, le=1)] = 0.999
    use_cpesh: bool = False


JudgeName = Literal["twin_lock", "judge_lock"]
JudgeScore = Annotated[float, Field(ge=0.0, le=10.0)]


class JudgePolicy(_Strict):
    """Summary judges (spec 002): scores are on 0-10; PASS at or above the judge's threshold.

    ``threshold`` applies to every judge without its own entry in ``thresholds`` (where
    ``verdictflow calibrate --kind judge.<judge>`` writes)."""

    threshold: JudgeScore = 6.0
    thresholds: dict[JudgeName, JudgeScore] = {}
    max_text_chars: Annotated[int, Field(ge=50)] = 500  # per evidence string

    def threshold_for(self, judge: str) -> float:
        own = [t for name, t in self.thresholds.items() if name == judge]
        return own[0] if own else self.threshold


class ScoreReference(_Strict):
    """The calibration set's score distribution, the drift monitor's baseline: the share of
    scored items in each bin (``edges`` in the kind's own units, first and last bins closed),
    and the share of items the scorer DEFERred."""

    edges: list[float]
    proportions: list[Annotated[float, Field(ge=0.0, le=1.0)]]
    scored_rows: Annotated[int, Field(ge=1)]
    deferred_share: Unit


class CalibrationRecord(_Strict):
    """Where a threshold came from (written by ``verdictflow calibrate``). Thresholds and the
    margin are in the kind's own units (judge: 0-10); ``direction`` says which side passes."""

    golden_digest: str
    golden_rows: int
    deferred_rows: int
    objective: str
    cost_fp: float
    cost_fn: float
    max_fpr: float | None
    raw_threshold: Annotated[float, Field(ge=0.0, le=10.0)]
    margin: Annotated[float, Field(ge=0.0)]
    margin_quantile: Unit
    threshold: Annotated[float, Field(ge=0.0, le=10.0)]
    expected_tpr: Unit
    expected_fpr: Unit
    worst_group: str | None = None
    direction: Literal["higher", "lower"] = "higher"
    perturbations: list[str] = []  # the perturbations the margin was measured under
    reference: ScoreReference | None = None


#: Keys that decide which verdicts are emitted, not what a verdict says: outside the digest.
#: ``judge_tier`` (what escalates, the budget) and ``faithfulness_llm`` (the judge verdict's
#: threshold, which that verdict's own digest carries: verdictflow/evaluators/faithfulness_llm)
#: are left out whole, so tuning the judge tier moves no cheap verdict's id; ``review`` (what
#: people are shown, the agreement bound) and ``alerts`` (FAIL-rate bounds) change no verdict.
EMISSION_SWITCHES: dict[str, Any] = {
    "faithfulness": {"summaries"},
    "judge_tier": True,
    "faithfulness_llm": True,
    "review": True,
    "alerts": True,
}


class Policy(_Strict):
    """Everything that can change a verdict, and the switches that say which verdicts are
    emitted (:data:`EMISSION_SWITCHES`, not digested)."""

    version: int = 1
    tokenizer: TokenizerOptions = TokenizerOptions()
    groundedness: GroundednessPolicy = GroundednessPolicy()
    consistency: ConsistencyPolicy = ConsistencyPolicy()
    relevance: RelevancePolicy = RelevancePolicy()
    completeness: CompletenessPolicy = CompletenessPolicy()
    hallucination: HallucinationPolicy = HallucinationPolicy()
    faithfulness: FaithfulnessPolicy = FaithfulnessPolicy()
    judge: JudgePolicy = JudgePolicy()
    evidence: EvidencePolicy = EvidencePolicy()
    budget: BudgetPolicy = BudgetPolicy()
    judge_tier: JudgeTierPolicy = JudgeTierPolicy()
    faithfulness_llm: FaithfulnessLlmPolicy = FaithfulnessLlmPolicy()
    doc_quality: DocQualityPolicy = DocQualityPolicy()
    review: ReviewPolicy = ReviewPolicy()
    alerts: AlertsPolicy = AlertsPolicy()
    calibration: dict[str, CalibrationRecord] = {}

    def make_tokenizer(self) -> Tokenizer:
        return Tokenizer(remove_stopwords=self.tokenizer.remove_stopwords)

    def digest(self) -> str:
        """SHA-256 of the canonical effective configuration, tokenizer version included (the
        emission switches left out)."""
        payload = {
            "policy": self.model_dump(mode="json", exclude=EMISSION_SWITCHES),
            "tokenizer_version": self.make_tokenizer().version,
        }
        return hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest()


def load_policy(path: Path | str | None) -> Policy:
    """Read a policy YAML file (None = built-in defaults), or raise :class:`PolicyError`."""
    if path is None:
        return Policy()
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_bytes())
    except OSError as exc:
        raise PolicyError(f"cannot read policy file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise PolicyError(f"policy file {path} is not valid YAML: {exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise PolicyError(f"policy file {path} must hold a mapping, not {type(data).__name__}")
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        raise PolicyError(
            f"policy file {path} is invalid: {summarize_validation_error(exc)}"
        ) from None


def gate(score: float, threshold: float) -> tuple[Decision, Reason]:
    """PASS at or above threshold, FAIL below it."""
    if score >= threshold:
        return Decision.PASS, reason(
            ReasonCode.AT_OR_ABOVE_THRESHOLD, f"score {score:.4f} >= {threshold:.4f}"
        )
    return Decision.FAIL, reason(ReasonCode.BELOW_THRESHOLD, f"score {score:.4f} < {threshold:.4f}")


def gate_at_most(score: float, threshold: float) -> tuple[Decision, Reason]:
    """For lower-is-better scores (hallucination): PASS at or below threshold, FAIL above."""
    if score <= threshold:
        return Decision.PASS, reason(
            ReasonCode.AT_OR_BELOW_THRESHOLD, f"score {score:.4f} <= {threshold:.4f}"
        )
    return Decision.FAIL, reason(ReasonCode.ABOVE_THRESHOLD, f"score {score:.4f} > {threshold:.4f}")


#: Details up to this long are shared; longer ones (a judge's error, say) are not kept, so the
#: shared reasons stay within ~8,192 short strings whatever the input.
_SHARED_DETAIL_CHARS = 160


def reason(code: ReasonCode, detail: str) -> Reason:
    """The reason ``(code, detail)``, shared when its detail is short: a verdict's reasons
    repeat (a single answer's consistency DEFER, a score at four decimals against one
    threshold), a Reason is frozen, and building one is a model validation (half a gate's
    time)."""
    if len(detail) > _SHARED_DETAIL_CHARS:
        return Reason(code=code, detail=detail)
    return _shared_reason(code, detail)


@lru_cache(maxsize=8192)
def _shared_reason(code: ReasonCode, detail: str) -> Reason:
    return Reason(code=code, detail=detail)


def defer(code: ReasonCode, detail: str) -> tuple[Decision, Reason]:
    """Insufficient input: never PASS."""
    return Decision.DEFER, reason(code, detail)
