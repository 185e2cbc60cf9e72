"""Judging a batch of ``summaries`` records: what the summaries agent and the offline
``eval summaries`` job share (decode, judge, score faithfulness, dead-letter), kept outside the
agent so the offline jobs never import Faust. (``calibrate --kind judge.*`` shares
:func:`spacy_parser` and calls the judges' ``score_batch`` itself.)
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from verdictflow.evaluators.summary_faithfulness import as_answer, score_summaries
from verdictflow.evaluators.summary_judges.text import parse_all
from verdictflow.evaluators.summary_judges.verdicts import JudgeContext, Parser, score_batch
from verdictflow.exceptions import InvalidEvent
from verdictflow.models.codec import decode, encode
from verdictflow.models.events import SummaryEvent
from verdictflow.models.verdicts import Verdict
from verdictflow.pipelines import Output
from verdictflow.pipelines.escalations import judge_requests, rubric_request
from verdictflow.pipelines.isolation import score_isolating_failures
from verdictflow.streams.records import Record, dead_letter
from verdictflow.streams.topics import DEAD_LETTERS, verdict_topic

if TYPE_CHECKING:
    from verdictflow.scoring_setup import Scoring

logger = logging.getLogger(__name__)

#: Summaries per batch at most: a batch of long articles is seconds of spaCy work.
MAX_BATCH = 64


def spacy_parser() -> tuple[Parser, str]:
    """A batched parser over the process's spaCy pipeline, and the pipeline's version. The
    parser asks for the pipeline at each call, so it follows a reload
    (``verdictflow.nlp.parsing_batch``) instead of keeping the grown one alive."""
    from verdictflow.nlp import load_pipeline, pipeline_version

    return (lambda texts: parse_all(load_pipeline(), texts)), pipeline_version(load_pipeline())


def judge_records(
    records: Sequence[Record],
    parse: Parser,
    ctx: JudgeContext,
    *,
    max_bytes: int,
    override: Sequence[str] | None = None,
    faithfulness: Scoring | None = None,
) -> list[list[Output]]:
    """(topic, key, value) outputs of each record, in order: its judge verdicts, then its
    faithfulness verdict (with ``faithfulness``, unless the policy's ``faithfulness.summaries``
    is off), or a dead letter. ``override`` replaces the events' own choice of judges (offline
    ``--judge``); it does not touch faithfulness.

    The judges and faithfulness are isolated from each other (``score_isolating_failures``
    each): an event that makes one of them raise still gets the other's verdicts, and one
    ``internal_error`` dead letter naming what failed."""
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
    faithful: list[list[Verdict] | InvalidEvent] = [[] for _ in valid]
    if faithfulness is not None and faithfulness.ctx.policy.faithfulness.summaries:
        scoring = faithfulness
        faithful = score_isolating_failures(
            valid,
            lambda batch: [
                [v] for v in score_summaries([e for _, e in batch], scoring.analyzer, scoring.ctx)
            ],
            lambda item: f"{records[item[0]].where} (faithfulness)",
        )
    for (i, event), verdicts, faith in zip(valid, judged, faithful, strict=True):
        failed: list[str] = []
        for stage, result in (("", verdicts), ("faithfulness: ", faith)):
            if isinstance(result, InvalidEvent):
                failed.append(stage + result.detail)
            else:
                outputs[i] += [(verdict_topic(v.kind), v.input_id, encode(v)) for v in result]
        if faithfulness is not None:
            policy = faithfulness.ctx.policy.judge_tier  # the judge tier reviews escalations
            if not isinstance(faith, InvalidEvent):
                outputs[i] += judge_requests(as_answer(event), faith, policy, "summary")
            if not isinstance(verdicts, InvalidEvent):  # and runs the rubric where asked
                outputs[i] += rubric_request(as_answer(event), verdicts, policy)
        if failed:
            error = InvalidEvent("internal_error", "; ".join(failed)[:500])
            outputs[i].append(
                (DEAD_LETTERS, records[i].topic, encode(dead_letter(records[i], error)))
            )
    return outputs
