"""The judge tier's faithfulness verdict (kind ``faithfulness_llm``): the prompt, the response
contract, and the verdict built from a judge's response. Pure: no client, no I/O (the drivers
in :mod:`verdictflow.judge` ask the judge; this module says what to ask and reads the reply).

The method is the claim-level one of Ragas and DeepEval, in one request: the judge splits the
answer into its atomic claims and decides for each whether the contexts support it, quoting
the span that does. The score is the supported share. The prompt insists on the relations the
cheap tier cannot see (who did what to whom, which of two is larger, which number belongs to
which entity), the reason the tier exists.

**Contract** (:data:`CONTRACT_VERSION`): the message content is one JSON object
``{"claims": [{"claim": str, "supported": bool, "evidence": str}]}`` (pydantic validates it;
unknown fields are ignored). The prompt, its version and the contract's go into the verdict's
``config_digest``; the verdict's evidence records the judge (backend, model), the prompt
version, the response as received and its token counts (docs/verdicts/faithfulness_llm.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from verdictflow.environment import environment_digest
from verdictflow.evaluators import text_normalise
from verdictflow.evaluators.answer_verdicts import VerdictMeta, verdict_id
from verdictflow.evaluators.policy import defer, gate
from verdictflow.models.events import AnswerEvent
from verdictflow.models.judge import Judgement, JudgeRequest
from verdictflow.models.verdicts import Decision, Reason, ReasonCode, Verdict, VerdictKind

PROMPT_VERSION = "faithfulness_llm/1"
CONTRACT_VERSION = "claims/1"
#: Characters of the judge's response kept in the verdict's evidence.
RESPONSE_CHARS = 16_000
#: Claims kept in the evidence (all are counted in the score).
MAX_CLAIMS = 64

SYSTEM_PROMPT = """\
You check whether an answer is supported by the context passages it was given.

1. Split the answer into its atomic factual claims: one fact each, at most 20, in the answer's \
order. Leave out greetings, hedges and statements about the conversation itself.
2. For each claim decide whether the contexts support it. A claim is supported only when the \
contexts state it or it follows from them directly. It is NOT supported when it adds a fact \
the contexts do not state, or when it uses the right words in the wrong relation: who did what \
to whom (a subsidiary buying its parent), which of two things is larger, longer, earlier or \
first, which number, date or share belongs to which entity, what caused what, or a negation \
the contexts do not have.
3. For a supported claim, quote verbatim the shortest span of the contexts that supports it. \
For an unsupported claim, quote the span that contradicts it, or give "" when none does.

Reply with one JSON object and nothing else:
{"claims": [{"claim": "<the claim>", "supported": true, "evidence": "<verbatim quote>"}]}"""


class Claim(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    claim: str
    supported: bool
    evidence: str = ""


class ClaimsResponse(BaseModel):
    """The response contract (see the module doc)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    claims: list[Claim]


class InvalidResponse(ValueError):  # noqa: N818 - reads as what it is at call sites
    """A judge response that breaks the contract."""


def messages(event: AnswerEvent) -> list[dict[str, str]]:
    """The chat messages for one answer (its text normalised first)."""
    contexts = [text_normalise.clean(c.text) for c in event.context_passages if c.text.strip()]
    numbered = "\n\n".join(f"[{i}] {text}" for i, text in enumerate(contexts, start=1))
    question = text_normalise.clean(event.query).strip() or "(none given)"
    user = (
        f"Question:\n{question}\n\nContexts:\n{numbered}\n\n"
        f"Answer:\n{text_normalise.clean(event.answer)}"
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def prompt_chars(event: AnswerEvent) -> int:
    """Characters of the prompt :func:`messages` builds."""
    return sum(len(m["content"]) for m in messages(event))


def parse_response(content: str) -> ClaimsResponse:
    """The claims of a response, or :class:`InvalidResponse` saying what is wrong. A reply
    wrapped in a Markdown code fence is read as the JSON inside it."""
    text = content.strip()
    if text.startswith("```"):
        text = text.strip("`")
        text = text[text.find("{") :] if "{" in text else text
    try:
        return ClaimsResponse.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "response"
        raise InvalidResponse(f"{where}: {first['msg']}"[:300]) from None


@dataclass(frozen=True)
class JudgeContext:
    """What a ``faithfulness_llm`` verdict depends on besides its input: the judge (backend and
    model), the prompt and contract, and the threshold; all in ``config_digest``."""

    backend: str
    model: str
    threshold: float
    prompt_version: str = PROMPT_VERSION
    config_digest: str = field(init=False)
    environment_digest: str = field(init=False)

    def __post_init__(self) -> None:
        material = {
            "kind": VerdictKind.FAITHFULNESS_LLM.value,
            "backend": self.backend,
            "model": self.model,
            "prompt": self.prompt_version,
            "system_prompt": hashlib.sha256(SYSTEM_PROMPT.encode()).hexdigest(),
            "contract": CONTRACT_VERSION,
            "normalisation": text_normalise.VERSION,
            "threshold": self.threshold,
        }
        digest = hashlib.sha256(orjson.dumps(material, option=orjson.OPT_SORT_KEYS)).hexdigest()
        object.__setattr__(self, "config_digest", digest)
        object.__setattr__(self, "environment_digest", environment_digest())


def judge_verdict_id(request: JudgeRequest, ctx: JudgeContext) -> str:
    """The verdict's id: the reviewed input's id, the kind, the scope of a summary, the
    judge's digest; the same for every delivery of the request, judged or deferred."""
    qualifier = "summary" if request.scope == "summary" else None
    return verdict_id(request.event.id, VerdictKind.FAITHFULNESS_LLM, ctx.config_digest, qualifier)


def build_verdict(
    request: JudgeRequest,
    ctx: JudgeContext,
    judgement: Judgement | None,
    deferral: tuple[ReasonCode, str] | None = None,
) -> Verdict:
    """The verdict from a judgement (or a DEFER for a request the judge was not asked)."""
    evidence: dict[str, Any] = {
        "reviews": request.reviews.model_dump(mode="json"),
        "scope": request.scope,
        "priority": request.priority,
        "judge": {
            "backend": ctx.backend,
            "model": ctx.model,
            "prompt_version": ctx.prompt_version,
            "contract": CONTRACT_VERSION,
        },
    }
    score: float | None = None
    extra: list[Reason] = []
    if judgement is None:
        decision = defer(*(deferral or (ReasonCode.JUDGE_OUTPUT_INVALID, "no judgement")))
    else:
        evidence["response"] = judgement.content[:RESPONSE_CHARS]
        evidence["usage"] = {
            "prompt_tokens": judgement.prompt_tokens,
            "completion_tokens": judgement.completion_tokens,
            "attempts": judgement.attempts,
        }
        try:
            claims = parse_response(judgement.content).claims
        except InvalidResponse as exc:
            if judgement.first_invalid is not None:
                evidence["first_response"] = judgement.first_invalid[:RESPONSE_CHARS]
            decision = defer(ReasonCode.JUDGE_OUTPUT_INVALID, f"the judge's reply: {exc}")
        else:
            evidence.update(_claims_evidence(claims, request.event))
            if not claims:
                decision = defer(ReasonCode.NO_ANCHORS, "the judge found no claim to check")
            else:
                score = sum(c.supported for c in claims) / len(claims)
                decision = gate(score, ctx.threshold)
                if decision[0] is Decision.FAIL:
                    extra.append(_unsupported_reason(claims))
    return Verdict(
        verdict_id=judge_verdict_id(request, ctx),
        kind=VerdictKind.FAITHFULNESS_LLM,
        input_id=request.event.id,
        score=score,
        threshold=ctx.threshold,
        decision=decision[0],
        reasons=[decision[1], *extra],
        evidence=evidence,
        config_digest=ctx.config_digest,
        tokenizer_version=f"{ctx.prompt_version}+{text_normalise.VERSION}",
        environment_digest=ctx.environment_digest,
        **_meta(request.event),
    )


def _meta(event: AnswerEvent) -> dict[str, Any]:
    meta = VerdictMeta.of(event)
    return {
        "model": meta.model,
        "tenant": meta.tenant,
        "group": meta.group,
        "event_ts": meta.event_ts,
        "trace_id": meta.trace_id,
        "span_id": meta.span_id,
    }


def _unsupported_reason(claims: Sequence[Claim]) -> Reason:
    bad = [c.claim for c in claims if not c.supported]
    return Reason(
        code=ReasonCode.UNSUPPORTED_DETAIL,
        detail=f"{len(bad)} of {len(claims)} claims unsupported, first: {bad[0][:160]!r}",
    )


def _claims_evidence(claims: Sequence[Claim], event: AnswerEvent) -> dict[str, Any]:
    """Each claim with where its quote is in the contexts (context index and character span
    in the text as sent), and where the claim itself is in the answer, when found verbatim."""
    contexts = [c.text for c in event.context_passages if c.text.strip()]
    out = []
    for c in claims[:MAX_CLAIMS]:
        record: dict[str, Any] = {
            "claim": c.claim[:500],
            "supported": c.supported,
            "evidence": c.evidence[:500],
        }
        quote = _find(c.evidence, contexts)
        if quote is not None:
            record["context"] = {"index": quote[0], "start": quote[1], "end": quote[2]}
        in_answer = _find(c.claim, [event.answer])
        if in_answer is not None:
            record["start"], record["end"] = in_answer[1], in_answer[2]
            record["text"] = event.answer[in_answer[1] : in_answer[2]][:500]
        out.append(record)
    return {
        "claims": out,
        "claim_count": len(claims),
        "supported_count": sum(c.supported for c in claims),
    }


def _find(quote: str, texts: Sequence[str]) -> tuple[int, int, int] | None:
    """Where ``quote`` occurs in ``texts`` (index, start, end in the original text), compared
    after normalisation and case folding; None when it does not occur verbatim."""
    wanted = text_normalise.clean(quote).strip()
    if len(wanted) < 3:
        return None
    for i, text in enumerate(texts):
        clean = text_normalise.normalise(text)
        folded = clean.text.lower()
        same_length = len(folded) == len(clean.text)  # else offsets would shift: match as is
        at = (folded if same_length else clean.text).find(wanted.lower() if same_length else wanted)
        if at >= 0:
            start, end = clean.original_span(at, at + len(wanted))
            return i, start, end
    return None
