"""Summaries agent: judge each SummaryEvent with Twin-Lock and/or Judge-Lock.

Records are taken in batches (``take_events``); the valid events of a batch are parsed by
spaCy in one ``nlp.pipe`` call (each distinct text once), judged, and their verdicts sent to
``verdicts.judge`` keyed by summary id. Malformed records go to ``dead-letters``; an event
whose judging raises is dead-lettered as ``internal_error`` (the stream never stops on input).
The batch is acked only after every send was delivered; a delivery failure exits without
committing (``stop_without_commit``), so nothing is lost.

The spaCy pipeline is loaded on the first batch, not at app creation, so workers and tests
that never see a summary do not pay for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import faust

from verdictflow.evaluators.answer_verdicts import ScoringContext
from verdictflow.evaluators.judge.verdicts import JudgeContext, Parser
from verdictflow.pipelines import Output
from verdictflow.pipelines.summaries import MAX_BATCH, judge_records, spacy_parser
from verdictflow.streams.batch_agent import batch_agent
from verdictflow.streams.outbox import Outbox
from verdictflow.streams.records import Record
from verdictflow.streams.settings import Settings
from verdictflow.streams.topics import SUMMARIES

logger = logging.getLogger(__name__)


def register(
    app: faust.App,
    topics: Mapping[str, Any],
    new_outbox: Callable[[], Outbox],
    ctx: ScoringContext,
    settings: Settings,
    parser: Callable[[], tuple[Parser, str]] = spacy_parser,
) -> Any:
    """Declare the summaries agent on ``app``."""
    outbox = new_outbox()
    state: dict[str, Any] = {}

    def judge_context() -> tuple[Parser, JudgeContext]:
        if "ctx" not in state:
            parse, version = parser()
            state["parse"], state["ctx"] = parse, JudgeContext(ctx.policy.judge, version)
        return state["parse"], state["ctx"]

    def judge_batch(records: list[Record]) -> list[list[Output]]:
        parse, jctx = judge_context()
        return judge_records(records, parse, jctx, max_bytes=settings.max_event_bytes)

    size = min(settings.batch_size, MAX_BATCH)

    async def handle(events: Sequence[Any], records: Sequence[Record]) -> None:
        # spaCy is CPU-bound for up to seconds per batch: off the event loop, so consumer
        # heartbeats (6 s session timeout on the embedded broker) keep flowing. A setup failure
        # (model load, memory) raises into batch_agent, which stops without acking the batch.
        results = await asyncio.to_thread(judge_batch, list(records))
        for record, outputs in zip(records, results, strict=True):
            headers = {"vf-source": record.where.encode()}
            for topic, key, value in outputs:
                await outbox.send(topic, key, value, headers)

    return batch_agent(
        app,
        topics[SUMMARIES],
        name="vf-summaries",
        settings=settings,
        outbox=outbox,
        handle=handle,
        batch_size=size,
    )
