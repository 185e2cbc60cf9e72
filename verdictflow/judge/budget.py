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
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

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


class Budget:
    """Grants requests within :class:`JudgeBudget`; waiters are served by priority."""

    def __init__(self, budget: JudgeBudget, window_seconds: int = 60) -> None:
        """``window_seconds``: the window the per-minute limits apply to (60; tests shorten
        it to see a window roll over quickly)."""
        self.budget = budget
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
        if self.spend.day_tokens + tokens > self.budget.daily_tokens:
            raise BudgetSkipped(
                "daily_tokens",
                f"{self.spend.day_tokens:,} of {self.budget.daily_tokens:,} tokens spent today "
                f"({day}, UTC)",
            )

    async def _fits(self, tokens: int) -> bool:
        if tokens > self.budget.tokens_per_minute:
            raise BudgetSkipped(
                "wait_limit",
                f"one request of ~{tokens:,} tokens exceeds tokens_per_minute "
                f"{self.budget.tokens_per_minute:,}",
            )
        return await self._limiter.test(
            self._requests, "judge-requests"
        ) and await self._limiter.test(self._tokens, "judge-tokens", cost=tokens)

    async def _until_free(self, tokens: int) -> float:
        """Seconds until the window might take the request (0 when it could now)."""
        now = time.time()
        waits = [0.0]
        stats = await self._limiter.get_window_stats(self._requests, "judge-requests")
        if stats.remaining < 1:
            waits.append(stats.reset_time - now)
        stats = await self._limiter.get_window_stats(self._tokens, "judge-tokens")
        if stats.remaining < tokens:
            waits.append(stats.reset_time - now)
        return max(waits)

    @asynccontextmanager
    async def in_flight(self) -> AsyncIterator[None]:
        """At most ``max_concurrency`` requests at once."""
        async with self._in_flight:
            yield
