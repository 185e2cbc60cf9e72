"""The judge tier's spend, bounded: requests and tokens in any 60-second window, requests in
flight, tokens per UTC day, and the order in which waiting requests get budget (FAIL before
band before sampled PASS).

Tokens are counted before a request is sent, as an estimate: the prompt's characters / 4 plus
the completion expected (the mean of the completions reported so far, a quarter of
``max_completion_tokens`` before the first); when a reply reports more completion tokens than
that, the difference is counted too (:meth:`Budget.charge`). A count cannot be taken back, so a
reply shorter than expected is not refunded: the count errs high, by at most the expected
completion per request. Reserving ``max_completion_tokens`` per request instead held 600
requests/min to 142 with the default 200,000 tokens/min (``bench/judge_throughput.py``).

**One budget per deployment** (issue 40: a ``--tier all`` worker and a ``--tier judge`` worker
sent 43 requests in 60 s under ``requests_per_minute: 40``, and the day's tokens were counted
again after every restart). What was sent is kept per request partition in a
:class:`SpendLedger`: in a worker, the judge agent's changelogged table
(``agents/judge_tier.py``), written and awaited *before* the request it pays for is sent. Every
judge process of an app is a member of one consumer group (``<app id>-judge``) and owns some
of the ``internal.judge-requests`` partitions; it may send while what was sent *for its
partitions* in the last window (and today) stays within its share of each limit,
``floor(limit * owned / partitions)``. The shares add up to the limit at most, so no window
holds more than the limit across all workers; a partition's history moves with it, so a
rebalance or a restart neither forgets what was sent nor waits longer than it must. Windows are
counted in whole seconds of wall-clock time (a request counts for the window's length plus one
second, :data:`SAFETY_SECONDS`), so workers on several hosts need clocks within a second.

**A request is granted only with a free slot** (one of ``max_concurrency``), and sent at once:
granted first and queued for a slot, a request counted at one moment reached the endpoint
seconds later, behind slow replies, while requests granted a window after it went out at once
(the judge test counted 42 requests in 60 s under 40 a minute on a loaded 2-core VM). Waiting
for a slot goes through the same priority order as waiting for budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Protocol

from verdictflow.evaluators.escalation import Priority
from verdictflow.evaluators.judge_tier_policy import JudgeBudget

logger = logging.getLogger(__name__)

#: Characters per token, for the estimate (English text with the usual tokenizers).
CHARS_PER_TOKEN = 4
#: Added to the budget's window: requests granted a window apart may reach the endpoint closer
#: together (network and server jitter), and the endpoint counts them as it receives them.
SAFETY_SECONDS = 1
#: How often a request waiting for the window looks again.
POLL_SECONDS = 0.25


class BudgetSkipped(Exception):  # noqa: N818 - names what happened to the request
    """The request was not sent: ``reason`` is ``daily_tokens`` or ``wait_limit``."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def prompt_tokens(prompt_chars: int) -> int:
    return prompt_chars // CHARS_PER_TOKEN + 1


def utc_day(now: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(now))


@dataclass
class Spend:
    """What the budget has let through (for metrics and the console)."""

    requests: int = 0
    tokens: int = 0
    day: str = ""
    day_tokens: int = 0


class SpendLedger(Protocol):
    """What was sent, for the partitions this worker owns (see the module doc)."""

    def share(self) -> tuple[int, int]:
        """(partitions owned, partitions in all)."""

    def sent_since(self, since: float) -> tuple[int, int]:
        """Requests and tokens sent at or after wall time ``since`` (whole seconds)."""

    def day_tokens(self, day: str) -> int:
        """Tokens sent on UTC ``day``."""

    async def record(self, now: float, requests: int, tokens: int) -> None:
        """Count a request (or extra tokens) sent at ``now``, durably, before it is sent."""


class MemoryLedger:
    """The ledger of one process, owning everything (a client used outside a worker)."""

    def __init__(self) -> None:
        self._sent: deque[tuple[float, int, int]] = deque()
        self._days: dict[str, int] = {}

    def share(self) -> tuple[int, int]:
        return 1, 1

    def sent_since(self, since: float) -> tuple[int, int]:
        cutoff = int(since)
        while self._sent and self._sent[0][0] < cutoff - 3600:
            self._sent.popleft()
        rows = [(r, t) for at, r, t in self._sent if at >= cutoff]
        return sum(r for r, _ in rows), sum(t for _, t in rows)

    def day_tokens(self, day: str) -> int:
        return self._days.get(day, 0)

    async def record(self, now: float, requests: int, tokens: int) -> None:
        self._sent.append((int(now), requests, tokens))
        day = utc_day(now)
        self._days = {day: self._days.get(day, 0) + tokens}


class Budget:
    """Grants requests within :class:`JudgeBudget`; waiters are served by priority."""

    def __init__(
        self, budget: JudgeBudget, window_seconds: int = 60, ledger: SpendLedger | None = None
    ) -> None:
        """``window_seconds``: the window the per-minute limits apply to (60; tests shorten
        it to see a window roll over quickly). ``ledger``: what was sent (this process's by
        default; the judge agent's changelogged table in a worker)."""
        self.budget = budget
        self.ledger: SpendLedger = ledger or MemoryLedger()
        self.window = window_seconds + SAFETY_SECONDS
        self._flying = 0
        self._released = asyncio.Event()
        self._waiting: dict[Priority, int] = {p: 0 for p in Priority}
        self._grant = asyncio.Lock()
        self.spend = Spend()
        self._completions = 0
        self._completion_tokens = 0

    def expected_completion(self, max_completion_tokens: int) -> int:
        """The completion tokens to count before a request (see the module doc)."""
        if not self._completions:
            return max(1, max_completion_tokens // 4)
        return min(max_completion_tokens, self._completion_tokens // self._completions + 1)

    async def charge(self, completion_tokens: int | None, expected: int) -> None:
        """Learn a reply's completion tokens; count what exceeds what was counted for it."""
        if completion_tokens is None or completion_tokens < 0:
            return
        self._completions += 1
        self._completion_tokens += completion_tokens
        extra = completion_tokens - expected
        if extra > 0:
            async with self._grant:
                await self.ledger.record(time.time(), 0, extra)
                self.spend.tokens += extra
                self.spend.day_tokens += extra

    def _of_share(self, limit: int) -> int:
        owned, total = self.ledger.share()
        return limit * max(0, owned) // max(1, total)

    def _max_wait(self, priority: Priority) -> float | None:
        if priority is Priority.FAIL:
            return None
        if priority is Priority.BAND:
            return self.budget.band_wait_seconds
        return 0.0

    @asynccontextmanager
    async def granted(self, priority: Priority, tokens: int) -> AsyncIterator[None]:
        """Hold one of ``max_concurrency`` slots with budget for a request of ``tokens``,
        counted as sent now: send the request inside. :class:`BudgetSkipped` when the day's
        tokens are spent or the priority's wait limit passes."""
        await self._acquire(priority, tokens)
        try:
            yield
        finally:
            self._flying -= 1
            released, self._released = self._released, asyncio.Event()
            released.set()

    async def _acquire(self, priority: Priority, tokens: int) -> None:
        deadline_after = self._max_wait(priority)
        started = time.monotonic()
        slot_wait = 0.0  # time waiting for a slot only: not budget, so not the wait limit's
        self._waiting[priority] += 1
        try:
            while True:
                async with self._grant:
                    now = time.time()
                    self._check_day(now, tokens)
                    ahead = any(self._waiting[p] for p in Priority if p < priority)
                    free = self._flying < self.budget.max_concurrency
                    if not ahead and free and self._fits(now, tokens):
                        self._flying += 1
                        try:
                            await self.ledger.record(now, 1, tokens)  # durable before it is sent
                        except BaseException:
                            self._flying -= 1
                            raise
                        self.spend.requests += 1
                        self.spend.tokens += tokens
                        self.spend.day_tokens += tokens
                        return
                waited = time.monotonic() - started - slot_wait
                over = deadline_after is not None and waited + POLL_SECONDS > deadline_after
                if free and over:
                    raise BudgetSkipped(
                        "wait_limit",
                        f"{priority.label} verdicts wait at most {deadline_after:.0f} s for budget",
                    )
                paused = time.monotonic()
                await self._pause()
                if not free:
                    slot_wait += time.monotonic() - paused
        finally:
            self._waiting[priority] -= 1

    async def _pause(self) -> None:
        """Until a slot is released or :data:`POLL_SECONDS` pass (the window moves with time)."""
        released = self._released
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(released.wait(), POLL_SECONDS)

    def _check_day(self, now: float, tokens: int) -> None:
        day = utc_day(now)
        if day != self.spend.day:
            self.spend.day, self.spend.day_tokens = day, 0
        owned, total = self.ledger.share()
        if owned <= 0:
            return  # no partition yet (a rebalance): nothing to judge, nothing to decide
        allowance = self._of_share(self.budget.daily_tokens)
        spent = self.ledger.day_tokens(day)
        if spent + tokens > allowance:
            raise BudgetSkipped(
                "daily_tokens",
                f"{spent:,} of {allowance:,} tokens spent today ({day}, UTC; this worker's "
                f"share {owned}/{total} of {self.budget.daily_tokens:,})",
            )

    def _fits(self, now: float, tokens: int) -> bool:
        if tokens > self.budget.tokens_per_minute:
            raise BudgetSkipped(
                "wait_limit",
                f"one request of ~{tokens:,} tokens exceeds tokens_per_minute "
                f"{self.budget.tokens_per_minute:,}",
            )
        requests, spent = self.ledger.sent_since(now - self.window)
        return requests + 1 <= self._of_share(
            self.budget.requests_per_minute
        ) and spent + tokens <= self._of_share(self.budget.tokens_per_minute)
