"""Consistency groups through a rebalance: two workers, 3,000 answers, the default 30 s window.

Three runs of the same replay on a fresh embedded broker each (issue 19's measurement):

- ``none``: two workers, no fault (the baseline: groups whose answers arrive more than a window
  apart close ``DEFER window_closed`` with part of their answers even here);
- ``sigterm``: one worker leaves cleanly a third of the way in, a new one joins;
- ``sigkill``: one worker is SIGKILLed a third of the way in, a new one joins.

For every request the offline evaluation closes ``complete``, a run counts the groups that
ended partial (closed by the window with fewer answers than offline) and the answers that got
no consistency verdict at all. The fix holds when the faulty runs have no more of either than
the no-fault run.

    python bench/rebalance_groups.py [--n 3000] [--runs none,sigterm,sigkill]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import orjson

from verdictflow.evaluators.policy import load_policy
from verdictflow.samples.traffic import generate
from verdictflow.scoring_jobs.batch.eval_answers import expected_verdicts
from verdictflow.scoring_setup import load_scoring
from verdictflow.settings import Settings
from verdictflow.streams.broker import EmbeddedBroker
from verdictflow.streams.replay import replay
from verdictflow.streams.tail import tail

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import machine


def worker(settings: Settings, data_dir: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ}
    for name, value in settings.model_dump(exclude_none=True).items():
        env[f"VERDICTFLOW_{name.upper()}"] = str(value)
    env["VERDICTFLOW_DATA_DIR"] = str(data_dir)
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "verdictflow", "worker"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def ready(log: Path) -> bool:
    return log.exists() and "Ready" in log.read_text(errors="replace")


def wait(cond, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.5)


async def collect(settings: Settings, verdicts: dict[str, dict[str, object]], stop) -> None:  # type: ignore[no-untyped-def]
    topics = ["verdicts.groundedness", "verdicts.consistency"]
    async for _topic, value in tail(topics, settings, from_beginning=True, should_stop=stop):
        v = orjson.loads(value)
        verdicts.setdefault(v["verdict_id"], v)


def run(fault: str, lines: list[bytes], tmp: Path, window: float) -> dict[str, object]:
    with EmbeddedBroker(log_path=tmp / f"broker-{fault}.log") as broker:
        tag = uuid.uuid4().hex[:8]
        settings = Settings(broker=broker.url, topic_prefix=f"r{tag}.", app_id=f"rebal-{tag}")
        logs = [tmp / f"{fault}-w{i}.log" for i in range(3)]
        procs = [worker(settings, tmp / f"{fault}-d{i}", logs[i]) for i in range(2)]
        for log in logs[:2]:
            wait(lambda log=log: ready(log), 180, "workers")
        verdicts: dict[str, dict[str, object]] = {}
        done = False

        def background() -> None:
            asyncio.run(collect(settings, verdicts, lambda: done))

        reader = threading.Thread(target=background, daemon=True)
        reader.start()
        t0 = time.monotonic()
        asyncio.run(replay(lines, "answers", settings))
        valid = sum(1 for line in lines if b'"id"' in line)

        def grounded() -> int:
            return sum(1 for v in list(verdicts.values()) if v["kind"] == "groundedness")

        if fault != "none":
            wait(lambda: grounded() >= valid // 3, 900, "a third of the answers")
            victim = procs[0]
            victim.send_signal(signal.SIGTERM if fault == "sigterm" else signal.SIGKILL)
            victim.wait(60)
            procs.append(worker(settings, tmp / f"{fault}-d2", logs[2]))
        wait(lambda: grounded() >= valid * 0.98, 1800, "groundedness verdicts")
        elapsed = time.monotonic() - t0
        time.sleep(window + 15)  # every open group's window closes, close ticks included
        done = True
        reader.join(30)
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(30)
        return {"verdicts": list(verdicts.values()), "elapsed": elapsed}


def compare(streamed: list[dict[str, object]], offline: dict[str, bytes]) -> dict[str, int]:
    """Partial groups and answers without a consistency verdict, against the offline run."""
    off = {
        v["input_id"]: v
        for v in map(orjson.loads, offline.values())
        if v["kind"] == "consistency" and str(v["input_id"]).startswith(("rg", "rw"))
    }
    got = {v["input_id"]: v for v in streamed if v["kind"] == "consistency"}
    partial = missing_answers = identical = 0
    for key, want in off.items():
        have = got.get(key)
        n_want = int(want["evidence"]["n"])  # type: ignore[index]
        if have is None:
            missing_answers += n_want
            continue
        n_have = int(have["evidence"]["n"])  # type: ignore[index]
        if n_have < n_want:
            partial += 1
            missing_answers += n_want - n_have
            ids = lambda v: [a["id"] for a in v["evidence"]["answers"]]  # type: ignore[index]  # noqa: E731
            lost = sorted(set(ids(want)) - set(ids(have)))
            print(f"  partial {key}: kept {ids(have)} missing {lost} ({have['reasons']})")
        elif orjson.dumps(have) == orjson.dumps(want):
            identical += 1
    missing_groups = sum(1 for key in off if key not in got)
    return {
        "groups": len(off),
        "identical": identical,
        "partial": partial,
        "missing_groups": missing_groups,
        "answers_without_verdict": missing_answers,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--runs", default="none,sigterm,sigkill")
    args = parser.parse_args()
    traffic = generate(args.n, seed=19, grouped_share=0.2, windowed_share=0.0, pad_to=1000)
    policy = load_policy(None)
    offline = expected_verdicts(traffic.lines, load_scoring(policy))
    window = policy.consistency.window_seconds
    print(f"machine: {machine()} | load {os.getloadavg()[0]:.2f}")
    print(f"{args.n} answers (~1 KB), window {window:.0f} s, 2 workers")
    with tempfile.TemporaryDirectory() as tmp:
        for fault in args.runs.split(","):
            result = run(fault, traffic.lines, Path(tmp), window)
            figures = compare(result["verdicts"], offline)  # type: ignore[arg-type]
            print(f"{fault:8s} {figures} replay->groundedness {result['elapsed']:.0f} s")


if __name__ == "__main__":
    main()
