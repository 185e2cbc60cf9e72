"""What the benchmarks share: the machine line every benchmark prints, fresh settings on a
broker of their own, a worker process with those settings, reading an output topic's span, and
the CPU time a process spent within that span.

    from harness import CpuClock, fresh_settings, machine, output_span, output_window
    from harness import run_process, worker_cmd
"""

from __future__ import annotations

import bisect
import os
import platform
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from aiokafka import AIOKafkaConsumer

from verdictflow import compiled_scorers
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
        f" | lexical scorers {compiled_scorers.status().describe()}"
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
    count, first, last = await output_window(settings, topics, want, timeout)
    return count, last - first


async def output_window(
    settings: Settings, topics: list[str], want: int, timeout: float
) -> tuple[int, float, float]:
    """Read ``topics`` from the beginning until ``want`` records; return (count, first and last
    record timestamps in Unix seconds: the producer's create times, the writing process's wall
    clock)."""
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
    return n, (first or 0) / 1000.0, (last or 0) / 1000.0


class CpuClock:
    """The CPU time (user + system, all threads) of process ``pid``, sampled every
    ``interval`` seconds with the wall clock beside it, so that the CPU a process spent
    between two wall-clock instants (its first and last output) can be read back: an
    answers/s figure of a process that waits on the broker says little about what it costs,
    the CPU seconds it spent per answer do (Linux ``/proc``; 10 ms ticks)."""

    def __init__(self, pid: int, interval: float = 0.02) -> None:
        self._stat = Path(f"/proc/{pid}/stat")
        self._tick = os.sysconf("SC_CLK_TCK")
        self._interval = interval
        self._samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CpuClock:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _read(self) -> float | None:
        try:
            fields = self._stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None  # the process has exited
        return (int(fields[11]) + int(fields[12])) / self._tick  # utime, stime

    def _run(self) -> None:
        while not self._stop.is_set():
            cpu = self._read()
            if cpu is not None:
                self._samples.append((time.time(), cpu))
            self._stop.wait(self._interval)

    def at(self, when: float) -> float:
        """CPU seconds at wall-clock ``when``, interpolated between the samples around it."""
        samples = list(self._samples)
        if not samples:
            raise ValueError("no CPU samples taken")
        i = bisect.bisect_left(samples, (when,))
        if i == 0:
            return samples[0][1]
        if i == len(samples):
            return samples[-1][1]
        (t0, c0), (t1, c1) = samples[i - 1], samples[i]
        return c0 + (c1 - c0) * (when - t0) / (t1 - t0) if t1 > t0 else c1

    def between(self, start: float, end: float) -> float:
        """CPU seconds spent from wall-clock ``start`` to ``end``."""
        return self.at(end) - self.at(start)


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
