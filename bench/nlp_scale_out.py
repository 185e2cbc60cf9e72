"""Scale-out of the NLP tier: one vs two ``verdictflow worker --tier nlp`` processes in one
consumer group, on the same pre-produced answers, each run on a fresh embedded broker.

Rate = hallucination verdicts / (last - first verdict timestamp), start-up excluded; the second
worker is started with the first, so both share the partitions from the first rebalance on.
On a 2-core machine two workers can at best double the rate; the broker and the measuring
consumer take their share of the same cores (printed: the load average).

    python bench/nlp_scale_out.py [--n 1200] [--pad 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import fresh_settings, machine, output_span, run_process, worker_cmd

from verdictflow.samples.traffic import generate
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.broker import EmbeddedBroker
from verdictflow.streams.replay import replay


def nlp_rate(lines: list[bytes], workers: int, partitions: int, tmp: Path) -> float:
    """Hallucination verdicts per second with ``workers`` NLP-tier processes."""
    with EmbeddedBroker(log_path=tmp / "tansu.log") as broker:
        s = fresh_settings(broker.url, tmp, "embedded", partitions)
        asyncio.run(ensure_topics(s))
        asyncio.run(replay(lines, "answers", s))
        procs = [
            run_process(worker_cmd("nlp"), s, tmp / f"nlp-{workers}-{i}.log")
            for i in range(workers)
        ]
        try:
            topic = f"{s.topic_prefix}verdicts.hallucination"
            count, span = asyncio.run(output_span(s, [topic], len(lines), 900))
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(60)
    if count < len(lines):
        sys.exit(f"{workers} NLP workers: only {count}/{len(lines)} verdicts; logs in {tmp}")
    return count / span


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1200)
    parser.add_argument("--pad", type=int, default=1000, help="approximate record size, bytes")
    parser.add_argument("--partitions", type=int, default=4)
    args = parser.parse_args()
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    lines = generate(args.n, seed=3, pad_to=args.pad, inline_share=0.2).lines
    tmp = Path(tempfile.mkdtemp(prefix="vf-scale-"))
    print(f"machine: {machine()}")
    print(f"input: {len(lines)} answers, ~{args.pad} bytes, {args.partitions} partitions")
    one = nlp_rate(lines, 1, args.partitions, tmp)
    load_one = os.getloadavg()[0]
    two = nlp_rate(lines, 2, args.partitions, tmp)
    load_two = os.getloadavg()[0]
    print(f"1 NLP worker : {one:8.1f} answers/s (load {load_one:.2f})")
    print(f"2 NLP workers: {two:8.1f} answers/s (load {load_two:.2f})  {two / one:.2f}x")


if __name__ == "__main__":
    main()
