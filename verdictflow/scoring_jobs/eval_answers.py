"""``verdictflow eval answers FILE``: the agents' verdicts for a JSONL file, without a broker.

Each line is scored exactly as the answers and consistency agents would score it, so the
output equals (byte for byte, per verdict_id) what a worker emits for the same file replayed in
order. Groups of variants that are still open at the end of the file close as if their window
had closed (``closed_by: window``). Malformed lines become dead-letter records.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from verdictflow.evaluators import variant_groups as vg
from verdictflow.evaluators.answer_verdicts import ScoringContext, score_groundedness
from verdictflow.exceptions import InvalidEvent
from verdictflow.models.codec import DEFAULT_MAX_EVENT_BYTES, decode, encode
from verdictflow.models.dead_letter import DeadLetter
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Verdict
from verdictflow.streams.records import Record, dead_letter


@dataclass(frozen=True, slots=True)
class Output:
    """One output of offline evaluation: a verdict or a dead letter."""

    verdict: Verdict | None = None
    dead_letter: DeadLetter | None = None


def evaluate_answers(
    lines: Iterable[bytes],
    ctx: ScoringContext,
    *,
    source: str = "file",
    max_bytes: int = DEFAULT_MAX_EVENT_BYTES,
) -> Iterator[Output]:
    """Verdicts and dead letters for raw JSONL lines, in the order they become final."""
    # Offline there is no wall clock: every answer arrives at time 0 and the end of the input
    # closes the windows still open (closed_by: window), as if their time had come.
    store = vg.GroupStore({}, ctx, forget_seconds=math.inf)
    for line_no, raw in enumerate(lines, start=1):
        raw = raw.rstrip(b"\r\n")
        if not raw.strip():
            continue
        record = Record(topic=source, partition=None, offset=line_no, key=None, value=raw)
        try:
            event = decode(raw, AnswerEvent, max_bytes=max_bytes)
        except InvalidEvent as exc:
            yield Output(dead_letter=dead_letter(record, exc))
            continue
        yield Output(verdict=score_groundedness(event, ctx))
        if vg.is_self_contained(event):
            yield Output(verdict=vg.score_self_contained(event, ctx))
        elif (verdict := store.on_answer(event, now=0.0)) is not None:
            yield Output(verdict=verdict)
    for key in list(store.table):
        if (verdict := store.on_close(key, math.inf)) is not None:
            yield Output(verdict=verdict)


def expected_verdicts(lines: Iterable[bytes], ctx: ScoringContext) -> dict[str, bytes]:
    """verdict_id -> encoded verdict for ``lines``: what a worker must emit for them."""
    return {
        o.verdict.verdict_id: encode(o.verdict)
        for o in evaluate_answers(lines, ctx)
        if o.verdict is not None
    }
