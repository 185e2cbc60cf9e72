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
from typing import TypeVar

from verdictflow.evaluators import variant_groups as vg
from verdictflow.evaluators.answer_batch import score_answers
from verdictflow.exceptions import InvalidEvent
from verdictflow.models.codec import DEFAULT_MAX_EVENT_BYTES, decode, encode
from verdictflow.models.dead_letter import DeadLetter
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Verdict
from verdictflow.scoring_setup import Scoring
from verdictflow.streams.records import Record, dead_letter

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Output:
    """One output of offline evaluation: a verdict or a dead letter."""

    verdict: Verdict | None = None
    dead_letter: DeadLetter | None = None


def evaluate_answers(
    lines: Iterable[bytes],
    scoring: Scoring,
    *,
    source: str = "file",
    max_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    chunk_size: int = 64,
) -> Iterator[Output]:
    """Verdicts and dead letters for raw JSONL lines, in the order they become final.

    Lines are parsed ``chunk_size`` at a time (one ``nlp.pipe`` per chunk, as the agent does
    per batch); outputs keep input order.
    """
    ctx = scoring.ctx
    # Offline there is no wall clock: every answer arrives at time 0 and the end of the input
    # closes the windows still open (closed_by: window), as if their time had come.
    store = vg.GroupStore({}, ctx, forget_seconds=math.inf)
    for chunk in _chunks(_decoded(lines, source, max_bytes), chunk_size):
        events = [item for item in chunk if isinstance(item, AnswerEvent)]
        scored = iter(score_answers(events, ctx, scoring.analyzer))
        for item in chunk:
            if isinstance(item, DeadLetter):
                yield Output(dead_letter=item)
                continue
            for verdict in next(scored):
                yield Output(verdict=verdict)
            if vg.is_self_contained(item):
                yield Output(verdict=vg.score_self_contained(item, ctx))
            elif (closed := store.on_answer(item, log_time=0.0)) is not None:
                yield Output(verdict=closed)
    for key in list(store.table):
        if (closed := store.on_close(key, math.inf)) is not None:
            yield Output(verdict=closed)


def _decoded(
    lines: Iterable[bytes], source: str, max_bytes: int
) -> Iterator[AnswerEvent | DeadLetter]:
    for line_no, raw in enumerate(lines, start=1):
        raw = raw.rstrip(b"\r\n")
        if not raw.strip():
            continue
        record = Record(topic=source, partition=None, offset=line_no, key=None, value=raw)
        try:
            yield decode(raw, AnswerEvent, max_bytes=max_bytes)
        except InvalidEvent as exc:
            yield dead_letter(record, exc)


def _chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    chunk: list[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def expected_verdicts(lines: Iterable[bytes], scoring: Scoring) -> dict[str, bytes]:
    """verdict_id -> encoded verdict for ``lines``: what a worker must emit for them."""
    return {
        o.verdict.verdict_id: encode(o.verdict)
        for o in evaluate_answers(lines, scoring)
        if o.verdict is not None
    }
