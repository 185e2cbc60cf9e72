"""What the claim checker costs (issue 43): escalated answers per second through the judge
tier's local backend, next to a raw ONNX Runtime session over the same (chunk, claim) pairs in
the same run, and the process's resident memory.

Traffic: ``rag_nlp_tier.py``'s RAG-shaped answers (two or three sentences of a SciFact
abstract, three ~1.3k-character abstracts as contexts, drawn from a pool so contexts recur).

1. raw: the pairs the backend asks (each claim against its top chunks), through
   ``CheckerModel.run`` one pair a call as the backend makes them (no chunking, tokenising
   of the answer or cache); also printed: the same pairs in batches of 16 sorted by length,
   which the backend no longer uses (a batched pair's probability depends on its neighbours);
2. backend, cold: ``judge_answer`` per answer (claims, chunks, pre-selection, the session
   one pair a call, the reply) with an empty pair cache;
3. backend, warm: the same answers again (every pair from the cache: what recurring contexts
   and redelivered requests cost).

    python bench/checker_throughput.py [--n 200] [--pool 150] [--threads 1] [--model DIR]
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

from harness import machine
from rag_nlp_tier import rag_events

from verdictflow.evaluators.checker_chunks import (
    TOP_CHUNKS,
    chunk_contexts,
    claim_sentences,
    cut_claim,
    top_chunks,
)
from verdictflow.judge_tier.checker_backend import BATCH, CheckerModel, shipped_dir
from verdictflow.judge_tier.claim_checks import judge_answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--pool", type=int, default=150)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", type=Path, default=None)
    args = parser.parse_args()
    events = rag_events(args.data, args.n, args.pool)
    model = CheckerModel(args.model or shipped_dir(), threads=args.threads)
    pairs = []
    for e in events:
        chunks = chunk_contexts([c.text for c in e.context_passages])
        for claim in (cut_claim(c) for c in claim_sentences(e.answer)):
            pairs += [(chunks[i].text, claim) for i in top_chunks(claim, chunks, TOP_CHUNKS)]
    model.run(pairs[:BATCH])  # warm the session
    started = time.perf_counter()
    for pair in pairs:
        model.run([pair])
    raw = time.perf_counter() - started
    by_length = sorted(pairs, key=lambda p: len(p[0]))
    started = time.perf_counter()
    for i in range(0, len(by_length), BATCH):
        model.run(by_length[i : i + BATCH])
    batched = time.perf_counter() - started
    started = time.perf_counter()
    for e in events:
        judge_answer(model, e)
    cold = time.perf_counter() - started
    started = time.perf_counter()
    for e in events:
        judge_answer(model, e)
    warm = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    load = Path("/proc/loadavg").read_text().split()[0]
    print(f"# checker_throughput: {machine()}; {args.threads} thread(s); load "
          f"{load}")  # fmt: skip
    print(f"{len(events)} answers, {len(pairs)} pairs ({len(pairs) / len(events):.1f} an answer)")
    print("| system | pairs/s | answers/s | ratio to raw |")
    print("|---|---|---|---|")
    print(f"| raw ONNX session, one pair a call | {len(pairs) / raw:.1f} | "
          f"{len(events) / raw:.2f} | 1.00x |")  # fmt: skip
    print(f"| raw ONNX session, batches of {BATCH} by length | {len(pairs) / batched:.1f} | "
          f"{len(events) / batched:.2f} | {raw / batched:.2f}x |")  # fmt: skip
    print(f"| backend, cold cache | {len(pairs) / cold:.1f} | {len(events) / cold:.2f} | "
          f"{raw / cold:.2f}x |")  # fmt: skip
    print(f"| backend, warm cache | {len(pairs) / warm:.1f} | {len(events) / warm:.2f} | "
          f"{raw / warm:.2f}x |")  # fmt: skip
    print(f"peak resident memory: {rss:.0f} MiB")


if __name__ == "__main__":
    main()
