"""The headline throughput ratios in one run (``make bench``), each against its reference
measured in the same run, with the machine and its load.

1. **lexical tier vs Faust forward** (embedded profile): ``verdictflow worker --tier lexical``
   and a trivial Faust forward (``bench/_faust_forward.py``), each on a fresh embedded broker
   over the same pre-produced ~1 KB answers (``bench/answers_throughput.py``), run in
   alternating pairs; the ratio is the median of the pairs' ratios, so a machine that speeds
   up or slows down between runs (this VM's CPU varies by a third over minutes) moves both
   sides of a pair alike.
2. **NLP tier vs raw ``nlp.pipe``**: ``score_answers`` for the NLP tier (hallucination) in this
   process over RAG-shaped answers (``bench/rag_nlp_tier.py``: SciFact abstracts, three
   ~1.5 KB contexts per answer), against raw ``nlp.pipe`` over the answers alone.
3. **RAG-shaped ``verdictflow eval answers`` vs raw ``nlp.pipe``**: the CLI as a user runs it
   (every kind), over the first half of the file and over all of it; the marginal rate
   (second half / extra seconds) leaves out start-up (imports, spaCy load).

2 and 3 run twice: contexts that **recur** (drawn from 450 abstracts: each retrieved ~4
times, as in RAG) and contexts that **rarely** do (drawn from 2,400: ~1,270 distinct among
1,800). The context cache starts empty in each run (a fresh process for 3, a fresh analyzer
for 2) so a recurring context is parsed once and a rare one every time.

    python bench/headline.py [--n 6000] [--pairs 3] [--rag-n 600]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from answers_throughput import run_system
from harness import machine
from rag_nlp_tier import offline_rate, rag_events, raw_pipe_rate

from verdictflow.evaluators.policy import Policy
from verdictflow.models.codec import encode
from verdictflow.samples.traffic import generate

ROOT = Path(__file__).resolve().parent.parent
#: Abstracts contexts are drawn from: recurring (each ~4 times in 600 answers) and rare.
POOLS = {"recurring contexts": 450, "rare contexts": 2400}


def lexical_vs_forward(n: int, pairs: int, tmp: Path) -> tuple[float, float, float]:
    """(median forward answers/s, median lexical answers/s, median of the pairs' ratios)."""
    lines = generate(n, seed=3, pad_to=1000, inline_share=0.2).lines
    forward, lexical, ratios = [], [], []
    for i in range(pairs):
        print(f"  pair {i + 1}/{pairs}: faust forward, lexical tier ...", flush=True)
        f = run_system("faust forward", lines, "embedded", 4, tmp)
        lx = run_system("lexical tier", lines, "embedded", 4, tmp)
        forward.append(f)
        lexical.append(lx)
        ratios.append(lx / f)
        print(f"    forward {f:,.0f}/s, lexical {lx:,.0f}/s, ratio {lx / f:.2f}", flush=True)
    return statistics.median(forward), statistics.median(lexical), statistics.median(ratios)


def eval_answers_seconds(path: Path) -> float:
    """Wall seconds of ``verdictflow eval answers PATH`` (verdicts to /dev/null)."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "verdictflow", "eval", "answers", str(path)],
        check=True,
        stdout=subprocess.DEVNULL,
        cwd=ROOT,
    )
    return time.perf_counter() - start


def eval_answers_marginal(lines: list[bytes], tmp: Path, name: str) -> float:
    half, whole = tmp / f"{name}-half.jsonl", tmp / f"{name}-all.jsonl"
    half.write_bytes(b"\n".join(lines[: len(lines) // 2]) + b"\n")
    whole.write_bytes(b"\n".join(lines) + b"\n")
    t_half, t_whole = eval_answers_seconds(half), eval_answers_seconds(whole)
    return (len(lines) - len(lines) // 2) / (t_whole - t_half)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--n", type=int, default=6000, help="answers per lexical/forward run")
    parser.add_argument("--pairs", type=int, default=3, help="forward/lexical pairs")
    parser.add_argument("--rag-n", type=int, default=600, help="RAG-shaped answers")
    args = parser.parse_args()
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    tmp = Path(tempfile.mkdtemp(prefix="vf-headline-"))
    started = datetime.now(UTC)
    print(f"machine: {machine()} | load {os.getloadavg()[0]:.2f} at the start")

    print("1. lexical tier vs Faust forward (embedded profile)", flush=True)
    forward, lexical, ratio = lexical_vs_forward(args.n, args.pairs, tmp)
    rows = [
        ("lexical tier vs Faust forward", f"{lexical:,.0f}", f"{forward:,.0f}", ratio),
    ]
    policy = Policy()
    for shape, pool in POOLS.items():
        events = rag_events(args.data, args.rag_n, pool)
        distinct = len({c.text for e in events for c in e.context_passages})
        print(f"2/3. {shape}: {len(events)} answers, {distinct} distinct contexts", flush=True)
        raw = raw_pipe_rate(events)
        nlp = offline_rate(events, policy)
        lines = [encode(e) for e in events]
        marginal = eval_answers_marginal(lines, tmp, shape.split()[0])
        rows.append((f"NLP tier vs raw nlp.pipe, {shape}", f"{nlp:.1f}", f"{raw:.1f}", nlp / raw))
        rows.append(
            (f"eval answers vs raw nlp.pipe, {shape}", f"{marginal:.1f}", f"{raw:.1f}",
             marginal / raw)
        )  # fmt: skip

    print(f"\nheadline ratios, {started:%Y-%m-%d}, load {os.getloadavg()[0]:.2f} at the end")
    print(f"{'measure':<52}{'answers/s':>11}{'reference/s':>13}{'ratio':>8}")
    for name, rate, reference, value in rows:
        print(f"{name:<52}{rate:>11}{reference:>13}{value:>7.2f}x")
    print(
        f"(lexical: median of {args.pairs} alternating pairs of {args.n} answers; NLP rows: "
        f"{args.rag_n} RAG-shaped answers, ~4.5 KB of context each; machine: {machine()})"
    )


if __name__ == "__main__":
    main()
