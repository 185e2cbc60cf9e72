"""Per-event cost of the worker metrics, against the same code without them, in one run.

Outputs: ``MeteredOutbox`` (tally + per-batch flush) around a recording outbox vs the recording
outbox alone. Inputs: ``WorkerMonitor.on_message_out`` (two histogram observations) vs Faust's
plain ``Monitor.on_message_out``. Prints microseconds per event, the ratio, and the machine.

    python bench/metrics_overhead.py [--n 200000] [--batch 256]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import time
from types import SimpleNamespace

import orjson
from faust.sensors import Monitor

from verdictflow.streams.outbox import RecordingOutbox
from verdictflow.streams.worker_metrics import MeteredOutbox, WorkerMetrics


def verdict_bytes(i: int) -> bytes:
    return orjson.dumps(
        {
            "schema_version": 1,
            "verdict_id": f"{i:032x}",
            "kind": "groundedness",
            "input_id": f"a-{i}",
            "score": 0.5,
            "threshold": 0.8,
            "decision": ("PASS", "FAIL", "DEFER")[i % 3],
            "reasons": [],
            "evidence": {"tokens": ["w"] * 64},
        }
    )


async def outbox_run(outbox: object, values: list[bytes], batch: int) -> float:
    send, drain = outbox.send, outbox.drain  # type: ignore[attr-defined]
    t0 = time.perf_counter()
    for start in range(0, len(values), batch):
        for v in values[start : start + batch]:
            await send("verdicts.groundedness", "k", v)
        await drain()
    return time.perf_counter() - t0


def monitor_run(monitor: Monitor, n: int) -> float:
    tp = SimpleNamespace(topic="vf.answers", partition=0)
    now = time.time()
    messages = [SimpleNamespace(time_in=1.0, time_total=None, timestamp=now) for _ in range(n)]
    monitor.messages_active = n
    t0 = time.perf_counter()
    for i, m in enumerate(messages):
        monitor.on_message_out(tp, i, m)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    values = [verdict_bytes(i) for i in range(args.n)]
    base = asyncio.run(outbox_run(RecordingOutbox(), values, args.batch))
    metered = asyncio.run(
        outbox_run(MeteredOutbox(RecordingOutbox(), WorkerMetrics("vf.")), values, args.batch)
    )
    plain_monitor = monitor_run(Monitor(), args.n)
    worker_monitor = monitor_run(WorkerMetrics("vf.").new_monitor(), args.n)
    per = 1e6 / args.n
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, load {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"outbox send+drain: reference {base * per:.2f} us/event, metered "
          f"{metered * per:.2f} us/event, ratio {metered / base:.2f}, "
          f"added {(metered - base) * per:.2f} us/event")  # fmt: skip
    print(f"message ack: Faust Monitor {plain_monitor * per:.2f} us/event, WorkerMonitor "
          f"{worker_monitor * per:.2f} us/event, ratio {worker_monitor / plain_monitor:.2f}, "
          f"added {(worker_monitor - plain_monitor) * per:.2f} us/event")  # fmt: skip


if __name__ == "__main__":
    main()
