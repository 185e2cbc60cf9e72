"""One budget per deployment (issue 40): judge workers each take their share of the request
partitions' budget, a share that grows waits for the partitions' last window, and the day's
spend lives in the changelogged table, so a restarted worker spends nothing more once the
day's budget is spent."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from verdictflow.agents.judge import TableDaySpend
from verdictflow.evaluators.escalation import Priority
from verdictflow.evaluators.judge_tier_policy import JudgeBudget
from verdictflow.judge.budget import Budget, BudgetSkipped
from verdictflow.streams.durable_table import writes_for


class Table(dict[str, Any]):
    """A table whose changelog is this dict itself (what survives a restart)."""

    flushed = 0

    async def flush_writes(self) -> None:
        self.flushed += 1


class Message:
    def __init__(self, partition: int) -> None:
        self.partition = partition


class Event:
    def __init__(self, partition: int) -> None:
        self.message = Message(partition)


async def grant(budget: Budget, partition: int, tokens: int = 10) -> None:
    with writes_for(Event(partition)):
        await budget.acquire(Priority.FAIL, tokens)


def test_two_workers_with_half_the_partitions_each_stay_within_one_limit() -> None:
    policy = JudgeBudget(requests_per_minute=4, tokens_per_minute=10_000, max_concurrency=4)
    table = Table()
    workers = []
    for owned in ({0}, {1}):
        budget = Budget(
            policy, window_seconds=2, day_spend=TableDaySpend(table, lambda o=owned: frozenset(o))
        )
        budget.set_share(1, 2, last_sent=None)
        workers.append(budget)
    sent: list[float] = []

    async def worker(budget: Budget, partition: int) -> None:
        for _ in range(6):
            await grant(budget, partition)
            sent.append(time.monotonic())

    async def both() -> None:
        await asyncio.gather(worker(workers[0], 0), worker(workers[1], 1))

    asyncio.run(both())
    window = 3.0  # the budget's 2 s window + its safety second
    most = max(sum(1 for t in sent if s <= t < s + window) for s in sent)
    assert most <= 4, f"{most} requests in one window under requests_per_minute 4"
    assert table.flushed >= 12  # every grant's spend was written before it was used


def test_a_growing_share_waits_for_the_last_window_of_the_partitions_gained() -> None:
    budget = Budget(JudgeBudget(requests_per_minute=10), window_seconds=60)
    budget.set_share(1, 2, last_sent=None)
    assert budget.share == (1, 2)
    budget.set_share(2, 2, last_sent=time.time() - 5)  # their last request 5 s ago
    assert budget.share == (1, 2), "a share must not grow while the former owner's window runs"
    budget.set_share(2, 2, last_sent=time.time() - 120)
    assert budget.share == (2, 2)
    budget.set_share(1, 2)
    assert budget.share == (1, 2), "a shrinking share applies at once"


def test_a_restart_on_the_same_day_spends_nothing_once_the_day_is_spent() -> None:
    table = Table()  # what the changelog restores after a restart
    policy = JudgeBudget(daily_tokens=100, requests_per_minute=100, tokens_per_minute=10_000)

    def worker() -> Budget:
        budget = Budget(policy, day_spend=TableDaySpend(table, lambda: frozenset({0, 1})))
        budget.set_share(2, 2, last_sent=None)
        return budget

    async def spend_all(budget: Budget) -> tuple[int, str]:
        granted = 0
        while True:
            try:
                await grant(budget, granted % 2, tokens=30)
            except BudgetSkipped as skipped:
                return granted, skipped.reason
            granted += 1

    assert asyncio.run(spend_all(worker())) == (3, "daily_tokens")
    assert asyncio.run(spend_all(worker())) == (0, "daily_tokens")  # restarted: spend came back
    day = time.strftime("%Y-%m-%d", time.gmtime())
    assert table[f"budget/{day}/0"] + table[f"budget/{day}/1"] == 90
