"""Document-quality stream: docs/s per worker and arrival -> DocQuality latency (p50/p99).

On a fresh embedded broker: N documents without vectors (embedded by the worker's index
reader; 5 % exact duplicate texts) are pre-produced; one verdictflow worker scores them.
Throughput = documents / (first DocQuality row to the worker's last record on doc-quality, the
internal re-score topic or the changelog: the time until every document's quality is final and
the worker is idle), start-up excluded. Then, with the worker
idle, M documents are produced one at a time (20/s) and the latency from the produce
timestamp to the DocQuality row's timestamp is measured. Reference in the same run, same
broker: a raw aiokafka loop (consume docs, decode, produce one record each, batched), for
throughput, and a raw aiokafka task forwarding each new document as a row (same fetch wait as
the worker's consumer), for latency.

    python bench/quality_stream.py [--n 5000] [--m 200]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition
from answers_throughput import raw_loop
from harness import fresh_settings, machine, output_span, run_process

from verdictflow.samples.doc_corpus import WORDS
from verdictflow.settings import Settings
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.broker import EmbeddedBroker
from verdictflow.streams.embedded_fetch import EMBEDDED_FETCH_WAIT_MS
from verdictflow.streams.replay import make_producer, replay
from verdictflow.streams.topic_reader import assign_all


def docs(n: int, tag: str) -> list[bytes]:
    """``n`` documents with distinct texts, except that every 20th copies the text of the
    document 10 before it: 5 % exact duplicates, in pairs (a near-duplicate cluster of a real
    corpus is small; one cluster of m copies costs m^2 re-score requests, see
    docs/document-quality.md)."""
    texts: list[str] = []
    for i in range(n):
        words = " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(8 + i % 40))
        texts.append(texts[i - 10] if i % 20 == 10 else f"{words} {tag}{i}")
    return [orjson.dumps({"doc_id": f"{tag}{i}", "text": t}) for i, t in enumerate(texts)]


def quality_row(value: bytes) -> bytes:
    """The reference's stand-in for scoring: one small row per document."""
    return orjson.dumps({"doc_id": orjson.loads(value)["doc_id"], "quality": 0.5})


async def latencies(s: Settings, lines: list[bytes], out_topic: str) -> list[float]:
    """ms from each record's produce timestamp to its output row's timestamp."""
    topic = f"{s.topic_prefix}{out_topic}"
    consumer = AIOKafkaConsumer(bootstrap_servers=s.bootstrap_servers, group_id=None)
    await consumer.start()
    parts = [TopicPartition(topic, p) for p in range(s.partitions)]
    consumer.assign(parts)
    await consumer.seek_to_end(*parts)
    producer = make_producer(s)
    await producer.start()
    sent: dict[str, float] = {}
    got: dict[str, float] = {}
    keys = {orjson.loads(line)["doc_id"] for line in lines}

    async def read() -> None:
        while len(got) < len(lines):
            for msgs in (await consumer.getmany(timeout_ms=200)).values():
                for m in msgs:
                    key = m.key.decode()
                    if key in keys and key not in got:
                        got[key] = m.timestamp

    reader = asyncio.ensure_future(read())
    for line in lines:
        key = orjson.loads(line)["doc_id"]
        meta = await (await producer.send(f"{s.topic_prefix}docs", value=line, key=key.encode()))
        sent[key] = meta.timestamp
        await asyncio.sleep(0.05)
    await asyncio.wait_for(reader, 120)
    await producer.stop()
    await consumer.stop()
    return [got[k] - sent[k] for k in sent]


async def settle(s: Settings, n: int, idle: float, timeout: float) -> tuple[int, int, float]:
    """Wait until every one of the ``n`` documents has a DocQuality row and the worker is done:
    no record for ``idle`` seconds on ``doc-quality``, the internal re-score topic or the
    features table's changelog (so re-scores still queued count as work). Returns (documents,
    rows, seconds from the first row to the last record on any of those topics)."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=s.bootstrap_servers, group_id=None, auto_offset_reset="earliest"
    )
    await consumer.start()
    rows_topic = f"{s.topic_prefix}doc-quality"
    names = sorted(await consumer.topics())
    watched = [rows_topic] + [t for t in names if "internal.doc-quality" in t or "changelog" in t]
    await assign_all(consumer, watched, wait_seconds=10)
    seen: set[bytes] = set()
    rows, first, last = 0, None, None
    quiet_since = time.monotonic()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=200, max_records=5000)
            for tp, msgs in batches.items():
                for m in msgs:
                    if tp.topic == rows_topic:
                        rows += 1
                        seen.add(m.key)
                        first = m.timestamp if first is None else min(first, m.timestamp)
                    last = m.timestamp if last is None else max(last, m.timestamp)
            if batches:
                quiet_since = time.monotonic()
            elif len(seen) >= n and time.monotonic() - quiet_since >= idle:
                if await group_lag(s, consumer) == 0:
                    break
                quiet_since = time.monotonic()
    finally:
        await consumer.stop()
    return len(seen), rows, ((last or 0) - (first or 0)) / 1000.0


async def group_lag(s: Settings, consumer: AIOKafkaConsumer) -> int:
    """Records on ``docs`` and the internal topic not yet committed by the worker's group: a
    quiet output does not mean the worker has consumed everything (re-score requests it has
    not read yet produce nothing until it does). The committed offsets are read by a consumer
    of the worker's group that only assigns partitions, so it never joins (no rebalance);
    aiokafka's admin client cannot decode Tansu's OffsetFetch answer."""
    inputs = (f"{s.topic_prefix}docs", f"{s.topic_prefix}internal.doc-quality")
    parts = [TopicPartition(t, p) for t in inputs for p in range(s.partitions)]
    reader = AIOKafkaConsumer(
        bootstrap_servers=s.bootstrap_servers, group_id=s.app_id, enable_auto_commit=False
    )
    await reader.start()
    try:
        reader.assign(parts)
        committed = {tp: await reader.committed(tp) for tp in parts}
    finally:
        await reader.stop()
    ends = await consumer.end_offsets(parts)
    return sum(max(0, ends[tp] - (committed[tp] or 0)) for tp in parts)


async def raw_forwarder_latencies(s: Settings, lines: list[bytes]) -> list[float]:
    """The latency reference: a plain aiokafka task forwards each new ``docs`` record as a
    small row to ``alerts`` (same fetch wait as the worker's embedded-profile consumer, same
    one-record produce), while :func:`latencies` measures produce -> row as for the worker."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=s.bootstrap_servers,
        group_id=None,
        fetch_max_wait_ms=EMBEDDED_FETCH_WAIT_MS,
    )
    await consumer.start()
    parts = await assign_all(consumer, [f"{s.topic_prefix}docs"], wait_seconds=10)
    await consumer.seek_to_end(*parts)
    producer = make_producer(s)
    await producer.start()

    async def forward() -> None:
        while True:
            for msgs in (await consumer.getmany(timeout_ms=200)).values():
                for m in msgs:
                    await producer.send(f"{s.topic_prefix}alerts", quality_row(m.value), key=m.key)

    task = asyncio.ensure_future(forward())
    try:
        return await latencies(s, lines, "alerts")
    finally:
        task.cancel()
        await producer.stop()
        await consumer.stop()


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--m", type=int, default=200)
    args = ap.parse_args()
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    print(f"machine: {machine()}")
    tmp = Path(tempfile.mkdtemp(prefix="vf-qbench-"))
    with EmbeddedBroker(log_path=tmp / "tansu.log") as broker:
        ref = fresh_settings(broker.url, tmp, "embedded", 4)
        asyncio.run(ensure_topics(ref))
        asyncio.run(replay(docs(args.n, "r"), "docs", ref))
        asyncio.run(raw_loop(ref, args.n, "docs", "alerts", quality_row))
        count, span = asyncio.run(output_span(ref, [ref.topic_prefix + "alerts"], args.n, 120))
        raw_rate = count / span
        raw_lat = asyncio.run(raw_forwarder_latencies(ref, docs(args.m, "rl")))
    with EmbeddedBroker(log_path=tmp / "tansu2.log") as broker:
        s = fresh_settings(broker.url, tmp, "embedded", 4)
        asyncio.run(ensure_topics(s))
        asyncio.run(replay(docs(args.n, "d"), "docs", s))
        cmd = [sys.executable, "-m", "verdictflow", "worker", "--log-level", "warning"]
        proc = run_process(cmd, s, tmp / "worker.log")
        try:
            count, rows, span = asyncio.run(settle(s, args.n, idle=3.0, timeout=1800))
            rate = count / span
            print(f"worker: {rate:,.0f} docs/s ({count} docs, {rows} rows in {span:.2f} s)")
            lat = asyncio.run(latencies(s, docs(args.m, "l"), "doc-quality"))
        finally:
            proc.terminate()
            proc.wait(30)
    print(f"throughput, {args.n} docs (no vectors: embedded by the worker; 5 % duplicate "
          "pairs), 4 partitions:")  # fmt: skip
    print(f"  verdictflow worker   {rate:8,.0f} docs/s  ({count} docs, {rows} rows, first row "
          f"to idle {span:.2f} s)")  # fmt: skip
    print(f"  raw aiokafka loop    {raw_rate:8,.0f} docs/s  ratio worker/raw {rate / raw_rate:.3f}")
    print(f"latency, {args.m} docs produced one at a time at 20/s (ms, produce -> row timestamp):")
    print(f"  verdictflow worker   p50 {pct(lat, 0.5):6.1f}  p99 {pct(lat, 0.99):6.1f}")
    print(f"  raw aiokafka forward p50 {pct(raw_lat, 0.5):6.1f}  p99 {pct(raw_lat, 0.99):6.1f}")
    ratio = statistics.median(lat) / max(1.0, statistics.median(raw_lat))
    print(f"  p50 ratio worker/raw {ratio:.1f}")


if __name__ == "__main__":
    main()
