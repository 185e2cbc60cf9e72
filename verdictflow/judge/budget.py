"""The judge tier's spend, bounded: requests and tokens in any 60-second window (a moving
window: ``limits``' ``MovingWindowRateLimiter``, so "no 60 s window above N" holds exactly,
retries included), requests in flight, tokens per UTC day, and the order in which waiting
requests get budget (FAIL before band before sampled PASS).

Tokens are counted before a request is sent, as an estimate: the prompt's characters / 4 plus
the completion expected (the mean of the completions reported so far, a quarter of
``max_completion_tokens`` before the first); when a reply reports more completion tokens than
that, the difference is counted too (:meth:`Budget.charge`). A moving window cannot take back
what it counted, so a reply shorter than expected is not refunded: the count errs high, by at
most the expected completion per request. Reserving ``max_completion_tokens`` per request
instead held 600 requests/min to 142 with the default 200,000 tokens/min
(``bench/judge_throughput.py``).

**One budget per deployment** (issue 40: a ``--tier all`` worker and a ``--tier judge`` worker
sent 43 requests in 60 s under ``requests_per_minute: 40``, and the day's tokens were counted
again after every restart). Every judge worker of an app is a member of one consumer group
(``<app id>-judge``) and reads its share of the ``internal.judge-requests`` partitions, so each
takes that share of the budget: ``floor(limit * owned / partitions)`` requests and tokens per
window and tokens per day (:meth:`Budget.set_share`, called as partitions move); the shares add
up to the limit at most. A share that grows (a rebalance gave this worker more partitions) takes
effect one window later, once what the partitions' former owner sent has left every window; a
share that shrinks takes effect at once. So no window holds more than the configured limit
across a rebalance either, at the price of up to one window of slower judging after it.
The day's spend is kept per partition in a changelogged table by the judge agent
(:class:`DaySpend`, ``agents/judge.py``): it moves with its partition, survives restarts and
crash loops, and is written before the request it pays for is sent.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Protocol

from limits import RateLimitItemPerSecond
from limits.aio.storage import MemoryStorage
from limits.aio.strategies import MovingWindowRateLimiter

from verdictflow.evaluators.escalation import Priority
from verdictflow.evaluators.judge_tier_policy import JudgeBudget

logger = logging.getLogger(__name__)

#: Characters per token, for the estimate (English text with the usual tokenizers).
CHARS_PER_TOKEN = 4
#: Added to the budget's window (see ``Budget.__init__``).
SAFETY_SECONDS = 1


class BudgetSkipped(Exception):  # noqa: N818 - names what happened to the request
    """The request was not sent: ``reason`` is ``daily_tokens`` or ``wait_limit``."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def prompt_tokens(prompt_chars: int) -> int:
    return prompt_chars // CHARS_PER_TOKEN + 1


@dataclass
class Spend:
    """What the budget has let through (for metrics and the console)."""

    requests: int = 0
    tokens: int = 0
    day: str = ""
    day_tokens: int = 0


class DaySpend(Protocol):
    """Where the tokens spent per UTC day are kept (see the module doc)."""

    def spent(self, day: str) -> int:
        """Tokens spent on ``day`` by the partitions this worker owns."""

    async def add(self, day: str, tokens: int) -> None:
        """Count ``tokens`` spent on ``day`` (durably, before the request is sent), and note
        the time a request was last sent for its partition."""


class MemoryDaySpend:
    """The day's spend in this process only (a client used outside a worker)."""

    def __init__(self) -> None:
        self._spent: dict[str, int] = {}

    def spent(self, day: str) -> int:
        return self._spent.get(day, 0)

    async def add(self, day: str, tokens: int) -> None:
        self._spent = {day: self._spent.get(day, 0) + tokens}


class Budget:
    """Grants requests within :class:`JudgeBudget`; waiters are served by priority."""

    def __init__(
        self, budget: JudgeBudget, window_seconds: int = 60, day_spend: DaySpend | None = None
    ) -> None:
        """``window_seconds``: the window the per-minute limits apply to (60; tests shorten
        it to see a window roll over quickly). ``day_spend``: where the day's tokens are
        kept (in memory by default; the judge agent's changelogged table in a worker)."""
        self.budget = budget
        self.day_spend: DaySpend = day_spend or MemoryDaySpend()
        self._window = window_seconds + SAFETY_SECONDS
        #: This worker's share of the deployment's budget (owned / total partitions), and a
        #: larger share waiting for its time (see the module doc).
        self.share: tuple[int, int] = (1, 1)
        self._pending_share: tuple[tuple[int, int], float] | None = None
        self._limiter = MovingWindowRateLimiter(MemoryStorage())
        # One second longer than the window the limits name: requests granted a window apart
        # may reach the endpoint closer together (network and server jitter), and the endpoint
        # counts them as it receives them.
        window = window_seconds + SAFETY_SECONDS
        self._requests = RateLimitItemPerSecond(budget.requests_per_minute, window)
        self._tokens = RateLimitItemPerSecond(budget.tokens_per_minute, window)
        self._in_flight = asyncio.Semaphore(budget.max_concurrency)
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
                await self._limiter.hit(self._tokens, "judge-tokens", cost=extra)
                self.spend.tokens += extra
                self.spend.day_tokens += extra
                await self.day_spend.add(self._day(), extra)

    def set_share(
        self, owned: int, total: int, now: float | None = None, last_sent: float | None = -1.0
    ) -> None:
        """This worker owns ``owned`` of the ``total`` request partitions: it takes that
        share of every limit. A larger share applies one window after ``last_sent`` (the wall
        time of the last request sent for the partitions gained, None when none was) or, when
        that is unknown (-1), one window from now (module doc)."""
        now = time.monotonic() if now is None else now
        new = (max(0, owned), max(1, total))
        if last_sent is None:
            wait = 0.0
        elif last_sent < 0:
            wait = float(self._window)
        else:
            wait = max(0.0, last_sent + self._window - time.time())
        if self._pending_share is not None and now >= self._pending_share[1]:
            self.share, self._pending_share = self._pending_share[0], None
        if new == self.share:
            self._pending_share = None
        elif new[0] * self.share[1] < self.share[0] * new[1]:  # smaller: at once
            if self.share != new:
                logger.info("judge budget share %d/%d -> %d/%d", *self.share, *new)
            self.share, self._pending_share = new, None
        elif wait <= 0:
            logger.info("judge budget share %d/%d -> %d/%d", *self.share, *new)
            self.share, self._pending_share = new, None
        elif self._pending_share is None or self._pending_share[0] != new:
            logger.info("judge budget share %d/%d -> %d/%d in %.0f s", *self.share, *new, wait)
            self._pending_share = (new, now + wait)

    def _of_share(self, limit: int) -> int:
        pending = self._pending_share
        if pending is not None and time.monotonic() >= pending[1]:
            self.share, self._pending_share = pending[0], None
        owned, total = self.share
        return limit * owned // total

    def _day(self) -> str:
        return time.strftime("%Y-%m-%d", time.gmtime())

    def _max_wait(self, priority: Priority) -> float | None:
        if priority is Priority.FAIL:
            return None
        if priority is Priority.BAND:
            return self.budget.band_wait_seconds
        return 0.0

    async def acquire(self, priority: Priority, tokens: int) -> None:
        """Wait until a request of ``tokens`` may be sent; :class:`BudgetSkipped` when the day's
        tokens are spent or the priority's wait limit passes."""
        deadline_after = self._max_wait(priority)
        started = time.monotonic()
        self._waiting[priority] += 1
        try:
            while True:
                async with self._grant:
                    self._check_day(tokens)
                    ahead = any(self._waiting[p] for p in Priority if p < priority)
                    if not ahead and await self._fits(tokens):
                        await self.day_spend.add(self._day(), tokens)  # durable before sent
                        await self._limiter.hit(self._requests, "judge-requests")
                        await self._limiter.hit(self._tokens, "judge-tokens", cost=tokens)
                        self.spend.requests += 1
                        self.spend.tokens += tokens
                        self.spend.day_tokens += tokens
                        return
                    wait = await self._until_free(tokens)
                waited = time.monotonic() - started
                if deadline_after is not None and waited + wait > deadline_after:
                    raise BudgetSkipped(
                        "wait_limit",
                        f"{priority.label} verdicts wait at most {deadline_after:.0f} s for budget",
                    )
                await asyncio.sleep(min(max(wait, 0.01), 1.0))
        finally:
            self._waiting[priority] -= 1

    def _check_day(self, tokens: int) -> None:
        day = self._day()
        if day != self.spend.day:
            self.spend.day, self.spend.day_tokens = day, 0
        allowance = self._of_share(self.budget.daily_tokens)
        spent = self.day_spend.spent(day)
        if spent + tokens > allowance:
            raise BudgetSkipped(
                "daily_tokens",
                f"{spent:,} of {allowance:,} tokens spent today ({day}, UTC; this worker's "
                f"share {self.share[0]}/{self.share[1]} of {self.budget.daily_tokens:,})",
            )

    async def _fits(self, tokens: int) -> bool:
        if tokens > self.budget.tokens_per_minute:
            raise BudgetSkipped(
                "wait_limit",
                f"one request of ~{tokens:,} tokens exceeds tokens_per_minute "
                f"{self.budget.tokens_per_minute:,}",
            )
        requests = await self._limiter.get_window_stats(self._requests, "judge-requests")
        used = self._requests.amount - requests.remaining
        if used + 1 > self._of_share(self.budget.requests_per_minute):
            return False
        spent = await self._limiter.get_window_stats(self._tokens, "judge-tokens")
        used_tokens = self._tokens.amount - spent.remaining
        return used_tokens + tokens <= self._of_share(self.budget.tokens_per_minute)

    async def _until_free(self, tokens: int) -> float:
        """Seconds until the window might take the request (0 when it could now; a share not
        yet in force counts as a wait until it is)."""
        now = time.time()
        waits = [0.0]
        stats = await self._limiter.get_window_stats(self._requests, "judge-requests")
        if self._requests.amount - stats.remaining + 1 > self._of_share(
            self.budget.requests_per_minute
        ):
            waits.append(stats.reset_time - now if stats.reset_time > now else 1.0)
        stats = await self._limiter.get_window_stats(self._tokens, "judge-tokens")
        if self._tokens.amount - stats.remaining + tokens > self._of_share(
            self.budget.tokens_per_minute
        ):
            waits.append(stats.reset_time - now if stats.reset_time > now else 1.0)
        return max(waits)

    @asynccontextmanager
    async def in_flight(self) -> AsyncIterator[None]:
        """At most ``max_concurrency`` requests at once."""
        async with self._in_flight:
            yield
