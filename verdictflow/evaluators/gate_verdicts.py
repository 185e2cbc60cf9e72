"""What the inline gate (``POST /v1/check``, :mod:`verdictflow.ingest.gate`) says that the
stream never does: a kind it could not finish, and a streamed answer read so far.

The gate's verdicts for a final answer are the stream's own (:func:`~verdictflow.evaluators.
answer_batch.score_answers`, same ids, same bytes). The verdicts built here are not, so each
gets its own verdict id (the stream's id qualified by why: ``gate_timeout``, ``gate_error``,
``partial.<seq>``): a consumer that deduplicates on verdict ids can never take a gate's DEFER
or a provisional verdict for the stream's verdict of that input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from verdictflow.evaluators.answer_verdicts import ScoringContext, verdict_id
from verdictflow.evaluators.deferrals import Deferral, deferred_verdict
from verdictflow.evaluators.kinds import KindSpec, Need, spec_for
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Decision, Reason, ReasonCode, Verdict, VerdictKind

#: Kinds that can only be judged on the whole answer: a streamed answer's prefix has not yet
#: had the chance to cover the question's keywords, so its completeness DEFERs until the end.
WHOLE_ANSWER_KINDS = frozenset({VerdictKind.COMPLETENESS})


def qualified(verdict: Verdict, qualifier: str) -> Verdict:
    """``verdict`` under its own id: the stream's id for its input and kind, qualified."""
    own = verdict_id(verdict.input_id, verdict.kind, verdict.config_digest, qualifier)
    return verdict.model_copy(update={"verdict_id": own})


def not_scored(
    kind: KindSpec,
    event: AnswerEvent,
    ctx: ScoringContext,
    code: ReasonCode,
    detail: str,
    evidence: dict[str, Any],
) -> Verdict:
    """The gate's DEFER of ``kind`` for an answer it did not finish scoring (``gate_timeout``,
    ``gate_error``): never a PASS, and never under the stream's verdict id."""
    why = Deferral(code, detail, evidence)
    parses = Need.SPACY in kind.needs
    deferred = deferred_verdict(kind.kind, kind.threshold(ctx.policy), parses, event, why, ctx)
    return qualified(deferred, code.value)


def provisional(
    verdicts: Sequence[Verdict], event: AnswerEvent, ctx: ScoringContext, seq: int
) -> list[Verdict]:
    """The verdicts of a streamed answer's chunk ``seq`` (the answer so far), as what is known:
    each is scored over the text so far and says so (a ``partial_answer`` reason), and a kind
    that needs the whole answer (completeness) DEFERs ``partial_answer`` instead."""
    note = Reason(
        code=ReasonCode.PARTIAL_ANSWER,
        detail=f"scored over the answer so far (chunk {seq}); the final chunk's verdicts count",
    )
    out = []
    for verdict in verdicts:
        if verdict.kind in WHOLE_ANSWER_KINDS:
            spec = spec_for(verdict.kind.value)
            why = Deferral(
                ReasonCode.PARTIAL_ANSWER,
                f"{verdict.kind.value} is judged on the whole answer; chunk {seq} is a part",
                {"seq": seq, "answer_chars": len(event.answer)},
            )
            parses = Need.SPACY in spec.needs
            deferred = deferred_verdict(verdict.kind, verdict.threshold, parses, event, why, ctx)
            out.append(qualified(deferred, f"partial.{seq}"))
            continue
        reasons = [*verdict.reasons, note]
        out.append(qualified(verdict.model_copy(update={"reasons": reasons}), f"partial.{seq}"))
    return out


def overall(verdicts: Sequence[Verdict]) -> Decision:
    """The gate's one word: FAIL if any verdict fails, else DEFER if any defers (fail closed:
    what was not scored is not passed), else PASS."""
    decisions = {v.decision for v in verdicts}
    if Decision.FAIL in decisions:
        return Decision.FAIL
    if Decision.DEFER in decisions or not verdicts:
        return Decision.DEFER
    return Decision.PASS
