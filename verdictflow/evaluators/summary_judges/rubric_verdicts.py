"""The judge tier's ``judge_llm`` verdicts: the spec-002 rubric run by a judge model on one
summary, one verdict per framework (Twin-Lock, Judge-Lock), from a judgement (the model's
reply as received). Pure but for ``parse``, the spaCy parser the caller hands in (the texts'
computed parts: token counts, relevance segments).

Each verdict is a :class:`~verdictflow.models.verdicts.JudgeVerdict` like the deterministic
judges' (same metric objects, same threshold per framework: ``judge.thresholds``), on its own
topic ``verdicts.judge_llm``, with the judge model (backend, model, prompt version, contract),
the response as received and its token counts in its evidence, and the verdict it reviews.
Its ``config_digest`` covers the judge model, the prompt and contract, the judges' policy
section and the spaCy pipeline. A reply that broke the contract twice gives the spec's error
object in every metric and DEFER ``judge_output_invalid``; a request the judge was not asked
(too long, refused, no rubric model) DEFERs with that reason.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from verdictflow.environment import environment_digest
from verdictflow.evaluators import text_normalise
from verdictflow.evaluators.answer_verdicts import verdict_id
from verdictflow.evaluators.policy import JudgePolicy, defer
from verdictflow.evaluators.summary_judges import rubric_model
from verdictflow.evaluators.summary_judges.verdicts import Parser, scored, trim_evidence
from verdictflow.models.judge import Judgement, JudgeRequest
from verdictflow.models.verdicts import JudgeVerdict, ReasonCode, VerdictKind

#: Characters of the model's reply kept in each verdict's evidence.
RESPONSE_CHARS = 16_000


def texts(request: JudgeRequest) -> tuple[str, str]:
    """(summary, article), normalised as the deterministic judges read them."""
    event = request.event
    article = next((c.text for c in event.context_passages), "")
    return text_normalise.clean(event.answer), text_normalise.clean(article)


def rubric_messages(event: Any) -> list[dict[str, str]]:
    """The chat messages for a rubric request's event (summary as answer, article as context)."""
    article = next((c.text for c in event.context_passages), "")
    return rubric_model.messages(text_normalise.clean(article), text_normalise.clean(event.answer))


@dataclass(frozen=True)
class RubricContext:
    """What a ``judge_llm`` verdict depends on besides its input (all in ``config_digest``)."""

    backend: str
    model: str
    judges: JudgePolicy
    pipeline_version: str
    config_digest: str = field(init=False)
    environment_digest: str = field(init=False)

    def __post_init__(self) -> None:
        material = {
            "kind": VerdictKind.JUDGE_LLM.value,
            "backend": self.backend,
            "model": self.model,
            "prompt": rubric_model.prompt_digest(),
            "judges": self.judges.model_dump(mode="json"),
            "pipeline": self.pipeline_version,
            "normalisation": text_normalise.VERSION,
        }
        digest = hashlib.sha256(orjson.dumps(material, option=orjson.OPT_SORT_KEYS)).hexdigest()
        object.__setattr__(self, "config_digest", digest)
        object.__setattr__(self, "environment_digest", environment_digest())


def rubric_verdicts(
    request: JudgeRequest,
    ctx: RubricContext,
    judgement: Judgement | None,
    parse: Parser,
    deferral: tuple[ReasonCode, str] | None = None,
) -> list[JudgeVerdict]:
    """Both frameworks' verdicts for one rubric request (see the module doc)."""
    base: dict[str, Any] = {
        "reviews": request.reviews.model_dump(mode="json"),
        "judge_model": {"backend": ctx.backend, "model": ctx.model,
                        "prompt_version": rubric_model.PROMPT_VERSION,
                        "contract": rubric_model.CONTRACT_VERSION},
    }  # fmt: skip
    if judgement is None:
        code, detail = deferral or (ReasonCode.JUDGE_OUTPUT_INVALID, "no judgement")
        return [
            _verdict(request, ctx, name, None, base, defer(code, detail))
            for name in rubric_model.FRAMEWORKS
        ]
    base["response"] = judgement.content[:RESPONSE_CHARS]
    base["usage"] = {"prompt_tokens": judgement.prompt_tokens,
                     "completion_tokens": judgement.completion_tokens,
                     "attempts": judgement.attempts}  # fmt: skip
    try:
        reply = rubric_model.parse_reply(judgement.content)
    except rubric_model.InvalidRubricReply as exc:
        if judgement.first_invalid is not None:
            base["first_response"] = judgement.first_invalid[:RESPONSE_CHARS]
        frameworks = rubric_model.invalid_metrics(str(exc))
    else:
        summary, article = parse(list(texts(request)))
        frameworks = rubric_model.metrics(reply, summary, article)
    return [
        _verdict(request, ctx, name, frameworks[name], base, None)
        for name in rubric_model.FRAMEWORKS
    ]


def _verdict(
    request: JudgeRequest,
    ctx: RubricContext,
    framework: str,
    metrics: dict[str, dict[str, Any]] | None,
    base: dict[str, Any],
    decided: tuple[Any, Any] | None,
) -> JudgeVerdict:
    threshold = ctx.judges.threshold_for(framework)
    evidence = {"judge": framework, **base}
    score: float | None = None
    if metrics is not None:
        result = scored(metrics, threshold)
        evidence["caps_applied"], evidence["errors"] = result.caps, result.errors
        score, decided = result.score, result.decision
    assert decided is not None
    event = request.event
    return JudgeVerdict(
        verdict_id=verdict_id(event.id, VerdictKind.JUDGE_LLM, ctx.config_digest, framework),
        kind=VerdictKind.JUDGE_LLM,
        input_id=event.id,
        score=score,
        threshold=threshold,
        decision=decided[0],
        reasons=[decided[1]],
        evidence=evidence,
        config_digest=ctx.config_digest,
        tokenizer_version=f"{rubric_model.PROMPT_VERSION}+{ctx.pipeline_version}",
        environment_digest=ctx.environment_digest,
        model=event.model,
        tenant=event.tenant,
        group=None,
        event_ts=event.ts,
        judge=framework,
        metrics=trim_evidence(metrics or {}, ctx.judges.max_text_chars),
    )
