"""Hallucination path throughput end to end through the broker, next to raw ``nlp.pipe``.

Input: HaluEval QA rows (``../shared/data``), each giving two answers (right, hallucinated) with
the row's knowledge passage as context, so 2 answers share each context, as retrieved
documents recur in RAG traffic.

1. raw nlp.pipe: the same spaCy pipeline (same components, batch size 64) over the texts the
   worker has to parse: every answer and every distinct context. The reference ceiling.
2. verdictflow worker: the real answers agent on a fresh embedded broker (decode, validate,
   parse, groundedness + relevance + completeness + hallucination + consistency, encode,
   produce). The worker is started and warmed up on 64 other answers first; rate = answers /
   (last hallucination verdict timestamp - start of the replay of the measured answers).

    python bench/hallucination_throughput.py [--rows 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import fresh_settings, machine, run_process

from verdictflow.evaluators.answer_analysis import COMPONENTS
from verdictflow.nlp import load_pipeline, pipeline_version
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.broker import EmbeddedBroker
from verdictflow.streams.replay import replay

ROOT = Path(__file__).resolve().parent.parent


def halueval_lines(path: Path, rows: int) -> tuple[list[bytes], list[str]]:
    """Encoded AnswerEvents and the distinct texts the worker must parse."""
    lines, texts, seen = [], [], set()
    with path.open(encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= rows:
                break
            row = json.loads(line)
            for kind in ("right_answer", "hallucinated_answer"):
                event = {
                    "id": f"h{i}-{kind}",
                    "query": row["question"],
                    "answer": row[kind],
                    "contexts": [row["knowledge"]],
                }
                lines.append(orjson.dumps(event))
                texts.append(row[kind])
            if row["knowledge"] not in seen:
                seen.add(row["knowledge"])
                texts.append(row["knowledge"])
    return lines, texts


def raw_pipe(texts: list[str], answers: int) -> float:
    nlp = load_pipeline(COMPONENTS)
    list(nlp.pipe(texts[:64], batch_size=64))  # warm-up
    start = time.perf_counter()
    for _ in nlp.pipe(texts, batch_size=64):
        pass
    return answers / (time.perf_counter() - start)


async def last_output_time(settings, topic: str, want: int, timeout: float) -> tuple[int, float]:
    """Read ``topic`` from the beginning until ``want`` records; (count, last timestamp in s)."""
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=settings.bootstrap_servers, group_id=None,
        auto_offset_reset="earliest",
    )  # fmt: skip
    await consumer.start()
    n, last = 0, 0.0
    deadline = time.monotonic() + timeout
    try:
        while n < want and time.monotonic() < deadline:
            for msgs in (await consumer.getmany(timeout_ms=500, max_records=5000)).values():
                n += len(msgs)
                last = max([last, *(m.timestamp / 1000.0 for m in msgs)])
    finally:
        await consumer.stop()
    return n, last


def worker_rate(lines: list[bytes], tmp: Path, partitions: int) -> float:
    """Answers/s from the first measured record's produce to the last hallucination verdict,
    with the worker already running and warmed up (spaCy loaded, group joined) on 64 others."""
    warmup = [
        orjson.dumps({**orjson.loads(x), "id": f"warm-{i}"}) for i, x in enumerate(lines[:64])
    ]
    with EmbeddedBroker(log_path=tmp / "tansu.log") as broker:
        settings = fresh_settings(broker.url, tmp, "embedded", partitions)
        topic = settings.topic_prefix + "verdicts.hallucination"
        asyncio.run(ensure_topics(settings))
        proc = run_process(
            [sys.executable, "-m", "verdictflow", "worker", "--log-level", "warning"],
            settings,
            tmp / "worker.log",
        )
        try:
            asyncio.run(replay(warmup, "answers", settings))
            count, _ = asyncio.run(last_output_time(settings, topic, len(warmup), 300))
            if count < len(warmup):
                sys.exit(f"worker did not warm up; logs in {tmp}")
            start = time.time()
            asyncio.run(replay(lines, "answers", settings))
            want = len(warmup) + len(lines)
            count, last = asyncio.run(last_output_time(settings, topic, want, 900))
        finally:
            proc.terminate()
            proc.wait(30)
    if count < want:
        sys.exit(f"only {count}/{want} hallucination verdicts; logs in {tmp}")
    return len(lines) / (last - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--rows", type=int, default=1000, help="HaluEval rows (2 answers each)")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3, help="runs per system; median shown")
    args = parser.parse_args()
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    lines, texts = halueval_lines(args.data / "halueval" / "qa_data_first1000.json", args.rows)
    print(f"machine: {machine()}")
    print(f"spaCy: {pipeline_version(load_pipeline(COMPONENTS))}")
    print(
        f"input: {len(lines)} answers, {len(texts) - len(lines)} distinct contexts"
        f" ({sum(map(len, texts)) / len(texts):.0f} chars per parsed text on average);"
        f" worker on a fresh embedded broker per run, {args.partitions} partitions"
    )
    tmp = Path(tempfile.mkdtemp(prefix="vf-bench-hall-"))
    raw = statistics.median(raw_pipe(texts, len(lines)) for _ in range(args.repeat))
    worker = statistics.median(worker_rate(lines, tmp, args.partitions) for _ in range(args.repeat))
    print(f"{'raw nlp.pipe (same texts)':<34} {raw:>9.0f} answers/s   1.00")
    print(f"{'verdictflow worker end to end':<34} {worker:>9.0f} answers/s   {worker / raw:.2f}")


if __name__ == "__main__":
    main()
