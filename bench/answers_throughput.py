"""Answers pipeline throughput on the embedded broker, next to two references in the same run.

1. raw: a plain aiokafka consume -> orjson decode/encode -> produce loop (the transport's ceiling)
2. faust-forward: a trivial Faust agent forwarding each event (Faust's per-event ceiling)
3. lexical tier: ``verdictflow worker --tier lexical`` (decode, validate, groundedness,
   relevance, completeness, consistency, verdict encode, produce)
4. NLP tier: ``verdictflow worker --tier nlp`` (hallucination, spaCy), on the first
   ``--nlp-n`` answers only (it is two orders of magnitude slower)

Each system reads the same pre-produced ~1 KB answers from its own topics. Rate = output
records / (last - first output timestamp), so process start-up is excluded from all of them.

Then the latency run: a ``--tier all`` worker (both tiers in one process) while answers are
produced live at ``--live-rate`` per second, far above what the NLP tier follows: the
produce-to-verdict latency of every groundedness verdict (verdict record timestamp minus answer
record timestamp), p50 / p99 / max, and how far behind the NLP tier is at the end.

    python bench/answers_throughput.py [--n 20000] [--pad 1000] [--profile embedded]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from harness import CpuClock, fresh_settings, machine, output_window, run_process, worker_cmd

from verdictflow.samples.traffic import generate
from verdictflow.settings import Settings
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.broker import EmbeddedBroker
from verdictflow.streams.replay import replay

ROOT = Path(__file__).resolve().parent.parent


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


@dataclass(frozen=True)
class SystemRun:
    """One system's run: answers/s between its first and last output, and, for a system run
    as a process of its own, the CPU it spent in that window per answer (ms) and as a share of
    the window (1.0: one core busy throughout), and the broker's CPU per answer meanwhile."""

    rate: float
    cpu_ms: float | None = None
    busy: float | None = None
    broker_cpu_ms: float | None = None


def run_system(name: str, lines: list[bytes], profile: str, partitions: int, tmp: Path) -> float:
    """Answers/s of one system on a broker of its own (Tansu slows as partitions grow, so a
    shared broker would favour whichever system runs first)."""
    return measure_system(name, lines, profile, partitions, tmp).rate


def measure_system(
    name: str, lines: list[bytes], profile: str, partitions: int, tmp: Path
) -> SystemRun:
    """:func:`run_system` with the CPU the system's process spent between its first and last
    output (:class:`harness.CpuClock`)."""
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
        elif name == "lexical tier":  # one groundedness and one consistency verdict per answer
            outs, want = ["verdicts.groundedness", "verdicts.consistency"], 2 * len(lines)
            proc = run_process(
                worker_cmd("lexical"),
                s,
                tmp / "lexical.log",
            )
        else:  # NLP tier: one hallucination verdict per answer
            outs, want = ["verdicts.hallucination"], len(lines)
            proc = run_process(
                worker_cmd("nlp"),
                s,
                tmp / "nlp.log",
            )
        clock = CpuClock(proc.pid) if proc is not None else contextlib.nullcontext()
        assert broker.pid is not None
        broker_clock = CpuClock(broker.pid)
        try:
            with clock, broker_clock:
                topics = [s.topic_prefix + o for o in outs]
                count, first, last = asyncio.run(output_window(s, topics, want, 600))
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(30)
    if count < want:
        sys.exit(f"{name}: only {count}/{want} outputs; logs in {tmp}")
    answers = count * len(lines) / want
    rate = answers / (last - first)
    if not isinstance(clock, CpuClock):
        return SystemRun(rate)
    cpu = clock.between(first, last)
    broker_cpu = broker_clock.between(first, last)
    return SystemRun(rate, 1000 * cpu / answers, cpu / (last - first), 1000 * broker_cpu / answers)


async def produce_live(settings: Settings, lines: list[bytes], rate: float) -> dict[str, float]:
    """Produce ``lines`` at ``rate`` per second; answer id -> record timestamp (seconds)."""
    producer = AIOKafkaProducer(bootstrap_servers=settings.bootstrap_servers, linger_ms=0)
    await producer.start()
    sent: dict[str, float] = {}
    start = time.monotonic()
    try:
        for i, line in enumerate(lines):
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            event = orjson.loads(line)
            key = (event.get("request_id") or event["id"]).encode()
            meta = await (await producer.send(f"{settings.topic_prefix}answers", line, key=key))
            sent[event["id"]] = meta.timestamp / 1000.0
    finally:
        await producer.stop()
    return sent


async def verdict_times(
    settings: Settings, topic: str, want: int, timeout: float
) -> dict[str, float]:
    """input_id -> record timestamp of the first verdict on ``topic`` (seconds)."""
    consumer = AIOKafkaConsumer(
        f"{settings.topic_prefix}{topic}",
        bootstrap_servers=settings.bootstrap_servers,
        group_id=None,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    seen: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    try:
        while len(seen) < want and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500, max_records=5000)
            for msgs in batches.values():
                for m in msgs:
                    seen.setdefault(orjson.loads(m.value)["input_id"], m.timestamp / 1000.0)
    finally:
        await consumer.stop()
    return seen


def latency_run(lines: list[bytes], profile: str, partitions: int, rate: float, tmp: Path) -> None:
    """Groundedness latency under a live replay while the NLP tier falls behind (module doc)."""
    with EmbeddedBroker(log_path=tmp / "tansu-live.log") as broker:
        s = fresh_settings(broker.url, tmp, profile, partitions)
        asyncio.run(ensure_topics(s))
        proc = run_process(
            worker_cmd("all"),
            s,
            tmp / "all.log",
        )
        try:
            warm = [orjson.dumps({"id": "warm-up", "answer": "ready", "contexts": ["ready"]})]
            asyncio.run(replay(warm, "answers", s))
            asyncio.run(verdict_times(s, "verdicts.groundedness", 1, 120))  # the worker is up
            t0 = time.monotonic()
            sent = asyncio.run(produce_live(s, lines, rate))
            produced_for = time.monotonic() - t0
            grounded = asyncio.run(verdict_times(s, "verdicts.groundedness", len(sent) + 1, 120))
            hallucination = asyncio.run(verdict_times(s, "verdicts.hallucination", 10**9, 5))
            load = os.getloadavg()[0]
        finally:
            proc.terminate()
            proc.wait(60)
    latencies = sorted(grounded[i] - t for i, t in sent.items() if i in grounded)
    if len(latencies) < len(sent):
        sys.exit(f"latency run: only {len(latencies)}/{len(sent)} groundedness verdicts")

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))]

    done_nlp = sum(1 for i in sent if i in hallucination)
    print(
        f"latency run ('{profile}', --tier all): {len(sent)} answers produced live at "
        f"{len(sent) / produced_for:,.0f}/s over {produced_for:.0f} s; groundedness "
        f"produce-to-verdict p50 {pct(0.5) * 1000:,.0f} ms, p99 {pct(0.99) * 1000:,.0f} ms, "
        f"max {latencies[-1] * 1000:,.0f} ms; the NLP tier had emitted {done_nlp} of "
        f"{len(sent)} hallucination verdicts by then (load {load:.2f})"
    )


SYSTEMS = ("raw aiokafka loop", "faust forward", "lexical tier", "nlp tier")
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
    parser.add_argument("--nlp-n", type=int, default=600, help="answers for the NLP tier")
    parser.add_argument("--live-n", type=int, default=6000, help="answers of the latency run")
    parser.add_argument("--live-rate", type=float, default=200.0, help="answers/s produced live")
    parser.add_argument(
        "--systems",
        default=",".join(SYSTEMS),
        help="comma-separated subset of: " + ", ".join(SYSTEMS) + " (ratios need the first two)",
    )
    parser.add_argument("--no-latency", action="store_true", help="skip the latency run")
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
    chosen = [name.strip() for name in args.systems.split(",")]
    unknown = sorted(set(chosen) - set(SYSTEMS))
    if unknown:
        parser.error(f"unknown systems {unknown}; choose from {', '.join(SYSTEMS)}")
    profiles = list(PROFILES) if args.profile == "both" else [args.profile]
    for profile in profiles:
        runs = {
            name: sorted(
                run_system(
                    name,
                    lines[: args.nlp_n] if name == "nlp tier" else lines,
                    profile,
                    args.partitions,
                    tmp,
                )
                for _ in range(1 if name == "nlp tier" else args.repeat)
            )
            for name in SYSTEMS
            if name in chosen
        }
        rates = {name: statistics.median(r) for name, r in runs.items()}
        print(f"\nproducer profile '{profile}': {PROFILES[profile]}")
        print(f"{'system':<22}{'answers/s (median)':>20}{'range':>18}{'vs raw':>9}{'vs faust':>10}")
        for name, rate in rates.items():
            spread = f"{runs[name][0]:,.0f}-{runs[name][-1]:,.0f}"
            vs_raw, vs_faust = (
                f"{rate / rates[ref]:.3f}" if ref in rates else "-" for ref in SYSTEMS[:2]
            )
            print(f"{name:<22}{rate:>20,.0f}{spread:>18}{vs_raw:>9}{vs_faust:>10}")
        print(f"(nlp tier: {min(args.nlp_n, len(lines))} answers, one run)")
        if not args.no_latency:
            latency_run(lines[: args.live_n], profile, args.partitions, args.live_rate, tmp)


if __name__ == "__main__":
    main()
