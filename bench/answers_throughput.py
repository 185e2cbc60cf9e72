"""Answers pipeline throughput on the embedded broker, next to two references in the same run.

1. raw: a plain aiokafka consume -> orjson decode/encode -> produce loop (the transport's ceiling)
2. faust-forward: a trivial Faust agent forwarding each event (Faust's per-event ceiling)
3. verdictflow: the real worker (decode, validate, Q1, Q2, verdict encode, produce)

Each system reads the same N pre-produced ~1 KB answers from its own topics. Rate = output
records / (last - first output timestamp), so process start-up is excluded from all three.

    python bench/answers_throughput.py [--n 20000] [--pad 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from verdictflow.samples.traffic import generate
from verdictflow.scoring_jobs.replay import replay
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.broker import EmbeddedBroker
from verdictflow.streams.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


def machine() -> str:
    cpu = "unknown cpu"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return (
        f"{platform.node()} | {cpu} | {os.cpu_count()} cores | Python {platform.python_version()}"
    )


def fresh_settings(broker: str, tmp: Path, profile: str, partitions: int) -> Settings:
    tag = uuid.uuid4().hex[:8]
    return Settings(
        broker=broker,
        topic_prefix=f"b{tag}.",
        app_id=f"bench-{tag}",
        data_dir=tmp,
        broker_profile=profile,
        partitions=partitions,
    )


async def output_span(
    settings: Settings, topics: list[str], want: int, timeout: float
) -> tuple[int, float]:
    """Read ``topics`` from the beginning until ``want`` records; return (count, seconds between
    first and last record timestamps)."""
    consumer = AIOKafkaConsumer(
        *topics,
        bootstrap_servers=settings.bootstrap_servers,
        group_id=None,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    first, last, n = None, None, 0
    deadline = time.monotonic() + timeout
    try:
        while n < want and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500, max_records=5000)
            for msgs in batches.values():
                for m in msgs:
                    n += 1
                    first = m.timestamp if first is None else min(first, m.timestamp)
                    last = m.timestamp if last is None else max(last, m.timestamp)
    finally:
        await consumer.stop()
    return n, ((last or 0) - (first or 0)) / 1000.0


def reencode(value: bytes) -> bytes:
    return orjson.dumps(orjson.loads(value))


async def raw_loop(
    settings: Settings,
    n: int,
    src_topic: str = "answers",
    dst_topic: str = "verdicts.groundedness",
    transform: Callable[[bytes], bytes] = reencode,
) -> None:
    """Consume-decode-encode-produce with plain aiokafka, batched as aiokafka likes it: the
    transport's ceiling, the reference the benchmarks compare a worker with."""
    src = f"{settings.topic_prefix}{src_topic}"
    dst = f"{settings.topic_prefix}{dst_topic}"
    consumer = AIOKafkaConsumer(
        src,
        bootstrap_servers=settings.bootstrap_servers,
        group_id=settings.app_id,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    producer = AIOKafkaProducer(bootstrap_servers=settings.bootstrap_servers, linger_ms=5)
    await consumer.start()
    await producer.start()
    seen = 0
    try:
        while seen < n:
            batches = await consumer.getmany(timeout_ms=1000, max_records=2000)
            futures = []
            for msgs in batches.values():
                for m in msgs:
                    futures.append(await producer.send(dst, key=m.key, value=transform(m.value)))
                    seen += 1
            if futures:
                await asyncio.gather(*futures)
                await consumer.commit()
    finally:
        await producer.stop()
        await consumer.stop()


def run_process(cmd: list[str], settings: Settings, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        **{
            f"VERDICTFLOW_{k.upper()}": str(v)
            for k, v in settings.model_dump(exclude_none=True).items()
        },
    }
    with open(log, "ab") as f:
        return subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT)


def run_system(name: str, lines: list[bytes], profile: str, partitions: int, tmp: Path) -> float:
    """Answers/s of one system on a broker of its own (Tansu slows as partitions grow, so a
    shared broker would favour whichever system runs first)."""
    with EmbeddedBroker(log_path=tmp / "tansu.log") as broker:
        s = fresh_settings(broker.url, tmp, profile, partitions)
        asyncio.run(ensure_topics(s))
        asyncio.run(replay(lines, "answers", s))
        if name == "raw aiokafka loop":
            asyncio.run(raw_loop(s, len(lines)))
            outs, want, proc = ["verdicts.groundedness"], len(lines), None
        elif name == "faust forward":
            outs, want = ["verdicts.groundedness"], len(lines)
            proc = run_process(
                [sys.executable, str(ROOT / "bench" / "_faust_forward.py")],
                s,
                tmp / "faust-forward.log",
            )
        else:  # verdictflow: one groundedness and one consistency verdict per answer
            outs, want = ["verdicts.groundedness", "verdicts.consistency"], 2 * len(lines)
            proc = run_process(
                [sys.executable, "-m", "verdictflow", "worker", "--log-level", "warning"],
                s,
                tmp / "verdictflow.log",
            )
        try:
            count, span = asyncio.run(output_span(s, [s.topic_prefix + o for o in outs], want, 600))
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(30)
    if count < want:
        sys.exit(f"{name}: only {count}/{want} outputs; logs in {tmp}")
    return (count * len(lines) / want) / span


SYSTEMS = ("raw aiokafka loop", "faust forward", "verdictflow worker")
PROFILES = {
    "embedded": "one record per producer batch (the Tansu workaround; dev and tests)",
    "kafka": "Kafka client defaults, batched produce (as on a real cluster)",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--pad", type=int, default=1000, help="approximate record size, bytes")
    parser.add_argument("--profile", choices=[*PROFILES, "both"], default="both")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3, help="runs per system; median shown")
    args = parser.parse_args()
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # reconnect noise at broker stop
    lines = generate(args.n, seed=3, pad_to=args.pad, inline_share=0.2).lines
    avg = sum(map(len, lines)) / len(lines)
    print(f"machine: {machine()}")
    print(
        f"input: {len(lines)} answers, {avg:.0f} bytes on average, 20% with inline variants;"
        f" each system on a fresh embedded broker (Tansu), {args.partitions} partitions"
    )
    tmp = Path(tempfile.mkdtemp(prefix="vf-bench-"))
    profiles = list(PROFILES) if args.profile == "both" else [args.profile]
    for profile in profiles:
        runs = {
            name: sorted(
                run_system(name, lines, profile, args.partitions, tmp) for _ in range(args.repeat)
            )
            for name in SYSTEMS
        }
        rates = {name: statistics.median(r) for name, r in runs.items()}
        print(f"\nproducer profile '{profile}': {PROFILES[profile]}")
        print(f"{'system':<22}{'answers/s (median)':>20}{'range':>18}{'vs raw':>9}{'vs faust':>10}")
        for name, rate in rates.items():
            spread = f"{runs[name][0]:,.0f}-{runs[name][-1]:,.0f}"
            print(
                f"{name:<22}{rate:>20,.0f}{spread:>18}{rate / rates[SYSTEMS[0]]:>9.3f}"
                f"{rate / rates[SYSTEMS[1]]:>10.3f}"
            )


if __name__ == "__main__":
    main()
