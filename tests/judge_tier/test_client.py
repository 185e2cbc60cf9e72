"""The judge client against a real local OpenAI-compatible server (the stand-in): retries that
honour Retry-After, budget windows and priorities, malformed replies, refusals, the breaker."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.support.openai_standin import StandIn, serve
from verdictflow.evaluators.escalation import Priority
from verdictflow.evaluators.faithfulness_llm import JudgeContext, build_verdict
from verdictflow.evaluators.judge_tier_policy import JudgeBudget, JudgeTierPolicy
from verdictflow.judge_tier.backends import OpenAIBackend
from verdictflow.judge_tier.budget import Budget, BudgetSkipped
from verdictflow.judge_tier.client import JudgeClient, JudgeUnavailable
from verdictflow.models.events import AnswerEvent
from verdictflow.models.judge import Judgement, JudgeRequest, ReviewedVerdict
from verdictflow.models.verdicts import Decision, ReasonCode, VerdictKind

CONTEXT = "Acme Corp acquired Globex in 2019. The Nile is longer than the Amazon."


def request(answer: str, priority: str = "band", rid: str = "a1") -> JudgeRequest:
    return JudgeRequest(
        scope="answer",
        priority=priority,  # type: ignore[arg-type]
        reviews=ReviewedVerdict(
            verdict_id=f"v-{rid}", kind=VerdictKind.FAITHFULNESS, score=0.5,
            decision=Decision.PASS, threshold=0.4, config_digest="d",
        ),
        event=AnswerEvent(id=rid, query="Who bought whom?", answer=answer, contexts=[CONTEXT]),
    )  # fmt: skip


def client(
    url: str, budget: JudgeBudget | None = None, window: int = 60, tokens: int = 1024, **kw
) -> JudgeClient:
    policy = JudgeTierPolicy(budget=budget or JudgeBudget(), max_completion_tokens=tokens)
    backend = OpenAIBackend(url, "standin-judge", "k", timeout=10)
    return JudgeClient(backend, policy, budget=Budget(policy.budget, window), **kw)


def run(coro, *clients: JudgeClient):
    """Run ``coro``, then close the clients' connections in the same event loop."""

    async def and_close():
        try:
            return await coro
        finally:
            for c in clients:
                await c.close()

    return asyncio.run(and_close())


def test_failures_are_retried_with_retry_after_and_the_verdict_names_the_swap() -> None:
    standin = StandIn(pattern=("500", "429", "ok"), retry_after=0.5)
    with serve(standin) as url:
        c = client(url)
        started = time.monotonic()
        req = request("Acme Corp acquired Globex in 2019. Globex acquired Acme Corp in 2019.")
        judgement = run(c.judge(req, Priority.BAND), c)
        took = time.monotonic() - started
    assert isinstance(judgement, Judgement)
    assert judgement.attempts == 3
    assert took >= 0.5  # the 429's Retry-After was honoured
    ctx = JudgeContext("openai", "standin-judge", threshold=0.8)
    verdict = build_verdict(req, ctx, judgement)
    assert verdict.kind is VerdictKind.FAITHFULNESS_LLM
    assert (verdict.score, verdict.decision) == (0.5, Decision.FAIL)
    claims = verdict.evidence["claims"]
    assert [c["supported"] for c in claims] == [True, False]
    assert claims[0]["context"] == {"index": 0, "start": 0, "end": 33}  # the quote, found
    assert verdict.evidence["reviews"]["verdict_id"] == "v-a1"
    assert verdict.evidence["judge"]["prompt_version"] == "faithfulness_llm/2"
    assert verdict.evidence["usage"]["attempts"] == 3


def test_a_moving_window_bounds_requests_retries_included() -> None:
    standin = StandIn(pattern=("ok", "500"))
    with serve(standin) as url:
        c = client(url, JudgeBudget(requests_per_minute=4, max_concurrency=4), window=2)

        async def all_of_them() -> list[object]:
            reqs = [
                request("Acme Corp acquired Globex in 2019.", "band", f"b{i}") for i in range(3)
            ]
            reqs.append(request("The Nile is longer than the Amazon.", "fail", "f0"))
            order = [Priority.BAND] * 3 + [Priority.FAIL]
            return await asyncio.gather(*(c.judge(r, p) for r, p in zip(reqs, order, strict=True)))

        results = run(all_of_them(), c)
    assert all(isinstance(r, Judgement) for r in results)
    assert len(standin.seen) == 7  # 4 answered, every other request failed: 3 retries
    assert standin.max_in_window(2.0) <= 4


def test_a_request_is_counted_when_it_is_sent_not_while_it_waits_for_a_slot() -> None:
    """One slow reply holds the only slot: the three requests behind it must not be counted
    while they wait, or they reach the endpoint together with the next window's four (the
    judge test's 42 requests in a minute under 40, issue 41's CI run)."""
    standin = StandIn(latencies=(2.5, *[0.01] * 7))
    with serve(standin) as url:
        c = client(url, JudgeBudget(requests_per_minute=4, max_concurrency=1), window=2)

        async def all_of_them() -> list[object]:
            answers = [f"Acme Corp acquired Globex in {2010 + i}." for i in range(8)]
            reqs = [request(a, "fail", f"f{i}") for i, a in enumerate(answers)]
            return await asyncio.gather(*(c.judge(r, Priority.FAIL) for r in reqs))

        results = run(all_of_them(), c)
    assert all(isinstance(r, Judgement) for r in results)
    assert len(standin.seen) == 8
    assert standin.max_in_window(2.0) <= 4, standin.seen


def test_a_sampled_pass_is_skipped_when_the_budget_is_spent_and_the_day_caps_all() -> None:
    with serve(StandIn()) as url:
        c = client(url, JudgeBudget(requests_per_minute=1), window=30)

        async def both() -> None:
            first = await c.judge(request("Acme Corp acquired Globex in 2019."), Priority.FAIL)
            assert isinstance(first, Judgement)
            sample = request("The Nile is longer than the Amazon.", "sample")
            with pytest.raises(BudgetSkipped) as skipped:
                await c.judge(sample, Priority.SAMPLE)
            assert skipped.value.reason == "wait_limit"

        run(both(), c)
        daily = client(url, JudgeBudget(daily_tokens=1500), window=30, tokens=64)
        with pytest.raises(BudgetSkipped) as capped:
            run(daily.judge(request("x " * 3000), Priority.FAIL), daily)
        assert capped.value.reason == "daily_tokens"


def test_a_malformed_reply_is_asked_once_more_then_defers() -> None:
    with serve(StandIn(pattern=("malformed", "ok"))) as url:
        c = client(url)
        judgement = run(c.judge(request("Acme Corp acquired Globex in 2019."), Priority.BAND), c)
    assert isinstance(judgement, Judgement)
    assert judgement.first_invalid == "this is not json"
    with serve(StandIn(pattern=("malformed",))) as url:
        req = request("Acme Corp acquired Globex in 2019.")
        c = client(url)
        judgement = run(c.judge(req, Priority.BAND), c)
    verdict = build_verdict(req, JudgeContext("openai", "standin-judge", 0.8), judgement)
    assert verdict.decision is Decision.DEFER
    assert verdict.reasons[0].code is ReasonCode.JUDGE_OUTPUT_INVALID
    assert verdict.evidence["response"] == "this is not json"


def test_a_too_long_prompt_defers_without_asking_and_a_down_endpoint_is_unavailable() -> None:
    standin = StandIn(pattern=("500",))
    with serve(standin) as url:
        c = client(url, max_attempts=2, breaker_failures=10)
        c.policy = c.policy.model_copy(update={"max_prompt_chars": 2200})

        async def both() -> None:
            outcome = await c.judge(request("word " * 400), Priority.FAIL)
            assert outcome[0] is ReasonCode.TOO_LONG_FOR_JUDGE  # type: ignore[index]
            assert standin.seen == []
            with pytest.raises(JudgeUnavailable):
                await c.judge(request("Acme Corp acquired Globex in 2019."), Priority.FAIL)
            assert len(standin.seen) == 2

        run(both(), c)


def test_refusals_defer_their_request_and_never_open_the_breaker() -> None:
    """A refused request (400) is that request's fault: it defers ``judge_refused``; the
    endpoint answered, so the breaker (open after 2 failures here) lets the next one through."""
    standin = StandIn(pattern=("400", "400", "400", "ok"))
    with serve(standin) as url:
        c = client(url, breaker_failures=2)

        async def four() -> list[object]:
            return [
                await c.judge(request("Acme Corp acquired Globex in 2019.", rid=f"r{i}"),
                              Priority.BAND)
                for i in range(4)
            ]  # fmt: skip

        outcomes = run(four(), c)
    assert [o[0] for o in outcomes[:3]] == [ReasonCode.JUDGE_REFUSED] * 3  # type: ignore[index]
    assert isinstance(outcomes[3], Judgement)
    assert [outcome for _, outcome in standin.seen] == ["400", "400", "400", "ok"]
