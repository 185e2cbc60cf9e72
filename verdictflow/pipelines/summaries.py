"""Judging a batch of ``summaries`` records: what the summaries agent and the offline
``eval summaries`` / ``calibrate --kind judge.*`` jobs share (decode, judge, dead-letter), kept
outside the agent so the offline jobs never import Faust.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from verdictflow.evaluators.judge.text import parse_all
from verdictflow.evaluators.judge.verdicts import JudgeContext, Parser, score_batch
from verdictflow.exceptions import InvalidEvent
from verdictflow.models.codec import decode, encode
from verdictflow.models.events import SummaryEvent
from verdictflow.pipelines import Output
from verdictflow.pipelines.isolation import score_isolating_failures
from verdictflow.streams.records import Record, dead_letter
from verdictflow.streams.topics import DEAD_LETTERS, verdict_topic

logger = logging.getLogger(__name__)

#: Summaries per batch at most: a batch of long articles is seconds of spaCy work.
MAX_BATCH = 64


def spacy_parser() -> tuple[Parser, str]:
    """A batched parser over the process's spaCy pipeline, and the pipeline's version."""
    from verdictflow.nlp import load_pipeline, pipeline_version

    nlp = load_pipeline()
    return (lambda texts: parse_all(nlp, texts)), pipeline_version(nlp)


def judge_records(
    records: Sequence[Record],
    parse: Parser,
    ctx: JudgeContext,
    *,
    max_bytes: int,
    override: Sequence[str] | None = None,
) -> list[list[Output]]:
    """(topic, key, value) outputs of each record, in order: verdicts or a dead letter.
    ``override`` replaces the events' own choice of judges (offline ``--judge``)."""
    outputs: list[list[Output]] = [[] for _ in records]
    valid: list[tuple[int, SummaryEvent]] = []
    for i, record in enumerate(records):
        try:
            valid.append((i, decode(record.value, SummaryEvent, max_bytes=max_bytes)))
        except InvalidEvent as exc:
            outputs[i] = [(DEAD_LETTERS, record.topic, encode(dead_letter(record, exc)))]
    judged = score_isolating_failures(
        valid,
        lambda batch: score_batch([e for _, e in batch], parse, ctx, override),
        lambda item: records[item[0]].where,
    )
    for (i, _), verdicts in zip(valid, judged, strict=True):
        if isinstance(verdicts, InvalidEvent):
            outputs[i] = [
                (DEAD_LETTERS, records[i].topic, encode(dead_letter(records[i], verdicts)))
            ]
        elif verdicts:
            outputs[i] = [(verdict_topic(v.kind), v.input_id, encode(v)) for v in verdicts]
    return outputs
