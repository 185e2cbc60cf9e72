"""``verdictflow eval answers FILE``: the agents' verdicts for a JSONL file, without a broker.

Each line goes through the answers agents' own pipeline and its consistency messages through
the consistency agent's, so the output equals (byte for byte, per verdict_id) what a worker
emits for the same file replayed in order. Groups of variants that are still open at the end
of the file close as if their window had closed (``closed_by: window``). Malformed lines
become dead-letter records. With ``--jobs N`` the chunks are scored in N processes
(:mod:`~verdictflow.scoring_jobs.batch.answer_chunks`) and the output is the same.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from verdictflow.evaluators import variant_groups as vg
from verdictflow.models.codec import DEFAULT_MAX_EVENT_BYTES, encode
from verdictflow.models.dead_letter import DeadLetter
from verdictflow.models.verdicts import Verdict
from verdictflow.nlp import DEFAULT_VOCAB_LIMIT
from verdictflow.pipelines.groups import apply_group_message
from verdictflow.scoring_jobs.batch.answer_chunks import ChunkScorers, score_chunk
from verdictflow.scoring_setup import Scoring
from verdictflow.streams.records import numbered_records
from verdictflow.streams.topics import CONSISTENCY_GROUPS, DEAD_LETTERS

T = TypeVar("T")
#: Lines scored together: one ``nlp.pipe`` batch, and the unit handed to a scoring process.
CHUNK_LINES = 64


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
    chunk_size: int = CHUNK_LINES,
    vocab_limit: int = DEFAULT_VOCAB_LIMIT,
    processes: ChunkScorers | None = None,
    scored: Callable[[int], None] | None = None,
) -> Iterator[Output]:
    """Verdicts and dead letters for raw JSONL lines, in the order they become final.

    Each chunk of ``chunk_size`` lines goes through the answers agents' pipeline
    (:func:`~verdictflow.scoring_jobs.batch.answer_chunks.score_chunk`: every kind, one
    ``nlp.pipe`` per chunk as the agent does per batch), in this process or, given
    ``processes`` (which have their own ``max_bytes`` and ``vocab_limit``), in those, with
    the results in chunk order, so the outputs are the same. Its consistency messages go to
    an in-memory group store here, as the consistency agent's would. ``scored`` learns how
    many lines each chunk held, once it is scored.
    """
    ctx = scoring.ctx
    # Offline there is no wall clock: every answer arrives at time 0 and the end of the input
    # closes the windows still open (closed_by: window), as if their time had come.
    store = vg.GroupStore({}, ctx, forget_seconds=math.inf)
    chunks = _chunks(numbered_records(lines, source), chunk_size)
    results = (
        processes.map(chunks)
        if processes is not None
        else (
            score_chunk(chunk, scoring, max_bytes=max_bytes, vocab_limit=vocab_limit)
            for chunk in chunks
        )
    )
    for chunk_outputs in results:
        if scored is not None:
            scored(len(chunk_outputs))
        for topic, _key, value in (output for outputs in chunk_outputs for output in outputs):
            if topic == CONSISTENCY_GROUPS:
                if (closed := apply_group_message(store, value, now=0.0)) is not None:
                    yield Output(verdict=closed)
            elif topic == DEAD_LETTERS:
                yield Output(dead_letter=DeadLetter.model_validate_json(value))
            else:
                yield Output(verdict=Verdict.model_validate_json(value))
    for key in list(store.table):
        if (closed := store.on_close(key, math.inf)) is not None:
            yield Output(verdict=closed)


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
