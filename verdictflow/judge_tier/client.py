"""Asking the judge, with what an external call needs: the budget, retries with backoff and
jitter (``tenacity``) that honour ``Retry-After``, a circuit breaker (``aiobreaker``), one more
request after a malformed reply, and metrics.

Outcomes, for one request:

- a :class:`~verdictflow.models.judge.Judgement` (the reply as received, with its token counts
  and attempts), from which the verdict is built: PASS, FAIL, or DEFER ``judge_output_invalid``
  when the reply broke the contract twice;
- a deferral without asking: the prompt is longer than ``max_prompt_chars``, or past a bound
  of the backend's own (the local checker's claims; both ``too_long_for_judge``), or the
  endpoint refused this request itself (400, 413, 422: ``judge_refused``);
- :class:`~verdictflow.judge_tier.budget.BudgetSkipped`: not judged for budget; the caller counts it
  and emits nothing;
- :class:`JudgeUnavailable`: the endpoint kept failing (5xx, 429, timeouts, connection errors,
  a misconfiguration: 401, 403, 404) through every attempt, or the breaker is open; the caller
  waits and asks again, so nothing is lost while the endpoint is down;
- :class:`~verdictflow.exceptions.InvalidEvent` ``internal_error`` ("judge tier (<backend>):
  <what was raised>"): the backend raised on this request, with no endpoint's answer behind it
  (a local model that cannot take the input). The request is dead-lettered (the stream's batch
  loop, ``eval answers --judge local``) and the others are judged; an ``OSError`` or
  ``MemoryError`` is the machine's and is raised as it is.

Every attempt, retries included, passes the budget first; the breaker is checked before the
budget, so an open breaker spends nothing. Refusals and a request's own faults do not count
towards opening it.
"""

from __future__ import annotations

import logging
import random
from datetime import datetime, timedelta
from typing import Any

from aiobreaker import CircuitBreaker, CircuitBreakerError, CircuitBreakerState
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from verdictflow.evaluators import faithfulness_llm as contract
from verdictflow.evaluators.escalation import Priority
from verdictflow.evaluators.judge_tier_policy import JudgeTierPolicy
from verdictflow.evaluators.summary_judges import rubric_model
from verdictflow.evaluators.summary_judges.rubric_verdicts import rubric_messages
from verdictflow.exceptions import InvalidEvent
from verdictflow.judge_tier.backends import Backend, Messages, Reply
from verdictflow.judge_tier.budget import Budget, BudgetSkipped, prompt_tokens
from verdictflow.judge_tier.metrics import JudgeMetrics
from verdictflow.models.judge import Judgement, JudgeRequest
from verdictflow.models.verdicts import ReasonCode

logger = logging.getLogger(__name__)

#: Status codes that say this request, not the endpoint, is the problem: DEFER, do not retry.
REFUSED = frozenset({400, 413, 422})
#: The longest Retry-After honoured; a longer one waits this and tries again.
MAX_RETRY_AFTER = 120.0


class JudgeUnavailable(Exception):  # noqa: N818 - names the state, as BudgetSkipped does
    """The endpoint did not answer usefully through every attempt."""


class _BreakerOpen(Exception):  # noqa: N818
    pass


Deferral = tuple[ReasonCode, str]


class JudgeClient:
    """One backend, one budget, one breaker, for one worker."""

    def __init__(
        self,
        backend: Backend,
        policy: JudgeTierPolicy,
        *,
        budget: Budget | None = None,
        max_attempts: int = 5,
        breaker_failures: int = 5,
        breaker_reset_seconds: float = 30.0,
        metrics: JudgeMetrics | None = None,
    ) -> None:
        self.backend = backend
        self.policy = policy
        self.budget = budget or Budget(policy.budget)
        self.max_attempts = max_attempts
        self.breaker = CircuitBreaker(
            fail_max=breaker_failures,
            timeout_duration=timedelta(seconds=breaker_reset_seconds),
            exclude=[_refused, _request_fault],  # one request's fault, not the endpoint's
        )
        self.breaker_reset_seconds = breaker_reset_seconds
        self.metrics = metrics or JudgeMetrics()

    def prompt_version(self, task: str) -> str:
        """The prompt a request of ``task`` is asked with (the cache checks it)."""
        return rubric_model.PROMPT_VERSION if task == "rubric" else self.backend.prompt_version

    async def judge(self, request: JudgeRequest, priority: Priority) -> Judgement | Deferral:
        """See the module doc."""
        event = request.event
        messages: Messages | None = None
        if request.task == "rubric":
            if not self.backend.runs_rubric:
                return (
                    ReasonCode.JUDGE_REFUSED,
                    f"the {self.backend.name} backend does not run the spec-002 rubric: it needs "
                    "a chat model (VERDICTFLOW_JUDGE_URL and VERDICTFLOW_JUDGE_MODEL)",
                )
            messages = rubric_messages(event)
            chars = sum(len(m["content"]) for m in messages)
        else:
            chars = contract.prompt_chars(event)
        if chars > self.policy.max_prompt_chars:
            return (
                ReasonCode.TOO_LONG_FOR_JUDGE,
                f"prompt of {chars:,} characters > judge_tier.max_prompt_chars "
                f"{self.policy.max_prompt_chars:,}",
            )
        refusal = self.backend.too_long(event) if request.task != "rubric" else None
        if refusal is not None:
            return ReasonCode.TOO_LONG_FOR_JUDGE, refusal
        tokens = prompt_tokens(chars)
        labels = self.metrics.labels(event.model, event.tenant)
        first = await self._ask(request, priority, tokens, labels, messages)
        if isinstance(first[0], ReasonCode):
            return first  # type: ignore[return-value]
        reply, attempts = first
        invalid = None
        try:
            if request.task == "rubric":
                rubric_model.parse_reply(reply.content)
            else:
                contract.parse_response(reply.content)
        except (contract.InvalidResponse, rubric_model.InvalidRubricReply) as exc:
            self.metrics.invalid.labels(self.backend.model).inc()
            logger.warning("judge reply for %s broke the contract (%s); asking once more",
                           event.id, exc)  # fmt: skip
            second = await self._ask(request, priority, tokens, labels, messages)
            if isinstance(second[0], ReasonCode):
                return second  # type: ignore[return-value]
            invalid, reply, more = reply.content, second[0], second[1]
            attempts += int(more)
        return Judgement(  # bounded: a reply of megabytes must not reach the cache table
            backend=self.backend.name,
            model=self.backend.model,
            prompt_version=self.prompt_version(request.task),
            content=contract.bounded(reply.content),
            first_invalid=contract.bounded(invalid) if invalid is not None else None,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            attempts=attempts,
        )

    async def _ask(
        self,
        request: JudgeRequest,
        priority: Priority,
        tokens: int,
        labels: tuple[str, str],
        messages: Messages | None = None,
    ) -> tuple[Reply, int] | Deferral:
        attempts = 0
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_attempts),
            wait=self._wait,
            retry=retry_if_exception(_transient),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    if self._breaker_open():
                        raise _BreakerOpen
                    expected = self.budget.expected_completion(self.policy.max_completion_tokens)
                    async with self.budget.granted(priority, tokens + expected):
                        attempts += 1
                        self.metrics.budget_spent(self.budget.spend)
                        reply = await self.breaker.call_async(
                            self.backend.ask,
                            request.event,
                            self.policy.max_completion_tokens,
                            messages,
                        )
                    await self.budget.charge(reply.completion_tokens, expected)
                    self.metrics.answered(self.backend.model, labels, reply, tokens + expected)
                    return reply, attempts
        except Exception as exc:
            status = _status(exc)
            if status in REFUSED:
                self.metrics.requests.labels(self.backend.model, *labels, str(status)).inc()
                detail = f"the judge endpoint answered {status}: {exc}"[:300]
                return ReasonCode.JUDGE_REFUSED, detail
            if _transient(exc) or status in (401, 403, 404) or isinstance(exc, CircuitBreakerError):
                raise JudgeUnavailable(f"{type(exc).__name__}: {exc}"[:300]) from exc
            if isinstance(exc, BudgetSkipped):
                raise
            if _machine(exc):
                raise  # the worker stops without committing
            # this request's: a local model that cannot take it, a reply the client library
            # cannot read. Raised as the dead letter it becomes, never as the RuntimeError a
            # model may raise, which the batch loop takes for the infrastructure's: the worker
            # stopped without committing and met the same request at every restart
            raise self.request_fault(exc) from exc
        raise JudgeUnavailable("no attempt was made")  # pragma: no cover - tenacity tries once

    def request_fault(self, exc: BaseException) -> InvalidEvent:
        """The ``internal_error`` dead letter of a request the backend raised ``exc`` on,
        naming the backend (the stream's and ``eval answers --judge local``'s alike)."""
        if isinstance(exc, InvalidEvent):
            return exc
        return InvalidEvent.internal(exc, f"judge tier ({self.backend.name}): ")

    def _breaker_open(self) -> bool:
        """Open and not yet due to half-open (aiobreaker half-opens on the next call once its
        timeout passed, so the check must let that call through)."""
        if self.breaker.current_state != CircuitBreakerState.OPEN:
            return False
        try:
            opens_at = self.breaker.opens_at  # naive UTC, as aiobreaker keeps it
        except TypeError:  # never opened
            return False
        return opens_at is not None and datetime.utcnow() < opens_at

    def _wait(self, state: RetryCallState) -> float:
        """Retry-After when the server gave one, else exponential backoff with full jitter;
        while the breaker is open, until it half-opens."""
        exc = state.outcome.exception() if state.outcome is not None else None
        self.metrics.retries.labels(type(exc).__name__ if exc else "none").inc()
        if isinstance(exc, _BreakerOpen | CircuitBreakerError):
            return self.breaker_reset_seconds
        after = _retry_after(exc)
        if after is not None:
            return min(after, MAX_RETRY_AFTER)
        ceiling = min(20.0, 0.5 * 2 ** (state.attempt_number - 1))
        return random.uniform(0, ceiling)  # jitter, not a secret

    async def close(self) -> None:
        await self.backend.close()


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _refused(exc: BaseException) -> bool:
    """The endpoint refused this request (400, 413, 422): it answered, so the breaker does not
    count it; five refused answers in a row had opened it and held up every other request."""
    return _status(exc) in REFUSED


def _request_fault(exc: BaseException) -> bool:
    """Raised on this request alone, with no answer from an endpoint behind it (no status, no
    timeout or connection error): a local model that cannot take this input. It says nothing
    of the backend's health, so the breaker does not count it; five in a row would have held
    up every other request."""
    return _status(exc) is None and not _transient(exc) and not _machine(exc)


def _machine(exc: BaseException) -> bool:
    """A fault of the machine the backend runs on (a file, memory), not of one request."""
    return isinstance(exc, OSError | MemoryError)


def _transient(exc: BaseException) -> bool:
    """Worth another attempt: 429, 5xx, timeouts, connection errors, an open breaker."""
    import openai

    if isinstance(exc, _BreakerOpen | CircuitBreakerError):
        return True
    if isinstance(exc, openai.APITimeoutError | openai.APIConnectionError):
        return True
    status = _status(exc)
    return status is not None and (status == 429 or status >= 500)


def _retry_after(exc: BaseException | None) -> float | None:
    response: Any = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return float(value) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
