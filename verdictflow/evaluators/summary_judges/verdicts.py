"""Judge verdicts: run the requested judges on parsed summary events and build the records.

Pure given a parser: the stream agent and ``verdictflow eval summaries`` both call
:func:`score_batch` with a function that turns texts into :class:`Parsed` values (spaCy's
``nlp.pipe``), so a streamed verdict and an offline one are byte-identical.

- ``verdict_id`` = sha256(input id, kind, judge, config digest): one event judged by both
  judges gives two verdicts with different ids, each stable under re-processing.
- ``config_digest`` covers the judge configuration, the judge code version and the spaCy
  pipeline (name, version, components): a different model can move a score.
- ``score`` = mean of the five metric scores (0-10); ``decision`` PASS at or above
  the judge's threshold (policy ``judge``; a placeholder, 6.0, until calibrated), DEFER when
  any metric is an error.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from verdictflow.environment import environment_digest
from verdictflow.evaluators import text_normalise
from verdictflow.evaluators.answer_verdicts import verdict_id
from verdictflow.evaluators.language import unsupported_script
from verdictflow.evaluators.policy import BudgetPolicy, JudgePolicy, defer, gate
from verdictflow.evaluators.summary_judges import common, judge_lock, twin_lock
from verdictflow.evaluators.summary_judges.rules import round_half_up
from verdictflow.evaluators.summary_judges.text import Parsed
from verdictflow.evaluators.text_normalise import clean as clean_text
from verdictflow.models.events import SummaryEvent
from verdictflow.models.verdicts import Decision, JudgeVerdict, Reason, ReasonCode, VerdictKind

JUDGE_CODE_VERSION = f"vf-judge/2:spec-002+{text_normalise.VERSION}"
JudgeName = Literal["twin_lock", "judge_lock"]
ALL_JUDGES: tuple[JudgeName, ...] = ("twin_lock", "judge_lock")
JUDGES: dict[str, Callable[[Parsed, Parsed], dict[str, dict[str, Any]]]] = {
    twin_lock.NAME: twin_lock.judge,
    judge_lock.NAME: judge_lock.judge,
}
Parser = Callable[[Sequence[str]], list[Parsed]]


#: What can change a judge verdict besides the input and the spaCy pipeline: the policy file's
#: ``judge`` section (thresholds per judge, evidence cap).
JudgeConfig = JudgePolicy


@dataclass(frozen=True)
class JudgeContext:
    config: JudgeConfig
    pipeline_version: str
    #: The policy's per-record budget (its summary and article limits apply to the judges).
    budget: BudgetPolicy = field(default_factory=BudgetPolicy)
    config_digest: str = field(init=False)
    environment_digest: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "environment_digest", environment_digest())
        payload = {
            "code": JUDGE_CODE_VERSION,
            "config": self.config.model_dump(mode="json"),
            "pipeline": self.pipeline_version,
            "budget": {
                "summary_chars": self.budget.summary_chars,
                "article_chars": self.budget.article_chars,
            },
        }
        digest = hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest()
        object.__setattr__(self, "config_digest", digest)


def judge_verdict_id(input_id: str, judge: str, config_digest: str) -> str:
    return verdict_id(input_id, VerdictKind.JUDGE, config_digest, judge)


def trim_evidence(value: Any, limit: int) -> Any:
    """Cap every string in an evidence tree at ``limit`` characters (verdicts stay small)."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[: limit - 1] + "…"
    if isinstance(value, list):
        return [trim_evidence(v, limit) for v in value[: common.MAX_EVIDENCE_ITEMS]]
    if isinstance(value, dict):
        return {k: trim_evidence(v, limit) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Scored:
    """A judge's five metric objects read as one verdict: the score is the mean of the five
    ``overall_score`` values (0-10; None when any is an error object), the decision is the
    threshold's (or a DEFER naming the first error), with every cap and error for evidence."""

    score: float | None
    decision: tuple[Decision, Reason]
    caps: list[dict[str, Any]]
    errors: dict[str, str]


def scored(metrics: dict[str, dict[str, Any]], threshold: float) -> Scored:
    """See :class:`Scored`; a reply that broke the judge model's contract DEFERs
    ``judge_output_invalid``, any other error object ``judge_metric_error``."""
    errors = {m: v["error"] for m, v in metrics.items() if "error" in v}
    caps = [{"metric": name, **cap} for name, m in metrics.items() for cap in m.get("caps", [])]
    if errors:
        metric, reason = next(iter(errors.items()))
        code = (
            ReasonCode.JUDGE_OUTPUT_INVALID
            if reason.startswith("judge_output_invalid")
            else ReasonCode.JUDGE_METRIC_ERROR
        )
        return Scored(None, defer(code, f"{metric}: {reason}"), caps, errors)
    total = math.fsum(m["overall_score"] for m in metrics.values())
    score = round_half_up(total / len(metrics), 2)
    return Scored(score, gate(score, threshold), caps, errors)


def build_verdict(
    event: SummaryEvent, judge: str, metrics: dict[str, dict[str, Any]], ctx: JudgeContext
) -> JudgeVerdict:
    """The verdict record of one judge on one event."""
    threshold = ctx.config.threshold_for(judge)
    result = scored(metrics, threshold)
    evidence = {"judge": judge, "caps_applied": result.caps, "errors": result.errors}
    score, decision = result.score, result.decision
    return JudgeVerdict(
        verdict_id=judge_verdict_id(event.id, judge, ctx.config_digest),
        kind=VerdictKind.JUDGE,
        input_id=event.id,
        score=score,
        threshold=threshold,
        decision=decision[0],
        reasons=[decision[1]],
        evidence=evidence,
        config_digest=ctx.config_digest,
        tokenizer_version=ctx.pipeline_version,
        environment_digest=ctx.environment_digest,
        model=event.model,
        tenant=event.tenant,
        group=None,
        event_ts=event.ts,
        judge=judge,
        metrics=trim_evidence(metrics, ctx.config.max_text_chars),
    )


def judges_for(event: SummaryEvent, override: Sequence[str] | None = None) -> list[str]:
    """The judges to run: ``override`` if given, else the event's ``judges`` (``[]``: none,
    as written), else both."""
    if override is not None:
        chosen: Sequence[str] = override
    else:
        chosen = event.judges if event.judges is not None else ALL_JUDGES
    return [j for j in ALL_JUDGES if j in chosen]


def unjudgeable(event: SummaryEvent, budget: BudgetPolicy) -> tuple[ReasonCode, str] | None:
    """Why the judges cannot read ``event`` (another script, or past the budget), or None."""
    for name, text in (("summary", event.summary), ("article", event.article)):
        if unsupported_script(text):
            return (
                ReasonCode.UNSUPPORTED_LANGUAGE,
                f"the {name} is written mostly outside the Latin script; the judges read English",
            )
    if len(event.summary) > budget.summary_chars:
        limit, size, name = budget.summary_chars, len(event.summary), "summary"
    elif len(event.article) > budget.article_chars:
        limit, size, name = budget.article_chars, len(event.article), "article"
    else:
        return None
    return (
        ReasonCode.TOO_LONG_FOR_NLP,
        f"too long for the judges: {name} of {size:,} characters > budget.{name}_chars {limit:,}",
    )


def deferred_verdict(
    event: SummaryEvent, judge: str, why: tuple[ReasonCode, str], ctx: JudgeContext
) -> JudgeVerdict:
    """A judge's DEFER for an event it cannot read (not parsed)."""
    return JudgeVerdict(
        verdict_id=judge_verdict_id(event.id, judge, ctx.config_digest),
        kind=VerdictKind.JUDGE,
        input_id=event.id,
        score=None,
        threshold=ctx.config.threshold_for(judge),
        decision=Decision.DEFER,
        reasons=[Reason(code=why[0], detail=why[1])],
        evidence={
            "judge": judge,
            "summary_chars": len(event.summary),
            "article_chars": len(event.article),
        },
        config_digest=ctx.config_digest,
        tokenizer_version=ctx.pipeline_version,
        environment_digest=ctx.environment_digest,
        model=event.model,
        tenant=event.tenant,
        group=None,
        event_ts=event.ts,
        judge=judge,
        metrics={},
    )


def score_batch(
    events: Sequence[SummaryEvent],
    parse: Parser,
    ctx: JudgeContext,
    override: Sequence[str] | None = None,
) -> list[list[JudgeVerdict]]:
    """Verdicts for each event (in order). Texts are normalised
    (:mod:`~verdictflow.evaluators.text_normalise`), and parsed once per distinct text, in one
    ``parse`` call, so a batch of summaries of one article parses the article once; an event
    the judges cannot read (:func:`unjudgeable`) is not parsed and gets DEFERs."""
    clean = [
        e.model_copy(update={"summary": clean_text(e.summary), "article": clean_text(e.article)})
        for e in events
    ]
    why = [unjudgeable(e, ctx.budget) for e in clean]
    readable = [e for e, w in zip(clean, why, strict=True) if w is None]
    texts = list(dict.fromkeys(t for e in readable for t in (e.article, e.summary)))
    parsed = dict(zip(texts, parse(texts), strict=True)) if texts else {}
    return [
        [
            deferred_verdict(e, j, w, ctx)
            if w is not None
            else build_verdict(e, j, JUDGES[j](parsed[e.summary], parsed[e.article]), ctx)
            for j in judges_for(e, override)
        ]
        for e, w in zip(clean, why, strict=True)
    ]
