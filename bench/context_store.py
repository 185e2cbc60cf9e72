"""What reading a context's index back from the store costs, against building it, in one run.

Over SciFact abstracts (the RAG bench's contexts, ``bench/rag_nlp_tier.py``), alternately in
``--rounds`` rounds: **build** (``ContextIndexer.index``, what the NLP tier does on a memory
miss without a store, the reference), **write** (encode + compress + one SQLite transaction per
64 contexts, paid once per context) and **read** (one SQLite query per 64 contexts +
decompress + decode: what a restarted worker pays instead of building). Each as KB of context
text a second, with the read/build ratio, the bytes stored per context character, and a check
that every index read back equals the built one.

    python bench/context_store.py [--data ../shared/data] [--n 1500] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harness import machine
from rag_nlp_tier import abstracts

from verdictflow.context_store import ContextStore
from verdictflow.evaluators.answer_analysis import COMPONENTS, ContextCache
from verdictflow.evaluators.context_index import ContextIndexer
from verdictflow.evaluators.evidence_codec import decode_index, encode_index
from verdictflow.evaluators.evidence_index import EvidenceIndex
from verdictflow.nlp import load_pipeline

ROOT = Path(__file__).resolve().parent.parent
BATCH = 64


def timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--n", type=int, default=1500, help="abstracts")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"machine: {machine()} | load {os.getloadavg()[0]:.2f} at the start")
    texts = abstracts(args.data)[: args.n]
    keys = [ContextCache.key(t) for t in texts]
    kb = sum(map(len, texts)) / 1000
    indexer = ContextIndexer(load_pipeline(COMPONENTS))
    indexer.index(texts[0])
    built: list[EvidenceIndex] = []
    rates: dict[str, list[float]] = {"build": [], "write": [], "read": []}
    stored_bytes = 0
    for round_ in range(args.rounds):
        folder = Path(tempfile.mkdtemp(prefix="vf-store-bench-"))
        store = ContextStore(folder / "store.sqlite3", "bench", 1 << 34)

        def build() -> None:
            built[:] = [indexer.index(t) for t in texts]

        rates["build"].append(kb / timed(build))

        def write(store: ContextStore = store) -> None:
            for i in range(0, len(texts), BATCH):
                batch = zip(keys[i : i + BATCH], built[i : i + BATCH], strict=True)
                store.write([(key, encode_index(index)) for key, index in batch])

        rates["write"].append(kb / timed(write))
        read_back: list[EvidenceIndex] = []

        def read(store: ContextStore = store, out: list[EvidenceIndex] = read_back) -> None:
            for i in range(0, len(texts), BATCH):
                bodies = store.read(keys[i : i + BATCH])
                out += [decode_index(bodies[k], t) for k, t in
                        zip(keys[i : i + BATCH], texts[i : i + BATCH], strict=True)]  # fmt: skip

        rates["read"].append(kb / timed(read))
        assert read_back == built, "an index read back differs from the built one"
        stored_bytes = store.stored_bytes
        store.close()
        print(f"  round {round_ + 1}: " + ", ".join(f"{k} {v[-1]:,.0f} KB/s" for k, v in
                                                   rates.items()), flush=True)  # fmt: skip
    med = {k: statistics.median(v) for k, v in rates.items()}
    ratios = [r / b for r, b in zip(rates["read"], rates["build"], strict=True)]
    print(f"\n{len(texts)} abstracts, {kb:,.0f} KB of text; medians of {args.rounds} rounds")
    print(f"build (reference) {med['build']:,.0f} KB/s | write {med['write']:,.0f} KB/s | "
          f"read {med['read']:,.0f} KB/s = {statistics.median(ratios):.1f}x build")  # fmt: skip
    print(f"stored: {stored_bytes / (kb * 1000):.2f} bytes per context character (zlib)")
    print(f"every index read back equal to the built one; load {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
