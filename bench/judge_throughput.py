"""The judge client's throughput and budget adherence against a local OpenAI-compatible
stand-in (scripted replies, fixed latency, failures on a pattern), next to the raw ``openai``
client asking the same stand-in the same prompts with the same concurrency in the same run.

Reported: requests/s and answers/s through ``JudgeClient`` (budget, retries with Retry-After,
breaker, contract parsing) and through the raw client (no budget, no retries: failed requests
are simply failures), the ideal ``concurrency / latency``, and the most requests the stand-in
saw in any window of the budget (which must not exceed it). No language model runs here: the
figures are the plumbing's, not a judge's.

    python bench/judge_throughput.py [--answers 200] [--latency 0.2] [--concurrency 4]
                                     [--rpm 600] [--fail-every 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

from harness import machine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.openai_standin import StandIn, serve
from verdictflow.evaluators import faithfulness_llm as contract
from verdictflow.evaluators.escalation import Priority
from verdictflow.evaluators.judge_tier_policy import JudgeBudget, JudgeTierPolicy
from verdictflow.judge_tier.backends import OpenAIBackend
from verdictflow.judge_tier.client import JudgeClient
from verdictflow.models.events import AnswerEvent
from verdictflow.models.judge import JudgeRequest, ReviewedVerdict
from verdictflow.models.verdicts import Decision, VerdictKind

CONTEXT = "Acme Corp acquired Globex in 2019. The Nile is longer than the Amazon."


def requests(n: int) -> list[JudgeRequest]:
    return [
        JudgeRequest(
            scope="answer",
            priority="band",
            reviews=ReviewedVerdict(
                verdict_id=f"v{i}",
                kind=VerdictKind.FAITHFULNESS,
                score=0.5,
                decision=Decision.PASS,
                threshold=0.4,
                config_digest="d",
            ),
            event=AnswerEvent(
                id=f"a{i}",
                answer="Acme Corp acquired Globex in 2019. Globex won.",
                contexts=[f"Record {i}. {CONTEXT}"],
            ),
        )
        for i in range(n)
    ]


async def through_client(url: str, reqs: list[JudgeRequest], policy: JudgeTierPolicy) -> float:
    client = JudgeClient(OpenAIBackend(url, "standin-judge", "k", 30), policy)
    started = time.perf_counter()
    await asyncio.gather(*(client.judge(r, Priority.BAND) for r in reqs))
    took = time.perf_counter() - started
    await client.close()
    return took


async def raw(url: str, reqs: list[JudgeRequest], concurrency: int) -> tuple[float, int]:
    from openai import APIStatusError, AsyncOpenAI

    client = AsyncOpenAI(base_url=url, api_key="k", max_retries=0)
    gate = asyncio.Semaphore(concurrency)
    failed = 0

    async def one(r: JudgeRequest) -> None:
        nonlocal failed
        async with gate:
            try:
                await client.chat.completions.create(
                    model="standin-judge",
                    messages=contract.messages(r.event),  # type: ignore[arg-type]
                )
            except APIStatusError:
                failed += 1

    started = time.perf_counter()
    await asyncio.gather(*(one(r) for r in reqs))
    took = time.perf_counter() - started
    await client.close()
    return took, failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--rpm", type=int, default=600)
    parser.add_argument("--fail-every", type=int, default=10, help="one 500 in every N requests")
    args = parser.parse_args()
    print(f"machine: {machine()} | load {os.getloadavg()[0]:.2f}")
    pattern = ("500",) + ("ok",) * (args.fail_every - 1)
    reqs = requests(args.answers)
    policy = JudgeTierPolicy(
        budget=JudgeBudget(requests_per_minute=args.rpm, max_concurrency=args.concurrency)
    )
    standin = StandIn(pattern=pattern, latency=args.latency, retry_after=0.2)
    with serve(standin) as url:
        raw_s, raw_failed = asyncio.run(raw(url, reqs, args.concurrency))
        standin.seen.clear()
        client_s = asyncio.run(through_client(url, reqs, policy))
    sent = len(standin.seen)
    ideal = args.concurrency / args.latency
    print(
        f"{args.answers} answers, stand-in latency {args.latency * 1000:.0f} ms, one 500 in "
        f"{args.fail_every}, concurrency {args.concurrency}, budget {args.rpm} requests/min"
    )
    print(
        f"raw openai client : {args.answers / raw_s:6.1f} requests/s ({raw_failed} failed, "
        f"not retried)"
    )
    print(
        f"JudgeClient       : {sent / client_s:6.1f} requests/s, {args.answers / client_s:6.1f} "
        f"answers/s ({sent} requests, every answer judged); "
        f"{(args.answers / client_s) / (args.answers / raw_s):.2f}x the raw client's rate"
    )
    print(f"ideal concurrency/latency: {ideal:.1f} requests/s")
    print(f"most requests in any 60 s window: {standin.max_in_window(60.0)} (budget {args.rpm})")


if __name__ == "__main__":
    main()
