"""Can the operator console follow 1,000 verdicts a second? And how fast does its page draw?

Traffic shaped like production: the bundled sample's answers, each with ~4 KB of retrieved
context added (RAG-shaped), and their real verdicts (every kind; hallucination and faithfulness
with their evidence), copied with fresh ids so that nothing is a duplicate. Per answer the
console reads the answer and ~5.7 verdicts.

1. **Catch-up capacity**: the topics hold the whole run; a console started with
   ``--from-beginning`` reads it. Reference, same run, same records: a raw aiokafka consumer
   loop (no decoding) over the same topics.
2. **Live**: a console reads from the end while a paced producer sends verdicts at ``--rate``
   per second for ``--seconds``; its lag (records on the broker it has not read) is sampled
   every second, with its CPU.
3. **Page** (``--browser``, default when Chromium is installed): headless Chromium has the
   page open during the live run (draw time per tick), then reloads it: the first tick draws
   the 200 latest failures at once.

    python bench/console_throughput.py [--rate 1000] [--seconds 30] [--no-browser]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import machine

from tests.support import browser
from verdictflow.console.follower import CONSOLE_TOPICS
from verdictflow.dev import sample_path
from verdictflow.dev_servers import start_server
from verdictflow.evaluators.policy import load_policy
from verdictflow.scoring_jobs.batch.eval_answers import expected_verdicts
from verdictflow.scoring_setup import load_scoring
from verdictflow.settings import Settings
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.broker import EmbeddedBroker
from verdictflow.streams.replay import read_lines
from verdictflow.streams.topic_reader import assign_all, groupless_consumer

FILLER = (
    "Retrieved passage. The quarterly report lists revenue, costs and the outlook for each "
    "region, with figures rounded to the nearest thousand and notes on seasonal effects. "
) * 24  # ~4.4 KB


def traffic(copies: int) -> list[tuple[str, bytes]]:
    """(short topic, value) in send order: each copy's answers, then their verdicts."""
    lines = [ln for ln in read_lines(sample_path()) if ln.startswith(b"{") and b'"id"' in ln]
    answers = []
    for line in lines:
        try:
            answers.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue
    verdicts = [
        orjson.loads(v) for v in expected_verdicts(lines, load_scoring(load_policy(None))).values()
    ]
    out: list[tuple[str, bytes]] = []
    for c in range(copies):
        for a in answers:
            copy = {**a, "id": f"{a['id']}#{c}", "contexts": [*a.get("contexts", []), FILLER]}
            if a.get("request_id"):
                copy["request_id"] = f"{a['request_id']}#{c}"
            out.append(("answers", orjson.dumps(copy)))
        for v in verdicts:
            copy = {**v, "input_id": f"{v['input_id']}#{c}", "verdict_id": f"{v['verdict_id']}-{c}"}
            out.append((f"verdicts.{v['kind']}", orjson.dumps(copy)))
    return out


def verdict_share(records: list[tuple[str, bytes]]) -> float:
    return sum(t.startswith("verdicts.") for t, _ in records) / len(records)


async def produce(
    settings: Settings, records: list[tuple[str, bytes]], rate: float | None
) -> float:
    """Send ``records``; paced so that verdicts go out at ``rate`` per second (None: at once).
    Returns the seconds it took."""
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=settings.bootstrap_servers, linger_ms=5)
    await producer.start()
    t0 = time.perf_counter()
    try:
        per_record = None if rate is None else verdict_share(records) / rate
        pending = []
        for i, (topic, value) in enumerate(records):
            pending.append(await producer.send(settings.topic_prefix + topic, value))
            if per_record is not None:
                ahead = t0 + i * per_record - time.perf_counter()
                if ahead > 0.02:
                    await asyncio.sleep(ahead)
            if len(pending) >= 2000:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
    return time.perf_counter() - t0


async def raw_read(settings: Settings, total: int) -> float:
    """Seconds a raw aiokafka loop takes to read ``total`` records of the console's topics."""
    consumer = groupless_consumer(settings)
    await consumer.start()
    try:
        names = [settings.topic_prefix + t for t in CONSOLE_TOPICS]
        parts = await assign_all(consumer, names, wait_seconds=5)
        await consumer.seek_to_beginning(*parts)
        seen, t0 = 0, time.perf_counter()
        while seen < total:
            batches = await consumer.getmany(timeout_ms=200, max_records=5000)
            seen += sum(len(m) for m in batches.values())
        return time.perf_counter() - t0
    finally:
        await consumer.stop()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_console(
    settings: Settings, from_beginning: bool, log: Path
) -> tuple[subprocess.Popen[bytes], str]:
    env = {
        **os.environ,
        "VERDICTFLOW_BROKER": settings.broker,
        "VERDICTFLOW_TOPIC_PREFIX": settings.topic_prefix,
    }
    proc, url = start_server(
        ["console", *(["--from-beginning"] if from_beginning else [])], env, log
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz").json()["ready"]:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"the console did not start; see {log}")


def health(url: str) -> dict[str, Any]:
    data: dict[str, Any] = httpx.get(f"{url}/healthz", timeout=10).json()
    return data


def read_count(h: dict[str, Any]) -> int:
    return int(sum(h["records"].values()))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=1000.0, help="verdicts per second, live")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    use_browser = not args.no_browser and browser.missing() is None
    print(machine(), f"| load {os.getloadavg()[0]:.2f}")
    log_dir = Path(".verdictflow")
    log_dir.mkdir(exist_ok=True)
    sample = traffic(1)
    per_copy_verdicts = sum(t.startswith("verdicts.") for t, _ in sample)
    copies = max(1, int(args.rate * args.seconds / per_copy_verdicts))
    records = traffic(copies)
    total = len(records)
    size = sum(len(v) for _, v in records)
    n_verdicts = sum(t.startswith("verdicts.") for t, _ in records)
    print(f"traffic: {total} records ({n_verdicts} verdicts, {total - n_verdicts} answers), "
          f"{size / total:.0f} bytes per record on average")  # fmt: skip

    with EmbeddedBroker(log_path=log_dir / "bench-broker.log") as broker:
        # 1. catch-up capacity, against a raw loop on the same records
        catchup = Settings(broker=broker.url, broker_profile="embedded", topic_prefix="catchup.")
        asyncio.run(ensure_topics(catchup, list(CONSOLE_TOPICS)))
        asyncio.run(produce(catchup, records * 5, None))  # long enough to time the console
        raw_s = asyncio.run(raw_read(catchup, 5 * total))
        proc, url = start_console(catchup, True, log_dir / "bench-console.log")
        t0, cpu0 = time.perf_counter(), cpu_seconds(proc.pid)
        already = read_count(health(url))  # read while it started: not timed
        while read_count(health(url)) < 5 * total:
            time.sleep(0.05)
        console_s = time.perf_counter() - t0
        read = 5 * total - already
        console_cpu = cpu_seconds(proc.pid) - cpu0
        proc.terminate()
        proc.wait(15)
        rate_raw, rate_console = 5 * total / raw_s, read / console_s
        print("\ncatch-up (records already on the broker, read from the beginning):")
        print(f"  raw aiokafka loop: {rate_raw:,.0f} records/s ({raw_s:.2f} s), reference")
        print(f"  console (decode, count, join, highlight): {rate_console:,.0f} records/s "
              f"({read} records in {console_s:.2f} s, CPU {console_cpu:.2f} s), "
              f"ratio {rate_console / rate_raw:.2f}")  # fmt: skip

        # 2. live at the target rate
        live = Settings(broker=broker.url, broker_profile="embedded", topic_prefix="live.")
        asyncio.run(ensure_topics(live, list(CONSOLE_TOPICS)))
        proc, url = start_console(live, False, log_dir / "bench-console.log")
        page_ctx = browser.headless_chromium() if use_browser else None
        page = page_ctx.__enter__() if page_ctx is not None else None
        try:
            if page is not None:
                page.get(url + "/")
            lags: list[int] = []
            renders: list[float] = []
            cpu0 = cpu_seconds(proc.pid)

            async def live_run() -> float:
                task = asyncio.create_task(produce(live, records, args.rate))
                while not task.done():
                    await asyncio.sleep(1.0)
                    h = await asyncio.to_thread(health, url)
                    lags.append(sum(h["lag"].values()))
                    if page is not None:
                        state = await asyncio.to_thread(
                            page.execute_script, "return window.vfConsole"
                        )
                        renders.append(float(state["lastRenderMs"]))
                return await task

            sent_s = asyncio.run(live_run())
            t_end = time.perf_counter()
            while read_count(health(url)) < total and time.perf_counter() - t_end < 120:
                time.sleep(0.05)
            drain_s = time.perf_counter() - t_end
            cpu = cpu_seconds(proc.pid) - cpu0
            cpu_share = cpu / (sent_s + drain_s)
            print(
                f"\nlive: {n_verdicts} verdicts sent in {sent_s:.1f} s "
                f"({n_verdicts / sent_s:,.0f}/s; {total / sent_s:,.0f} records/s with the answers)"
            )
            print(
                f"  console lag, sampled each second: p50 {pct(lags, 0.5):.0f}, "
                f"max {max(lags)} records"
            )
            print(
                f"  all read {drain_s:.2f} s after the last send; "
                f"console CPU {cpu_share:.0%} of one core"
            )
            if page is not None and renders:
                print(f"  page open: draw per tick p50 {statistics.median(renders):.1f} ms, "
                      f"max {max(renders):.1f} ms")  # fmt: skip
                page.get(url + "/")
                first = None
                for _ in range(100):
                    state = page.execute_script("return window.vfConsole")
                    if state["ticks"] >= 1:
                        first = state
                        break
                    time.sleep(0.1)
                if first is not None:
                    rows = page.execute_script(
                        "return document.querySelectorAll('.failure').length"
                    )
                    draw, tick = first["failureRenderMs"], first["lastRenderMs"]
                    print(f"  page reload: first tick drew {rows} failure rows in {draw:.1f} ms "
                          f"(whole tick {tick:.1f} ms, layout included)")  # fmt: skip
        finally:
            if page_ctx is not None:
                page_ctx.__exit__(None, None, None)
            proc.terminate()
            proc.wait(15)
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
