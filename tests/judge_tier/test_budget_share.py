"""One budget per deployment (issue 40): judge workers each take their partitions' share of
every limit, what was sent for a partition moves with it (a rebalance neither forgets it nor
waits longer than it must), and the day's spend lives in the changelogged table, so a
restarted worker spends nothing more once the day's budget is spent."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from verdictflow.agents.judge_tier import TableLedger
from verdictflow.evaluators.escalation import Priority
from verdictflow.evaluators.judge_tier_policy import JudgeBudget
from verdictflow.judge_tier.budget import Budget, BudgetSkipped
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


def worker(policy: JudgeBudget, table: Table, owned: set[int], window: int = 60) -> Budget:
    budget = Budget(policy, window_seconds=window)
    budget.ledger = TableLedger(table, lambda: frozenset(owned), 2, budget.window)
    return budget


async def grant(budget: Budget, partition: int, tokens: int = 10, priority=Priority.FAIL) -> None:
    with writes_for(Event(partition)):
        async with budget.granted(priority, tokens):
            pass


def test_two_workers_with_half_the_partitions_each_stay_within_one_limit() -> None:
    policy = JudgeBudget(requests_per_minute=4, tokens_per_minute=10_000, max_concurrency=4)
    table = Table()
    workers = [worker(policy, table, {0}, window=2), worker(policy, table, {1}, window=2)]
    sent: list[float] = []

    async def send(budget: Budget, partition: int) -> None:
        for _ in range(6):
            await grant(budget, partition)
            sent.append(time.time())

    async def both() -> None:
        await asyncio.gather(send(workers[0], 0), send(workers[1], 1))

    asyncio.run(both())
    window = 3.0  # the budget's 2 s window + its safety second
    most = max(sum(1 for t in sent if s <= t < s + window) for s in sent)
    assert most <= 4, f"{most} requests in one window under requests_per_minute 4"
    assert table.flushed >= 12  # every grant was written before it was used


def test_a_partition_s_history_moves_with_it() -> None:
    """The worker that takes over partition 1 sees what its former owner sent in the window:
    with 2 of 4 requests sent there, it may send 2 more this minute, not 4."""
    policy = JudgeBudget(requests_per_minute=4, tokens_per_minute=10_000)
    table = Table()
    former = worker(policy, table, {1})
    asyncio.run(grant(former, 1))
    asyncio.run(grant(former, 1))
    heir = worker(policy, table, {0, 1})  # a rebalance gave it both partitions
    asyncio.run(grant(heir, 0))
    asyncio.run(grant(heir, 1))

    async def one_more() -> None:
        await grant(heir, 0, priority=Priority.SAMPLE)

    try:
        asyncio.run(one_more())
    except BudgetSkipped as skipped:
        reason = skipped.reason
    else:
        reason = "granted"
    assert reason == "wait_limit", "a fifth request in one minute under a limit of 4"


def test_a_restart_on_the_same_day_spends_nothing_once_the_day_is_spent() -> None:
    table = Table()  # what the changelog restores after a restart
    policy = JudgeBudget(daily_tokens=100, requests_per_minute=100, tokens_per_minute=10_000)

    async def spend_all(budget: Budget) -> tuple[int, str]:
        granted = 0
        while True:
            try:
                await grant(budget, granted % 2, tokens=30)
            except BudgetSkipped as skipped:
                return granted, skipped.reason
            granted += 1

    assert asyncio.run(spend_all(worker(policy, table, {0, 1}))) == (3, "daily_tokens")
    restarted = worker(policy, table, {0, 1})
    assert asyncio.run(spend_all(restarted)) == (0, "daily_tokens")  # the spend came back
    day = time.strftime("%Y-%m-%d", time.gmtime())
    assert table[f"budget/day/{day}/0"] + table[f"budget/day/{day}/1"] == 90


def test_a_sampled_pass_waits_for_a_slot_but_not_for_budget() -> None:
    """The wait limits are for budget: a sampled PASS (no wait) behind a busy slot is sent once
    the slot frees while budget is left, and skipped at once when budget is not."""
    policy = JudgeBudget(requests_per_minute=2, tokens_per_minute=10_000, max_concurrency=1)
    budget = worker(policy, Table(), {0, 1})
    order: list[str] = []

    async def hold() -> None:
        async with budget.granted(Priority.FAIL, 10):
            order.append("fail")
            await asyncio.sleep(0.6)

    async def sampled() -> None:
        await asyncio.sleep(0.1)  # behind the held slot
        with writes_for(Event(0)):
            async with budget.granted(Priority.SAMPLE, 10):
                order.append("sampled")

    async def scene() -> None:
        with writes_for(Event(0)):
            await asyncio.gather(hold(), sampled())
        try:  # both requests of the window are spent: no wait for the next one
            await grant(budget, 1, priority=Priority.SAMPLE)
        except BudgetSkipped as skipped:
            order.append(skipped.reason)

    asyncio.run(scene())
    assert order == ["fail", "sampled", "wait_limit"]
