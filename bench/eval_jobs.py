"""``verdictflow eval answers --jobs N``: the command's wall time with one and more scoring
processes on RAG-shaped answers, next to raw ``nlp.pipe`` with one and as many processes over
the same answers, in the same run.

What a user sees is the command's wall time (start-up included: each process imports the
package and loads spaCy), so that is what is timed, in alternating rounds of the job counts
(this VM's speed drifts by a fifth within minutes). Raw ``nlp.pipe`` (``n_process``, spaCy's own
multiprocessing) is the reference for how far processes can take spaCy's share on these cores;
its load is left out. Every run's stdout must be byte-identical to the one-process run's.

    python bench/eval_jobs.py [--n 1200] [--pool 2400] [--jobs 1,2] [--rounds 2]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import machine
from rag_nlp_tier import rag_events, raw_pipe_rate

from verdictflow.models.codec import encode

ROOT = Path(__file__).resolve().parent.parent


def command_seconds(file: Path, jobs: int) -> tuple[float, str]:
    """Wall seconds of ``eval answers FILE --jobs N`` (no context store: every context is
    indexed, as on a first run) and the SHA-256 of its stdout."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "verdictflow", "eval", "answers", str(file), "--no-context-store",
         "--jobs", str(jobs)],
        capture_output=True, check=True,
    )  # fmt: skip
    return time.perf_counter() - start, hashlib.sha256(done.stdout).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--n", type=int, default=1200, help="RAG-shaped answers")
    parser.add_argument("--pool", type=int, default=2400, help="abstracts contexts come from")
    parser.add_argument("--jobs", default="1,2", help="comma-separated --jobs values")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    job_counts = [int(j) for j in args.jobs.split(",")]
    print(f"machine: {machine()} | load {os.getloadavg()[0]:.2f} at the start")
    events = rag_events(args.data, args.n, args.pool)
    distinct = len({c.text for e in events for c in e.context_passages})
    file = Path(tempfile.mkdtemp(prefix="vf-eval-jobs-")) / "answers.jsonl"
    file.write_bytes(b"\n".join(encode(e) for e in events) + b"\n")
    print(f"{len(events)} RAG-shaped answers, {distinct} distinct contexts (~4.5 KB each)")
    seconds: dict[int, list[float]] = {j: [] for j in job_counts}
    raw: dict[int, list[float]] = {j: [] for j in job_counts}
    digests = set()
    for round_no in range(args.rounds):
        for jobs in job_counts:
            took, digest = command_seconds(file, jobs)
            seconds[jobs].append(took)
            digests.add(digest)
            raw[jobs].append(raw_pipe_rate(events, jobs))
            print(f"round {round_no + 1}, --jobs {jobs}: {took:.1f} s", flush=True)
    if len(digests) != 1:
        sys.exit(f"outputs differ between job counts: {sorted(digests)}")
    base = statistics.median(seconds[job_counts[0]])
    raw_base = statistics.median(raw[job_counts[0]])
    print(f"\neval answers --jobs, load {os.getloadavg()[0]:.2f} at the end; stdout identical")
    print(f"{'jobs':>5}{'wall s':>9}{'answers/s':>11}{'speed-up':>10}{'raw nlp.pipe/s':>17}"
          f"{'raw speed-up':>14}")  # fmt: skip
    for jobs in job_counts:
        wall = statistics.median(seconds[jobs])
        rate = statistics.median(raw[jobs])
        print(
            f"{jobs:>5}{wall:>9.1f}{len(events) / wall:>11.1f}{base / wall:>9.2f}x"
            f"{rate:>17.1f}{rate / raw_base:>13.2f}x"
        )
    print(f"(medians of {args.rounds} alternating rounds; wall time includes start-up)")


if __name__ == "__main__":
    main()
