"""Answers agents, one per tier: decode each AnswerEvent and emit the verdicts of that tier.

- ``vf-answers`` (lexical tier, the worker's main consumer group): groundedness, relevance and
  completeness verdicts; a malformed value goes to ``dead-letters`` with the reason and source
  offset; the consistency set is scored right here when the event carries it whole (inline
  variants, or no request_id), otherwise the event is forwarded, keyed by request, to the
  consistency agent that collects variants across events.
- ``vf-answers-nlp`` (NLP tier, its own consumer group ``<app id>-nlp``): hallucination
  verdicts, spaCy once per batch over the batch's answers and new contexts, in a thread so the
  event loop (and the lexical tier sharing it in ``--tier all``) keeps running. Malformed values
  are skipped: the lexical tier dead-letters them, once.

Records are taken in batches (:mod:`verdictflow.streams.batch_agent`) so per-batch costs are
paid once, and offsets are acked only after the batch's results were delivered (at-least-once;
verdict ids make it idempotent).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import faust

from verdictflow.agents.names import TIER_AGENTS
from verdictflow.evaluators.answer_analysis import AnswerAnalyzer
from verdictflow.evaluators.answer_verdicts import ScoringContext
from verdictflow.evaluators.kinds import Tier
from verdictflow.nlp import DEFAULT_VOCAB_LIMIT, parsing_batch
from verdictflow.pipelines import Output
from verdictflow.pipelines.answers import answer_outputs
from verdictflow.settings import Settings
from verdictflow.streams.batch_agent import batch_agent
from verdictflow.streams.outbox import Outbox
from verdictflow.streams.records import Record
from verdictflow.streams.source_progress import SourceProgress

logger = logging.getLogger(__name__)


async def process_answers(
    records: Sequence[Record],
    outbox: Outbox,
    ctx: ScoringContext,
    analyzer: AnswerAnalyzer,
    *,
    max_bytes: int,
    tier: Tier = Tier.LEXICAL,
    vocab_limit: int = DEFAULT_VOCAB_LIMIT,
) -> None:
    """Score a batch of ``answers`` records for ``tier`` (:func:`answer_outputs`, which never
    raises on bad input) and send every output, in record order. Sends are outside its net on
    purpose: a producer failure stops the agent before the offset is committed, so the
    records are processed again."""

    def outputs() -> list[list[Output]]:
        return answer_outputs(records, ctx, analyzer, max_bytes=max_bytes, tier=tier)

    def parsed_outputs() -> list[list[Output]]:
        with parsing_batch(vocab_limit):  # spaCy's vocabulary bounded between batches
            return outputs()

    # spaCy holds the CPU for up to seconds per batch: off the event loop in the NLP tier.
    results = await asyncio.to_thread(parsed_outputs) if tier is Tier.NLP else outputs()
    for record, record_outputs in zip(records, results, strict=True):
        headers = {"vf-source": record.where.encode()}
        for topic, key, value in record_outputs:
            await outbox.send(topic, key, value, headers)


def register(
    app: faust.App,
    topics: Mapping[str, Any],
    new_outbox: Callable[[], Outbox],
    ctx: ScoringContext,
    settings: Settings,
    analyzer: AnswerAnalyzer,
    tier: Tier,
    progress: SourceProgress | None = None,
) -> Any:
    """Declare ``tier``'s answers agent on ``app``; ``progress`` (lexical tier) learns what it
    has forwarded to the consistency agent."""
    outbox = new_outbox()

    async def handle(events: Sequence[Any], records: Sequence[Record]) -> None:
        await process_answers(
            records, outbox, ctx, analyzer, max_bytes=settings.max_event_bytes, tier=tier,
            vocab_limit=settings.spacy_vocab_limit,
        )  # fmt: skip

    return batch_agent(
        app,
        topics["answers"],
        name=TIER_AGENTS[tier],
        settings=settings,
        outbox=outbox,
        handle=handle,
        delivered=None if progress is None else progress.forwarded,  # watermark after delivery
    )
