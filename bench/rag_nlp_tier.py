"""The NLP tier on RAG-shaped traffic: answers of a few hundred characters, each with three
retrieved abstracts of ~1.3k characters as contexts, next to raw ``nlp.pipe`` over the answers
alone, in the same run.

Answers are built from ``../shared/data/scifact_beir`` abstracts: two or three sentences of one
abstract (about 400 characters); a third of them with one number or one capitalised name
swapped for another abstract's, the error a hallucination check must catch. Contexts are the
source abstract and two others drawn from a pool smaller than the traffic, so retrieved
documents recur as they do in production. Seeded: the same traffic on every run.

Three figures, answers/s:
1. raw ``nlp.pipe`` (the NLP tier's components, batch 64) over the answers alone: the ceiling;
2. offline: ``score_answers`` for the NLP tier over the same events, in this process;
3. end to end: a ``verdictflow worker --tier nlp`` process on an embedded broker, up and warm
   (one answer scored), then every event produced at once: events / (last verdict - start of
   the replay), and the worker's peak RSS.

    python bench/rag_nlp_tier.py [--n 600] [--pool 450] [--mode lexical|parse]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer
from harness import fresh_settings, machine, run_process, worker_cmd

from verdictflow.evaluators.answer_analysis import COMPONENTS
from verdictflow.evaluators.answer_batch import score_answers
from verdictflow.evaluators.kinds import Tier
from verdictflow.evaluators.policy import Policy
from verdictflow.models.codec import encode
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Verdict
from verdictflow.nlp import load_pipeline
from verdictflow.scoring_jobs.batch.eval_answers import CHUNK_LINES
from verdictflow.scoring_setup import load_scoring
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.broker import EmbeddedBroker
from verdictflow.streams.replay import replay

ROOT = Path(__file__).resolve().parent.parent
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")
_NAME = re.compile(r"\b[A-Z][a-z]{3,}\b")


def abstracts(data: Path, minimum: int = 900) -> list[str]:
    texts = []
    with (data / "scifact_beir" / "corpus.jsonl").open("rb") as rows:
        for line in rows:
            text = orjson.loads(line)["text"]
            if len(text) >= minimum:
                texts.append(text)
    return texts


def swap_detail(answer: str, other: str, rng: random.Random) -> str:
    """One number (or, without one, one capitalised name) replaced by another abstract's."""
    for pattern in (_NUMBER, _NAME):
        mine = [m for m in pattern.finditer(answer) if m.start() > 0]
        theirs = sorted({m.group(0) for m in pattern.finditer(other)} - {m.group(0) for m in mine})
        if mine and theirs:
            target = rng.choice(mine)
            return answer[: target.start()] + rng.choice(theirs) + answer[target.end() :]
    return answer


def rag_events(
    data: Path, n: int, pool_size: int, seed: int = 7, besides: bool = False
) -> list[AnswerEvent]:
    """``n`` answers over contexts drawn from ``pool_size`` abstracts; ``besides``: from the
    abstracts that pool leaves out instead (as many as there are), so no context is shared."""
    rng = random.Random(seed)
    every = abstracts(data)
    pool = rng.sample(every, pool_size)
    if besides:
        chosen = set(pool)
        pool = [text for text in every if text not in chosen]
    events = []
    for i in range(n):
        source, *others = rng.sample(pool, 3)
        sentences = _SENTENCE_END.split(source)
        start = rng.randrange(max(1, len(sentences) - 2))
        answer = ""
        for sentence in sentences[start:]:
            if answer and len(answer) + len(sentence) > 450:
                break
            answer = f"{answer} {sentence}".strip()
        if i % 3 == 2:
            answer = swap_detail(answer, others[0], rng)
        contexts = [source, *others]
        rng.shuffle(contexts)
        events.append(
            AnswerEvent(
                id=f"rag-{i}", query="", answer=answer, contexts=contexts, request_id=f"r{i}"
            )
        )
    return events


#: Answers a raw ``nlp.pipe`` batch and an NLP-tier batch hold: ``eval answers``' chunk.
BATCH = CHUNK_LINES


def raw_parser(events: list[AnswerEvent]) -> Callable[[int, int, int], None]:
    """Raw ``nlp.pipe`` over the answers, the pipeline loaded and warmed up: the returned
    function parses ``answers[start:stop]`` with ``processes`` (spaCy's ``n_process``). The
    reference of every NLP ratio (this bench's and ``headline.py``'s chunk by chunk)."""
    answers = [e.answer for e in events]
    nlp = load_pipeline(COMPONENTS)
    list(nlp.pipe(answers[:BATCH], batch_size=BATCH))  # warm up

    def parse(start: int, stop: int, processes: int) -> None:
        for _ in nlp.pipe(answers[start:stop], batch_size=BATCH, n_process=processes):
            pass

    return parse


def nlp_tier_scorer(
    events: list[AnswerEvent], policy: Policy
) -> Callable[[int, int], list[list[Verdict]]]:
    """The NLP tier's ``score_answers`` with spaCy loaded and a fresh context cache: the
    returned function scores ``events[start:stop]`` (in batches of :data:`BATCH`)."""
    scoring = load_scoring(policy, "none")
    score_answers(events[:8], scoring.ctx, scoring.analyzer, Tier.NLP)  # loads spaCy
    scoring = load_scoring(policy, "none")  # a fresh context cache, spaCy already loaded

    def score(start: int, stop: int) -> list[list[Verdict]]:
        scored: list[list[Verdict]] = []
        for i in range(start, stop, BATCH):
            chunk = events[i : min(i + BATCH, stop)]
            scored += score_answers(chunk, scoring.ctx, scoring.analyzer, Tier.NLP)
        return scored

    return score


def raw_pipe_rate(events: list[AnswerEvent], processes: int = 1) -> float:
    """Answers/s of raw ``nlp.pipe`` over the answers, the pipeline loaded; ``processes`` is
    spaCy's ``n_process``."""
    parse = raw_parser(events)
    start = time.perf_counter()
    parse(0, len(events), processes)
    return len(events) / (time.perf_counter() - start)


def offline_rate(events: list[AnswerEvent], policy: Policy) -> float:
    score = nlp_tier_scorer(events, policy)
    start = time.perf_counter()
    score(0, len(events))
    return len(events) / (time.perf_counter() - start)


def peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def last_verdict_time(
    settings: Any, want: int, skip: str, timeout: float
) -> tuple[int, float]:
    """Read ``verdicts.hallucination`` from the beginning until ``want`` verdicts other than
    ``skip``'s; return (count, newest record timestamp in seconds)."""
    consumer = AIOKafkaConsumer(
        settings.topic_prefix + "verdicts.hallucination",
        bootstrap_servers=settings.bootstrap_servers,
        group_id=None,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    count, newest = 0, 0.0
    deadline = time.monotonic() + timeout
    try:
        while count < want and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                for record in records:
                    if orjson.loads(record.value)["input_id"] != skip:
                        count += 1
                        newest = max(newest, record.timestamp / 1000)
    finally:
        await consumer.stop()
    return count, newest


def end_to_end_rate(events: list[AnswerEvent], policy_path: Path, tmp: Path) -> tuple[float, float]:
    """A worker that is up and has loaded spaCy (one warm-up answer scored), then every event
    produced at once: answers / (last verdict - start of the replay). The whole backlog is
    counted, the first batch included."""
    warm_up = events[0].model_copy(update={"id": "warm-up", "request_id": "warm-up"})
    lines = [encode(e) for e in events]
    with EmbeddedBroker(log_path=tmp / "tansu.log") as broker:
        settings = fresh_settings(broker.url, tmp, "embedded", 4)
        settings = settings.model_copy(update={"policy": policy_path})
        asyncio.run(ensure_topics(settings))
        proc = run_process(worker_cmd("nlp"), settings, tmp / "nlp.log")
        try:
            asyncio.run(replay([encode(warm_up)], "answers", settings))
            ready, _ = asyncio.run(last_verdict_time(settings, 1, "", 300))
            if not ready:
                raise SystemExit(f"the worker never scored the warm-up answer; logs in {tmp}")
            start = time.time()
            asyncio.run(replay(lines, "answers", settings))
            count, last = asyncio.run(last_verdict_time(settings, len(lines), "warm-up", 1200))
            rss = peak_rss_mib(proc.pid)
        finally:
            proc.terminate()
            proc.wait(30)
    if count < len(lines):
        raise SystemExit(f"only {count}/{len(lines)} verdicts; logs in {tmp}")
    return count / (last - start), rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--pool", type=int, default=450, help="abstracts contexts are drawn from")
    parser.add_argument("--mode", choices=["lexical", "parse"], default="lexical",
                        help="hallucination.context_index of the policy")  # fmt: skip
    args = parser.parse_args()
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # reconnect noise at broker stop
    events = rag_events(args.data, args.n, args.pool)
    distinct = {c.text for e in events for c in e.context_passages}
    answer_chars = sum(len(e.answer) for e in events) / len(events)
    context_chars = sum(len(c.text) for e in events for c in e.context_passages) / len(events)
    print(f"machine: {machine()} | load {os.getloadavg()[0]:.2f}")
    print(
        f"traffic: {len(events)} answers of {answer_chars:.0f} characters, 3 contexts each "
        f"({context_chars:,.0f} characters per answer, {len(distinct)} distinct), "
        f"a third with a swapped number or name; context_index: {args.mode}"
    )
    tmp = Path(tempfile.mkdtemp(prefix="vf-rag-"))
    policy = Policy.model_validate({"hallucination": {"context_index": args.mode}})
    policy_path = tmp / "policy.yaml"
    policy_path.write_text(f"hallucination:\n  context_index: {args.mode}\n")
    raw = raw_pipe_rate(events)
    offline = offline_rate(events, policy)
    streamed, rss = end_to_end_rate(events, policy_path, tmp)
    print(f"{'system':<46}{'answers/s':>10}{'vs raw nlp.pipe':>17}")
    print(f"{'raw nlp.pipe over the answers alone':<46}{raw:>10.1f}{1.0:>17.2f}")
    print(f"{'offline score_answers (NLP tier)':<46}{offline:>10.1f}{offline / raw:>17.2f}")
    e2e = "end to end: worker --tier nlp, embedded broker"
    print(f"{e2e:<46}{streamed:>10.1f}{streamed / raw:>17.2f}")
    print(f"worker peak RSS {rss:,.0f} MiB; load at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
