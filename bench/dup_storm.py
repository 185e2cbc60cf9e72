"""Duplicate storms: re-score messages and index cost of m exact copies among n documents.

The docs agent used to ask every member of a new document's duplicate set to re-score
(m copies: m(m-1)/2 requests, each a range search returning m documents). Now the duplicate
index reader records which documents' capped counts an update moved, and only those are asked
(at most kdup per copy). This bench replays the updates into a ``DuplicateIndex`` as every
worker's reader does and counts both rules' messages; the reference is raw FAISS
``add_with_ids`` of the same vectors (what the reader cost before it kept set sizes), in the
same run. End to end through a worker: ``tests/integration/test_docs_hardening.py`` prints
its figures.

    python bench/dup_storm.py [--background 5000] [--copies 1000] [--kdup 5]
"""

from __future__ import annotations

import argparse
import os
import time

import faiss
import numpy as np
from harness import machine

from verdictflow.evaluators.dup_index import DuplicateIndex, unit_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--background", type=int, default=5000)
    parser.add_argument("--copies", type=int, default=1000)
    parser.add_argument("--kdup", type=int, default=5)
    parser.add_argument("--dim", type=int, default=384)
    args = parser.parse_args()
    print(f"machine: {machine()} | load {os.getloadavg()[0]:.2f}")
    rng = np.random.default_rng(1)
    background = unit_rows(rng.normal(size=(args.background, args.dim)))
    copy = unit_rows(rng.normal(size=(1, args.dim)))[0]
    rows = [*background, *([copy] * args.copies)]
    ids = [f"bg{i}" for i in range(args.background)] + [f"copy{i}" for i in range(args.copies)]
    order = rng.permutation(len(rows))  # copies arrive spread through the corpus

    raw = faiss.IndexIDMap2(faiss.IndexFlatIP(args.dim))
    started = time.perf_counter()
    for i in order:
        raw.add_with_ids(rows[i][None, :], np.array([i], dtype=np.int64))
    raw_s = time.perf_counter() - started

    index = DuplicateIndex(args.dim, args.kdup, 0.999)
    moved_total = old_rule = 0
    started = time.perf_counter()
    for i in order:
        moved_total += len(index.upsert(ids[i], rows[i]))
        old_rule += index.dup_set_size(ids[i])  # the former fan-out: the whole duplicate set
    index_s = time.perf_counter() - started
    n = len(rows)
    print(f"{n:,} documents ({args.copies:,} copies of one text), kdup {args.kdup}")
    print(
        f"re-score messages: {moved_total:,} now (bound (kdup+1) x copies = "
        f"{(args.kdup + 1) * args.copies:,}); {old_rule:,} by the former rule"
    )
    print(
        f"index time: {index_s:.2f} s ({index_s / n * 1e3:.3f} ms/doc) with set sizes kept; "
        f"raw FAISS add {raw_s:.2f} s ({raw_s / n * 1e3:.3f} ms/doc): {index_s / raw_s:.1f}x"
    )


if __name__ == "__main__":
    main()
