"""The judge tier's agent (``vf-judge``, consumer group ``<app id>-judge``): escalated
verdicts in, ``faithfulness_llm`` verdicts out.

It reads ``internal.judge-requests`` (written by the NLP tier for answers and the summaries
agent for summaries, when the policy escalates their faithfulness verdict; each request holds
the reviewed verdict and the text, so nothing is joined here), keyed by the content's hash.
Per batch, the requests are judged concurrently within the budget, FAILs first
(:class:`~verdictflow.judge_tier.client.JudgeClient`). Each judgement is written to the cache table
``judge-cache`` (keyed by the same content hash, so co-partitioned with its requests) and its
changelog write awaited *before* the verdict is sent: a request delivered again (a restarted
worker, a replay) finds the judgement there and gives the same verdict, byte for byte, without
asking the judge again. Offsets are committed after the verdicts are delivered
(:mod:`verdictflow.streams.batch_agent`), so a worker killed mid-request asks again after its
restart and emits the same verdict id.

The budget is the deployment's, not the process's (:mod:`verdictflow.judge_tier.budget`): what was
sent is kept per request partition in the cache table (:class:`TableLedger`), written and
awaited before the request it pays for is sent, and this worker takes the share of each limit
that its share of the request partitions says.

A request the budget skips gets no verdict (counted, logged). While the endpoint is failing
through every attempt, the request waits and is asked again (``vf_judge_unavailable_total``):
the partition's lag grows, nothing is lost.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import faust
from pydantic import ValidationError

from verdictflow.agents.names import TIER_AGENTS
from verdictflow.evaluators.escalation import Priority
from verdictflow.evaluators.faithfulness_llm import JudgeContext, build_verdict
from verdictflow.evaluators.kinds import Tier
from verdictflow.evaluators.summary_judges.rubric_verdicts import RubricContext, rubric_verdicts
from verdictflow.evaluators.summary_judges.verdicts import Parser
from verdictflow.judge_tier.budget import BudgetSkipped, utc_day
from verdictflow.judge_tier.client import JudgeClient, JudgeUnavailable
from verdictflow.models.alerts import JudgeBudgetAlert
from verdictflow.models.codec import encode
from verdictflow.models.judge import Judgement, JudgeRequest
from verdictflow.models.verdicts import ReasonCode, Verdict
from verdictflow.nlp import DEFAULT_VOCAB_LIMIT, parsing_batch
from verdictflow.pipelines.summaries import spacy_parser
from verdictflow.settings import Settings
from verdictflow.streams.batch_agent import batch_agent
from verdictflow.streams.durable_table import (
    DurableWritesTable,
    current_event,
    durable_table,
    writes_for,
)
from verdictflow.streams.outbox import Outbox
from verdictflow.streams.records import Record
from verdictflow.streams.topics import ALERTS, JUDGE_CACHE_TABLE, JUDGE_REQUESTS, verdict_topic

logger = logging.getLogger(__name__)

AGENT = TIER_AGENTS[Tier.JUDGE]
#: Requests taken per batch at most (or the worker's ``batch_size`` when smaller): enough to
#: keep ``max_concurrency`` requests in flight; a batch's offsets commit when all are sent.
BATCH_SIZE = 32
#: Pause before asking again an endpoint that failed through every attempt.
UNAVAILABLE_PAUSE = 5.0


class TableLedger:
    """What was sent per request partition, in the judge's cache table (changelogged, so it
    moves with its partition and survives restarts; :mod:`verdictflow.judge_tier.budget`): per
    partition, the tokens of each UTC day (``budget/day/<day>/<partition>``) and the requests
    and tokens of each second of the last window (``budget/window/<partition>``). This
    worker's spend is the sum over the partitions it owns; a request is counted in its own
    partition's entries, inside its ``writes_for``."""

    def __init__(
        self, table: Any, owned: Callable[[], frozenset[int]], partitions: int, window: int
    ) -> None:
        self.table = table
        self.owned = owned
        self.partitions = partitions
        self.window = window

    def share(self) -> tuple[int, int]:
        return len(self.owned()), self.partitions

    @staticmethod
    def day_key(day: str, partition: int) -> str:
        return f"budget/day/{day}/{partition}"

    @staticmethod
    def window_key(partition: int) -> str:
        return f"budget/window/{partition}"

    def sent_since(self, since: float) -> tuple[int, int]:
        cutoff = int(since)
        requests = tokens = 0
        for p in self.owned():
            for second, (r, t) in (self.table.get(self.window_key(p)) or {}).items():
                if int(second) >= cutoff:
                    requests, tokens = requests + r, tokens + t
        return requests, tokens

    def day_tokens(self, day: str) -> int:
        return sum(int(self.table.get(self.day_key(day, p)) or 0) for p in self.owned())

    async def record(self, now: float, requests: int, tokens: int) -> None:
        partition = current_event().message.partition  # the request's, from its writes_for
        day = self.day_key(utc_day(now), partition)
        self.table[day] = int(self.table.get(day) or 0) + tokens
        second, oldest = int(now), int(now) - self.window - 1
        seconds = {
            k: v
            for k, v in (self.table.get(self.window_key(partition)) or {}).items()
            if int(k) >= oldest
        }
        r, t = seconds.get(str(second), (0, 0))
        seconds[str(second)] = (r + requests, t + tokens)
        self.table[self.window_key(partition)] = seconds
        await self.table.flush_writes()


class JudgeProcessor:
    """The agent's logic over the cache table and a client."""

    def __init__(
        self,
        table: Any,
        client: JudgeClient,
        ctx: JudgeContext,
        rubric: RubricContext | None = None,
        vocab_limit: int = DEFAULT_VOCAB_LIMIT,
    ) -> None:
        self.table = table
        self.vocab_limit = vocab_limit
        self.client = client
        self.ctx = ctx
        self.rubric = rubric
        self._parse: Parser | None = None
        #: UTC days whose spent budget this worker has raised an alert for (and the alerts
        #: still to send with the next batch's verdicts).
        self._budget_days: set[str] = set()
        self._alerts: list[JudgeBudgetAlert] = []

    async def _verdicts(
        self,
        request: JudgeRequest,
        judgement: Judgement | None,
        deferral: tuple[ReasonCode, str] | None = None,
    ) -> list[Verdict]:
        """The request's verdicts: ``faithfulness_llm``, or the rubric's two ``judge_llm``
        verdicts (parsed with spaCy, off the event loop)."""
        if request.task != "rubric":
            return [build_verdict(request, self.ctx, judgement, deferral)]
        assert self.rubric is not None, "a rubric request needs the rubric context"
        rubric = self.rubric

        def build() -> list[Verdict]:
            with parsing_batch(self.vocab_limit):  # spaCy's vocabulary bounded
                if self._parse is None:
                    self._parse = spacy_parser()[0]  # loaded on the first rubric request
                return list(rubric_verdicts(request, rubric, judgement, self._parse, deferral))

        return await asyncio.to_thread(build)

    def _cached(self, key: str, task: str = "faithfulness") -> Judgement | None:
        raw = self.table.get(key)
        if raw is None:
            return None
        try:
            judgement = Judgement.model_validate(raw)
        except ValidationError:
            return None
        backend = self.client.backend
        same_judge = (judgement.backend, judgement.model, judgement.prompt_version) == (
            backend.name,
            backend.model,
            self.client.prompt_version(task),
        )
        return judgement if same_judge else None

    async def verdict(self, event: Any, key: str, request: JudgeRequest) -> list[Verdict]:
        """The request's verdicts (none when the budget skipped it)."""
        with writes_for(event):
            cached = self._cached(key, request.task)
        if cached is not None:
            self.client.metrics.cache_hits.inc()
            return await self._verdicts(request, cached)
        priority = Priority[request.priority.upper()]
        while True:
            try:
                with writes_for(event):  # the day's spend goes to this request's partition
                    outcome = await self.client.judge(request, priority)
                break
            except BudgetSkipped as exc:
                self.client.metrics.skipped.labels(exc.reason, priority.label).inc()
                if exc.reason == "daily_tokens":
                    self._budget_spent(exc.detail)
                logger.warning(
                    "not judged (%s): %s verdict %s of %s: %s", exc.reason, priority.label,
                    request.reviews.verdict_id, request.event.id, exc.detail,
                )  # fmt: skip
                return []
            except JudgeUnavailable as exc:
                self.client.metrics.unavailable.inc()
                logger.warning(
                    "judge endpoint unavailable (%s); asking again in %.0f s",
                    exc, UNAVAILABLE_PAUSE,
                )  # fmt: skip
                await asyncio.sleep(UNAVAILABLE_PAUSE)
        if isinstance(outcome, tuple):
            return await self._verdicts(request, None, outcome)
        with writes_for(event):
            self.table[key] = outcome.model_dump(mode="json")
        return await self._verdicts(request, outcome)

    def _budget_spent(self, detail: str) -> None:
        """Raise the day's ``judge_budget_spent`` alert once in this worker (the id is the same
        in every worker, so the notifier posts it once)."""
        now = time.time()
        day = utc_day(now)
        if day in self._budget_days:
            return
        self._budget_days.add(day)
        alert_id = hashlib.sha256(f"judge_budget_spent\x1f{day}".encode()).hexdigest()[:32]
        self._alerts.append(
            JudgeBudgetAlert(
                alert_id=alert_id,
                value=self.client.budget.budget.daily_tokens,
                day=day,
                detail=detail,
                event_ts=now,
            )
        )

    async def handle(
        self, events: Sequence[Any], records: Sequence[Record], outbox: Outbox
    ) -> None:
        items = []
        for event, record in zip(events, records, strict=True):
            try:
                request = JudgeRequest.model_validate_json(record.value or b"")
            except ValidationError as exc:  # our own topic: a bug, not input; skip loudly
                logger.error("unusable judge request at %s skipped: %s", record.where, exc)
                continue
            key = (record.key or b"").decode("utf-8", "replace")
            items.append((event, record, key, request))
        # FAILs first: they ask the budget first; gather keeps the order for sending
        items.sort(key=lambda item: Priority[item[3].priority.upper()])
        # every request runs to its end before a failure surfaces: a request the backend raises
        # on fails the batch, which the loop runs again one record at a time, and the others'
        # judgements must be in the cache by then (plain gather left them in flight: each was
        # asked of the endpoint again, its budget spent twice)
        outcomes = await asyncio.gather(
            *(self.verdict(e, k, r) for e, _, k, r in items), return_exceptions=True
        )
        await self.table.flush_writes()  # the judgements are durable before their verdicts go
        verdicts: list[list[Verdict]] = []
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
            verdicts.append(outcome)
        for (_, record, _, _), produced in zip(items, verdicts, strict=True):
            headers = {"vf-source": record.where.encode()}
            for verdict in produced:
                await outbox.send(
                    verdict_topic(verdict.kind), verdict.input_id, encode(verdict), headers
                )
        while self._alerts:
            alert = self._alerts.pop(0)
            logger.warning("judge budget spent for %s: %s", alert.day, alert.detail)
            await outbox.send(ALERTS, "judge_budget_spent", encode(alert), {})


def register(
    app: faust.App,
    topics: Mapping[str, Any],
    new_outbox: Callable[[], Outbox],
    settings: Settings,
    client: JudgeClient,
    ctx: JudgeContext,
    store: str,
    rubric: RubricContext | None = None,
) -> JudgeProcessor:
    """Declare the cache table and the judge agent on ``app``."""
    table: DurableWritesTable = durable_table(
        app, JUDGE_CACHE_TABLE, key_type=str, partitions=settings.partitions, store=store
    )
    proc = JudgeProcessor(table, client, ctx, rubric, vocab_limit=settings.spacy_vocab_limit)
    outbox = new_outbox()
    requests_topic = topics[JUDGE_REQUESTS].get_topic_name()

    def owned() -> frozenset[int]:
        try:
            assigned = app.consumer.assignment()
        except Exception:  # not started yet
            return frozenset()
        return frozenset(tp.partition for tp in assigned if tp.topic == requests_topic)

    client.budget.ledger = TableLedger(table, owned, settings.partitions, client.budget.window)

    async def handle(events: Sequence[Any], records: Sequence[Record]) -> None:
        await proc.handle(events, records, outbox)

    batch_agent(
        app,
        topics[JUDGE_REQUESTS],
        name=AGENT,
        settings=settings,
        outbox=outbox,
        handle=handle,
        batch_size=min(BATCH_SIZE, settings.batch_size),
    )

    @app.task  # type: ignore[untyped-decorator]
    async def judge_started() -> None:
        backend = client.backend
        logger.info(
            "judge tier: %s %s, budget %d requests/min, %d tokens/min, %d in flight",
            backend.name, backend.model, client.policy.budget.requests_per_minute,
            client.policy.budget.tokens_per_minute, client.policy.budget.max_concurrency,
        )  # fmt: skip
        if client.policy.rubric is not None and not backend.runs_rubric:
            logger.warning(
                "judge tier: judge_tier.rubric is set, but the %s backend does not run the "
                "spec-002 rubric (it needs a chat model: VERDICTFLOW_JUDGE_URL); rubric "
                "requests get DEFER judge_refused verdicts",
                backend.name,
            )

    return proc
