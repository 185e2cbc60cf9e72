"""Summaries judged per second per worker process, for each judge, on SummEval traffic.

Measures, on the same N SummEval (article, summary) pairs, in one process (= one worker):
- the reference: spaCy's raw ``nlp.pipe`` over the texts a batch parses (distinct articles and
  summaries, as the agent does), nothing else;
- each judge (twin_lock, judge_lock, both) through :func:`judge_records`, the agent's own batch
  function: decode, parse, judge, encode verdicts. Broker I/O is excluded (the answers
  benchmark covers it; at ~5,000 records/s it is not the bottleneck here);
- both judges plus faithfulness (policy ``faithfulness.summaries``, the agent's default), with
  a new analyzer per run: every article is indexed afresh, as for articles not seen before.
Prints summaries/s, ms per summary, the ratio to the raw ``nlp.pipe`` rate, and the machine.

    python bench/judge_throughput.py [--n 640] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import orjson

from verdictflow.agents.summaries import summary_analyzer
from verdictflow.evaluators.judge.verdicts import JudgeConfig, JudgeContext
from verdictflow.evaluators.policy import Policy
from verdictflow.nlp import load_pipeline
from verdictflow.pipelines.summaries import MAX_BATCH, judge_records, spacy_parser
from verdictflow.scoring_setup import Scoring, load_scoring
from verdictflow.streams.records import Record

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "summeval")
    ap.add_argument("--n", type=int, default=640)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with open(args.data / "summeval_pairs.jsonl", encoding="utf-8") as f:
        rows = [json.loads(line) for _, line in zip(range(args.n), f, strict=False)]
    parse, version = spacy_parser()
    nlp = load_pipeline()
    ctx = JudgeContext(JudgeConfig(), version)
    batches = [rows[i : i + MAX_BATCH] for i in range(0, len(rows), MAX_BATCH)]

    def raw_pipe() -> None:
        for batch in batches:
            texts = list(dict.fromkeys(t for r in batch for t in (r["source"], r["system_output"])))
            for _ in nlp.pipe(texts, batch_size=32):
                pass

    scoring = load_scoring(Policy())

    def judged(judges: list[str], faithfulness: bool = False) -> None:
        fresh = Scoring(scoring.ctx, summary_analyzer(Policy())) if faithfulness else None
        for batch in batches:
            records = [
                Record(
                    "summaries",
                    0,
                    i,
                    None,
                    orjson.dumps(
                        {
                            "id": f"s{i}",
                            "article": r["source"],
                            "summary": r["system_output"],
                            "judges": judges,
                        }
                    ),
                )
                for i, r in enumerate(batch)
            ]
            judge_records(
                records, parse, ctx, max_bytes=1_000_000, override=judges, faithfulness=fresh
            )

    systems = {
        "raw nlp.pipe (reference)": raw_pipe,
        "twin_lock": lambda: judged(["twin_lock"]),
        "judge_lock": lambda: judged(["judge_lock"]),
        "both judges": lambda: judged(["twin_lock", "judge_lock"]),
        "both judges + faithfulness": lambda: judged(["twin_lock", "judge_lock"], True),
    }
    rates: dict[str, list[float]] = {name: [] for name in systems}
    for _ in range(args.repeat):  # interleaved, so load changes hit every system alike
        for name, run in systems.items():
            start = time.perf_counter()
            run()
            rates[name].append(len(rows) / (time.perf_counter() - start))
    ref = statistics.median(rates["raw nlp.pipe (reference)"])
    print(
        f"machine: {platform.machine()} {platform.processor() or ''} {os.cpu_count()} cpus, "
        f"Python {platform.python_version()}, {version}"
    )
    print(
        f"{len(rows)} SummEval summaries ({len({r['source'] for r in rows})} articles), "
        f"batches of {MAX_BATCH}, median of {args.repeat} runs, one process"
    )
    print(f"{'system':<28}{'summaries/s':>14}{'range':>20}{'ms/summary':>12}{'/ nlp.pipe':>12}")
    for name, rs in rates.items():
        med = statistics.median(rs)
        span = f"{min(rs):.1f}-{max(rs):.1f}"
        print(f"{name:<28}{med:>14.1f}{span:>20}{1000 / med:>12.1f}{med / ref:>12.2f}")


if __name__ == "__main__":
    main()
