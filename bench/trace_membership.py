"""Traces through consumer-group changes: none may be lost while partitions move (issue 30).

Per run, on a fresh embedded broker: ``verdictflow ingest`` and one lexical worker; traces are
sent continuously through the OpenTelemetry SDK's OTLP/HTTP exporter (one trace per request,
``--interval`` s apart) while the assembling group changes: a second worker joins at 15 s, a
third at 35 s, the second leaves on SIGTERM at 55 s, the first is SIGKILLed at 70 s, and sending
stops at 85 s. Then it waits (up to ``--wait`` s) until every trace sent has a groundedness
verdict carrying its trace id, and reports the traces sent, those missing, and how long the
last one took after sending stopped. The kill makes the traces of the killed worker's partitions
wait for its session to time out, so some delay is expected; a missing trace is a defect.

    python bench/trace_membership.py [--runs 3] [--interval 0.3] [--wait 120]
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import fresh_settings, machine

from tests.support.otel_traces import send_traces, traced_ids, wait_healthy
from tests.support.processes import WorkerProcess, settings_env
from tests.support.reliability import OutputCollector
from verdictflow.dev_servers import start_server, stop_server
from verdictflow.settings import Settings
from verdictflow.streams.broker import EmbeddedBroker

#: (seconds after the first worker started sending, what happens to the group)
SCHEDULE = ((15.0, "join"), (35.0, "join"), (55.0, "sigterm 2nd"), (70.0, "sigkill 1st"))
SEND_SECONDS = 85.0


def one_run(tmp: Path, interval: float, wait: float) -> dict[str, object]:
    with EmbeddedBroker(log_path=tmp / "tansu.log") as broker:
        base = fresh_settings(broker.url, tmp, "embedded", 4)
        settings = Settings(**{**base.model_dump(), "trace_quiet_seconds": 1.0, "tier": "lexical"})
        env = settings_env(settings)
        ingest, url = start_server(["ingest", "--broker", settings.broker], env, tmp / "ingest.log")
        wait_healthy(url)
        workers = [WorkerProcess(settings, tmp / "worker-0.log")]
        sent: list[str] = []
        stop = threading.Event()

        def sender() -> None:
            i = 0
            while not stop.is_set():
                sent.extend(t for t, *_ in send_traces(url, i, 1))
                i += 1
                time.sleep(interval)

        try:
            with OutputCollector(settings) as out:
                thread = threading.Thread(target=sender, name="trace-sender")
                start = time.monotonic()
                thread.start()
                for at, event in SCHEDULE:
                    time.sleep(max(0.0, start + at - time.monotonic()))
                    if event == "join":
                        workers.append(WorkerProcess(settings, tmp / f"worker-{len(workers)}.log"))
                    elif event == "sigterm 2nd":
                        workers[1].proc.send_signal(signal.SIGTERM)
                    else:
                        workers[0].proc.send_signal(signal.SIGKILL)
                    print(f"  {at:5.1f} s: {event} ({len(sent)} traces sent)", flush=True)
                time.sleep(max(0.0, start + SEND_SECONDS - time.monotonic()))
                stop.set()
                thread.join()
                stopped = time.monotonic()
                want = set(sent)
                out.wait_until(lambda: want <= traced_ids(out, "groundedness"), timeout=wait)
                done = time.monotonic() - stopped
                missing = sorted(want - out.under_lock(lambda: traced_ids(out, "groundedness")))
        finally:
            stop.set()
            for w in workers:
                w.stop()
            stop_server(ingest)
    return {"sent": len(want), "missing": missing, "last_after_s": round(done, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--interval", type=float, default=0.3)
    parser.add_argument("--wait", type=float, default=120.0)
    args = parser.parse_args()
    print(machine())
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    lost = 0
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="vf-trace-membership-") as tmp:
            print(f"run {run + 1}:", flush=True)
            result = one_run(Path(tmp), args.interval, args.wait)
        missing = result["missing"]
        assert isinstance(missing, list)
        lost += len(missing)
        print(f"  sent {result['sent']} traces, missing {len(missing)} {missing[:5]}, last "
              f"verdict {result['last_after_s']} s after sending stopped", flush=True)  # fmt: skip
    print(f"\n{args.runs} runs: {lost} traces missing")


if __name__ == "__main__":
    main()
