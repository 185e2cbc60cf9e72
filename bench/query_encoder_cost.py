"""CPU per query of each query encoder, one query per pass and in micro-batches (issue 32).

SciFact's claims in file order (as they would arrive), embedded by the fp32 and the int8 MiniLM
query encoders one per forward pass (interleaved rounds, with a reference for the int8 recipe:
the same dynamic quantisation of the exported graph without ONNX Runtime's BERT fusions and
with the embedding tables int8, the recipe before) and in batches of 4, 8 and 16
(``embed_batch``: texts grouped by token length, padding <= 25 %). Reports CPU milliseconds
per query (process time, one thread), how far batched vectors are from the lone ones
(minimum cosine, maximum absolute difference) and each int8 encoder's cosine to fp32. Needs
the ``[st]`` extra and ``../shared/data/scifact_beir``.

    python bench/query_encoder_cost.py [--n 480] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import machine

from verdictflow import embedders
from verdictflow.embedders import make_embedder

QUERIES = Path(__file__).resolve().parents[2] / "shared/data/scifact_beir/queries.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=480)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    texts = [json.loads(line)["text"] for line in QUERIES.read_text().splitlines()][: args.n]
    print(machine())
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {len(texts)} claims\n")
    names = ("fp32", "int8", "int8, unfused (reference)")
    encoders = {name: _encoder(name) for name in names}
    vectors: dict[str, np.ndarray] = {}
    for name, encoder in encoders.items():
        np.vstack([encoder.embed([t]) for t in texts[:16]])  # warm-up
        vectors[name] = np.vstack([encoder.embed([t]) for t in texts])
    # One query per pass, the encoders interleaved over rounds: this VM's speed drifts by
    # 10-15 % between minutes, which separate runs would mistake for a difference.
    rounds: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(args.rounds):
        for name, encoder in encoders.items():
            start = time.process_time()
            for text in texts:
                encoder.embed([text])
            rounds[name].append((time.process_time() - start) / len(texts) * 1000)
    print(f"One query per pass, {args.rounds} interleaved rounds (CPU ms per query):\n")
    print("| query encoder | median | min | max |\n|---|---|---|---|")
    for name, cpu in rounds.items():
        print(f"| {name} | {np.median(cpu):.2f} | {min(cpu):.2f} | {max(cpu):.2f} |")
    print(
        "\n| query encoder | batch | CPU ms per query | min cosine to lone | max abs difference |"
    )
    print("|---|---|---|---|---|")
    for name in ("fp32", "int8"):
        encoder, lone = encoders[name], vectors[name]
        for size in (4, 8, 16):
            start = time.process_time()
            rows = np.vstack([encoder.embed_batch(texts[i : i + size])
                              for i in range(0, len(texts), size)])  # fmt: skip
            cpu = (time.process_time() - start) / len(texts) * 1000
            cosine = float(np.min(np.sum(rows * lone, axis=1)))
            print(f"| {name} | {size} | {cpu:.2f} | {cosine:.5f} | "
                  f"{float(np.abs(rows - lone).max()):.1e} |")  # fmt: skip
    print("\n| int8 encoder | cosine to fp32: min | mean |\n|---|---|---|")
    for name in ("int8", "int8, unfused (reference)"):
        cosines = np.sum(vectors[name] * vectors["fp32"], axis=1)
        print(f"| {name} | {cosines.min():.4f} | {cosines.mean():.4f} |")


def _encoder(quantize: str) -> Any:
    """The API's query encoder, or (reference) int8 without the fusions: dynamic quantisation
    of the exported graph as it comes, in a temporary cache directory."""
    if quantize != "int8, unfused (reference)":
        return make_embedder("sentence-transformers", 384, quantize=quantize)  # type: ignore[arg-type]
    from onnxruntime.quantization import QuantType, quantize_dynamic

    def unfused(exported: Path, weights_sha256: str, heads: int = 0, hidden: int = 0) -> Path:
        target = Path(tempfile.mkdtemp()) / "unfused-int8.onnx"
        quantize_dynamic(str(exported), str(target), weight_type=QuantType.QInt8, per_channel=True)
        return target

    embedders.int8_model = unfused  # type: ignore[assignment]
    return embedders.NeuralEmbedder(embedders.resolve_model_dir(None), quantize="int8")


if __name__ == "__main__":
    main()
