"""What the benchmarks share: the machine line every benchmark prints, fresh settings on a
broker of their own, a worker process with those settings, and reading an output topic's span.

    from harness import fresh_settings, machine, output_span, run_process, worker_cmd
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
import uuid
from pathlib import Path

from aiokafka import AIOKafkaConsumer

from verdictflow.settings import Settings

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


def worker_cmd(tier: str) -> list[str]:
    return [sys.executable, "-m", "verdictflow", "worker", "--log-level", "warning", "--tier", tier]
