"""Turn Q1/Q2 results into verdict records: decision, typed reasons, capped evidence, ids.

This is still pure code: the stream agents, ``verdictflow eval`` and the tests all call these
functions, which is what makes streamed and offline verdicts byte-identical.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from verdictflow.environment import environment_digest
from verdictflow.evaluators.consistency import mean_pairwise_jaccard
from verdictflow.evaluators.faithfulness_model import FaithfulnessModel, load_model
from verdictflow.evaluators.groundedness import groundedness
from verdictflow.evaluators.language import unsupported_script
from verdictflow.evaluators.policy import Policy, defer, gate
from verdictflow.evaluators.relevance import BackgroundStats
from verdictflow.evaluators.tokenize import Tokenizer
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Decision, Reason, ReasonCode, Verdict, VerdictKind


@dataclass(frozen=True)
class ScoringContext:
    """What scoring needs besides the input, built once per process from a policy.

    ``background`` holds the relevance term statistics (None: every term weighs 1),
    ``nlp_version`` names the spaCy pipeline the hallucination anchors come from,
    ``lexicon_version`` the WordNet whose antonyms the faithfulness signals read, and
    ``faithfulness`` is the model file the policy names (read once per file and process). Each
    can move a verdict, so each goes into ``config_digest`` with the policy digest.
    """

    policy: Policy
    background: BackgroundStats | None = None
    nlp_version: str | None = None
    lexicon_version: str | None = None
    tokenizer: Tokenizer = field(init=False)
    faithfulness: FaithfulnessModel = field(init=False)
    config_digest: str = field(init=False)
    environment_digest: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tokenizer", self.policy.make_tokenizer())
        object.__setattr__(self, "environment_digest", environment_digest())
        object.__setattr__(self, "faithfulness", load_model(self.policy.faithfulness.model))
        material = {
            "policy": self.policy.digest(),
            "background": self.background.digest if self.background is not None else None,
            "nlp": self.nlp_version,
            "lexicon": self.lexicon_version,
            "faithfulness_model": self.faithfulness.digest,
        }
        digest = hashlib.sha256(orjson.dumps(material, option=orjson.OPT_SORT_KEYS)).hexdigest()
        object.__setattr__(self, "config_digest", digest)


@dataclass(frozen=True, slots=True)
class VerdictMeta:
    """Pass-through attributes of the input that monitoring slices by."""

    model: str | None = None
    tenant: str | None = None
    group: str | None = None
    event_ts: float | None = None
    trace_id: str | None = None
    span_id: str | None = None

    @classmethod
    def of(cls, event: AnswerEvent) -> VerdictMeta:
        """The event's attributes; every kind of one answer asks in turn for the same event,
        so the last answer's are kept (events are frozen, so they cannot have changed)."""
        last = _last_meta[0]  # one read: another thread may replace it meanwhile
        if last is not None and last[0] is event:
            return last[1]
        meta = cls(
            model=event.model,
            tenant=event.tenant,
            group=event.group,
            event_ts=event.ts,
            trace_id=event.trace_id,
            span_id=event.span_id,
        )
        _last_meta[0] = (event, meta)
        return meta

    def verdict_fields(self) -> dict[str, Any]:
        """These attributes as the verdict fields of the same names."""
        return {
            "model": self.model,
            "tenant": self.tenant,
            "group": self.group,
            "event_ts": self.event_ts,
            "trace_id": self.trace_id,
            "span_id": self.span_id,
        }


#: The last event :meth:`VerdictMeta.of` was asked about, and its attributes (a pure
#: function of a frozen event, so the memo cannot change a verdict).
_last_meta: list[tuple[AnswerEvent, VerdictMeta] | None] = [None]


def verdict_id(
    input_id: str, kind: VerdictKind, config_digest: str, qualifier: str | None = None
) -> str:
    """Deterministic id: a re-processed input yields the same id, so duplicates collapse.
    ``qualifier`` tells apart verdicts of one kind on one input id (a judge's name; ``summary``
    for a summary's faithfulness, whose id may equal an answer's)."""
    if qualifier is None:  # one string, not a list and a join: four ids an answer
        key = f"{input_id}\x1f{kind.value}\x1f{config_digest}"
    else:
        key = f"{input_id}\x1f{kind.value}\x1f{qualifier}\x1f{config_digest}"
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def capped(items: Sequence[Any], limit: int) -> list[Any]:
    """The first ``limit`` items; callers record the full count beside the list."""
    return list(items[:limit])


def build_verdict(
    ctx: ScoringContext,
    kind: VerdictKind,
    input_id: str,
    score: float | None,
    threshold: float,
    decision: tuple[Decision, Reason],
    evidence: dict[str, Any],
    meta: VerdictMeta,
    extra_reasons: Sequence[Reason] = (),
    tokenizer_version: str | None = None,
) -> Verdict:
    """A verdict record with its deterministic id; ``tokenizer_version`` defaults to the spec
    tokenizer's (kinds that tokenize differently name their own).

    The fields go to the model's validator as one mapping: the same validation as
    ``Verdict(**fields)``, without ``BaseModel.__init__`` packing them again (a fifth of the
    cost of building one, four verdicts an answer)."""
    fields = {
        "verdict_id": verdict_id(input_id, kind, ctx.config_digest),
        "kind": kind,
        "input_id": input_id,
        "score": score,
        "threshold": threshold,
        "decision": decision[0],
        "reasons": [decision[1], *extra_reasons],
        "evidence": evidence,
        "config_digest": ctx.config_digest,
        "tokenizer_version": tokenizer_version or ctx.tokenizer.version,
        "environment_digest": ctx.environment_digest,
        **meta.verdict_fields(),
    }
    verdict: Verdict = _validate_verdict(fields)
    return verdict


_validate_verdict = Verdict.__pydantic_validator__.validate_python


def score_groundedness(event: AnswerEvent, ctx: ScoringContext) -> Verdict:
    """Q1 verdict for one answer; DEFER on an empty answer or no usable context."""
    tok = ctx.tokenizer
    cap = ctx.policy.evidence.max_tokens
    threshold = ctx.policy.groundedness.threshold
    passages = event.context_passages
    answer_tokens = tok.tokens(event.answer)
    context_tokens = [tok.tokens(c.text) for c in passages]
    result = groundedness(answer_tokens, context_tokens)
    evidence: dict[str, Any] = {
        "answer_token_count": len(result.answer_tokens),
        "covered_count": len(result.covered),
        "covered": capped(result.covered, cap),
        "uncovered": capped(result.uncovered, cap),
        "contexts": len(passages),
        "context_doc_ids": [c.doc_id for c in passages if c.doc_id is not None][:cap],
    }
    if result.score is None:
        decision = defer(ReasonCode.EMPTY_ANSWER, "the answer has no tokens")
    elif not any(context_tokens):
        decision = defer(ReasonCode.NO_CONTEXTS, f"{len(passages)} contexts, none with tokens")
    else:
        decision = gate(result.score, threshold)
    score = result.score if decision[0] is not Decision.DEFER else None
    return build_verdict(
        ctx,
        VerdictKind.GROUNDEDNESS,
        event.id,
        score,
        threshold,
        decision,
        evidence,
        VerdictMeta.of(event),
    )


def score_consistency(
    input_id: str,
    answers: Sequence[tuple[str, str]],
    ctx: ScoringContext,
    meta: VerdictMeta,
    *,
    expected: int | None = None,
    closed_by: str = "complete",
    truncated: int = 0,
) -> Verdict:
    """Q2 verdict over one request's answers, given as (answer_id, text) pairs.

    Answers are sorted by id first, so the verdict does not depend on arrival order.
    ``closed_by`` is ``complete`` (all expected answers seen) or ``window`` (window closed or
    input ended first). Fail closed: fewer than two answers, all answers empty, or a window
    that closed before ``expected`` answers arrived give DEFER (with the partial score kept).
    """
    tok = ctx.tokenizer
    threshold = ctx.policy.consistency.threshold
    ordered = sorted(answers)
    token_sets = [tok.tokens(text) for _, text in ordered]
    result = mean_pairwise_jaccard(token_sets)
    ids = [answer_id for answer_id, _ in ordered]
    max_pairs = ctx.policy.evidence.max_pairs
    evidence: dict[str, Any] = {
        "n": len(ordered),
        "expected": expected,
        "closed_by": closed_by,
        "answers": [{"id": i, "tokens": len(t)} for i, t in zip(ids, token_sets, strict=True)],
        "pair_count": len(result.pairs),
        "pairs": [
            {"a": ids[i], "b": ids[j], "jaccard": score}
            for i, j, score in capped(result.pairs, max_pairs)
        ],
    }
    extra: list[Reason] = []
    if truncated:
        extra.append(
            Reason(
                code=ReasonCode.VARIANTS_TRUNCATED,
                detail=f"{truncated} answers beyond max_variants were ignored",
            )
        )
    n = len(ordered)
    written = [text for _, text in ordered if text.strip()]
    if result.score is None:
        decision = defer(ReasonCode.FEWER_THAN_TWO_VARIANTS, f"{n} answer(s); need at least 2")
    elif written and all(unsupported_script(text) for text in written):
        decision = defer(
            ReasonCode.UNSUPPORTED_LANGUAGE,
            "the answers are written mostly outside the Latin script; the pipelines read English",
        )
    elif not any(token_sets):
        decision = defer(ReasonCode.ALL_VARIANTS_EMPTY, f"all {n} answers have no tokens")
    elif expected is not None and n < expected:
        decision = defer(ReasonCode.WINDOW_CLOSED, f"window closed with {n} of {expected} answers")
    else:
        decision = gate(result.score, threshold)
    return build_verdict(
        ctx,
        VerdictKind.CONSISTENCY,
        input_id,
        result.score,
        threshold,
        decision,
        evidence,
        meta,
        extra,
    )
