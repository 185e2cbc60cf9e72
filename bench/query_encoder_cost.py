"""CPU per query of each query encoder, one query per pass and in micro-batches (issue 32).

SciFact's claims in file order (as they would arrive), embedded by the fp32 and the int8 MiniLM
query encoders one per forward pass and in batches of 4, 8 and 16 (``embed_batch``: texts
grouped by token length, padding <= 25 %). Reports CPU milliseconds per query (process time,
one thread) and how far batched vectors are from the lone ones (minimum cosine, maximum
absolute difference). Needs the ``[st]`` extra and ``../shared/data/scifact_beir``.

    python bench/query_encoder_cost.py [--n 480]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from answers_throughput import machine

from verdictflow.embedders import make_embedder

QUERIES = Path(__file__).resolve().parents[2] / "shared/data/scifact_beir/queries.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=480)
    args = parser.parse_args()
    texts = [json.loads(line)["text"] for line in QUERIES.read_text().splitlines()][: args.n]
    print(machine())
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {len(texts)} claims\n")
    print("| query encoder | batch | CPU ms per query | min cosine to lone | max abs difference |")
    print("|---|---|---|---|---|")
    for quantize in ("fp32", "int8"):
        encoder = make_embedder("sentence-transformers", 384, quantize=quantize)  # type: ignore[arg-type]
        lone = np.vstack([encoder.embed([t]) for t in texts[:16]])  # warm-up
        lone = np.vstack([encoder.embed([t]) for t in texts])
        for size in (1, 4, 8, 16):
            start = time.process_time()
            rows = np.vstack([encoder.embed_batch(texts[i : i + size])  # type: ignore[attr-defined]
                              for i in range(0, len(texts), size)])  # fmt: skip
            cpu = (time.process_time() - start) / len(texts) * 1000
            cosine = float(np.min(np.sum(rows * lone, axis=1)))
            print(f"| {quantize} | {size} | {cpu:.2f} | {cosine:.5f} | "
                  f"{float(np.abs(rows - lone).max()):.1e} |")  # fmt: skip


if __name__ == "__main__":
    main()
