"""Summaries agent: judge each SummaryEvent with Twin-Lock and/or Judge-Lock, and score its
faithfulness to its article.

Records are taken in batches (``take_events``); the valid events of a batch are parsed by
spaCy in one ``nlp.pipe`` call (each distinct text once), judged, and their verdicts sent to
``verdicts.judge`` keyed by summary id; then each summary's faithfulness verdict goes to
``verdicts.faithfulness`` (policy ``faithfulness.summaries``, on by default), from a second
``nlp.pipe`` over the summaries alone, the articles indexed without the neural pipeline.
Malformed records go to ``dead-letters``; an event whose judging or faithfulness raises is
dead-lettered as ``internal_error`` with the verdicts it did get (the stream never stops on
input). The batch is acked only after every send was delivered; a delivery failure exits
without committing (``stop_without_commit``), so nothing is lost.

The spaCy pipeline is loaded on the first batch, not at app creation, so workers and tests
that never see a summary do not pay for it; the judges' parser and the faithfulness analyzer
share the process's one pipeline (``verdictflow.nlp.load_pipeline``), and the analyzer (with
its own cache of article indexes, :data:`ARTICLE_CACHE_BYTES`) is built on that first batch too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import faust

from verdictflow.agents.names import SUMMARIES_AGENT
from verdictflow.evaluators.answer_analysis import AnswerAnalyzer, IndexStore
from verdictflow.evaluators.answer_verdicts import ScoringContext
from verdictflow.evaluators.policy import Policy
from verdictflow.evaluators.summary_judges.verdicts import JudgeContext, Parser
from verdictflow.nlp import parsing_batch
from verdictflow.pipelines import Output
from verdictflow.pipelines.summaries import MAX_BATCH, judge_records, spacy_parser
from verdictflow.scoring_setup import Scoring, new_analyzer
from verdictflow.settings import Settings
from verdictflow.streams.batch_agent import batch_agent
from verdictflow.streams.outbox import Outbox
from verdictflow.streams.records import Record
from verdictflow.streams.topics import SUMMARIES

logger = logging.getLogger(__name__)


#: Estimated bytes of article indexes the faithfulness analyzer keeps (its own cache, not
#: the NLP tier's: an analyzer is used by one thread at a time). Summaries of one article
#: mostly arrive close together, so a quarter of the answers' cache is plenty.
ARTICLE_CACHE_BYTES = 64 * 1024 * 1024


def summary_analyzer(policy: Policy, store: IndexStore | None = None) -> AnswerAnalyzer:
    """The faithfulness analyzer of the summaries agent (over the answers' context store,
    when the worker has one: an article is a context like any other)."""
    return new_analyzer(policy, cache_bytes=ARTICLE_CACHE_BYTES, store=store)


def register(
    app: faust.App,
    topics: Mapping[str, Any],
    new_outbox: Callable[[], Outbox],
    ctx: ScoringContext,
    settings: Settings,
    parser: Callable[[], tuple[Parser, str]] = spacy_parser,
    analyzer: Callable[[Policy], AnswerAnalyzer] = summary_analyzer,
) -> Any:
    """Declare the summaries agent on ``app``; ``parser`` and ``analyzer`` are called on the
    first batch."""
    outbox = new_outbox()
    state: dict[str, Any] = {}

    def judge_context() -> tuple[Parser, JudgeContext, Scoring | None]:
        if "ctx" not in state:
            parse, version = parser()
            state["parse"], state["ctx"] = (
                parse,
                JudgeContext(ctx.policy.judge, version, ctx.policy.budget),
            )
            on = ctx.policy.faithfulness.summaries
            state["faithfulness"] = Scoring(ctx, analyzer(ctx.policy)) if on else None
        return state["parse"], state["ctx"], state["faithfulness"]

    def judge_batch(records: list[Record]) -> list[list[Output]]:
        with parsing_batch(settings.spacy_vocab_limit):  # spaCy's vocabulary bounded
            parse, jctx, faithfulness = judge_context()
            return judge_records(
                records, parse, jctx, max_bytes=settings.max_event_bytes, faithfulness=faithfulness
            )

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
        name=SUMMARIES_AGENT,
        settings=settings,
        outbox=outbox,
        handle=handle,
        batch_size=size,
    )
