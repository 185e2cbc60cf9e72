"""Train claim checkers on a GPU machine that has PyTorch and transformers but none of this
project's other dependencies (issue 43), with the project's own trainer and validation.

The pairs come from files ``verdictflow train-checker --pairs-out`` wrote on a CPU (building
the synthetic pairs needs spaCy); this script runs the same fit (``checker_training.train``)
for a list of runs, each validated on the held-out sets it did not train on (leave one set
out), and writes the figures of every run (``runs.json``) and, for the runs asked to, the
weights they trained (the word embeddings stay frozen, so only the rest travels back: fp16
safetensors in parts under 16 MB). ``verdictflow train-checker --weights`` turns such weights
into the int8 ONNX checker on the CPU. Each validated run also writes every held-out row's
score (``<run>.scores.json``), which ``bench/validate_checker.py --checker-scores`` reads to
put a run's checker in the cascade without its weights. A run that fails is logged and the
next one starts; every result is written as soon as its run ends.

Usage (on the GPU machine, from the repository root), as in docs/checker.md's "GPU runs"::

    PYTHONPATH=. python3 scripts/train_checker_device.py --work WORK --out OUT \\
        --run agg-out:begin-wow,begin-cmu,begin-tc:export --run begin-out:wice,factcheckgpt \\
        --run all:wice,factcheckgpt,begin-wow,begin-cmu,begin-tc:export \\
        --epochs 1 --limit 40000 --repeat 3

WORK holds ``core.jsonl.xz`` (``train-checker --cap-scale 0 --pairs-out``), one pairs file
per held-out set (``train-checker --sets wice --cap-scale 0 --pairs-out wice.jsonl.xz``, ...),
``data/`` (``aggrefact_dev`` and ``begin_dev``) and ``base/`` (the MiniLM directory, its
weights stored fp16 so that everything travels under the machine's 64 MiB).
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path
from typing import Any

from verdictflow.scoring_jobs.training import checker_sets as cs
from verdictflow.scoring_jobs.training import checker_training as ct
from verdictflow.scoring_jobs.training.checker_pairs import Pair, read_pairs

logger = logging.getLogger("train_checker_device")


def one_run(
    name: str, added: list[str], export: bool, core: list[Pair], work: Path, out: Path,
    options: ct.TrainOptions, repeat: int,
) -> dict[str, Any]:  # fmt: skip
    pairs = list(core)
    for set_name in added:
        pairs += read_pairs(work / f"{set_name}.jsonl.xz") * repeat
    validate = [n for n in cs.HELD_OUT if n not in added]
    data = work / "data"

    kept: dict[str, dict[str, list[float] | list[int]]] = {}

    def held_out(model: Any, tokenizer: Any) -> list[dict[str, Any]]:
        predict = cs.torch_predict(model, tokenizer, options.max_length, batch=256)
        figures = cs.validate_all(data, predict, validate, keep=kept)
        for f in figures:
            logger.info("%s %s", name, f)
        return figures

    started = time.monotonic()

    def progress(step: int, total: int, loss: float) -> None:
        if step % 500 == 0 or step == total:
            logger.info("%s step %d of %d, loss %.4f, %.0f s", name, step, total, loss,
                        time.monotonic() - started)  # fmt: skip

    report = ct.train(pairs, work / "base", work / "runs" / name, options,
                      held_out if validate else None, progress)  # fmt: skip
    result = {
        "run": name, "added": added, "repeat": repeat, "pairs": len(pairs),
        "steps": report.steps, "seconds": round(time.monotonic() - started, 1),
        "validation": report.validation, "options": vars(options),
        "device": _device_name(),
    }  # fmt: skip
    if kept:
        (out / f"{name}.scores.json").write_text(json.dumps(kept) + "\n")
    if export:
        from safetensors.torch import save

        blob = save(ct.trained_weights(work / "runs" / name / "hf"))
        parts = ct.write_parts(blob, out / f"{name}.safetensors")
        result["weights"] = [p.name for p in parts]
    return result


def capped(pairs: list[Pair], caps: list[str]) -> list[Pair]:
    """``pairs`` with at most N of each ``SOURCE=N`` source, the first in order (why: one
    epoch of all 137,738 rule-made document claims read real claims worse than 36,000 of
    them did, docs/checker.md "GPU runs"; a cap keeps every labelled pair beside fewer)."""
    left: dict[str, int] = {}
    for cap in caps:
        source, _, n = cap.partition("=")
        left[source] = int(n)
    out = []
    for pair in pairs:
        if pair.source in left:
            if left[pair.source] <= 0:
                continue
            left[pair.source] -= 1
        out.append(pair)
    return out


def _device_name() -> str:
    import torch

    return torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--run", action="append", required=True,
                        help="name:added,sets[:export]")  # fmt: skip
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--limit", type=int, default=None, help="the first N core pairs only")
    parser.add_argument("--cap", action="append", default=[], metavar="SOURCE=N",
                        help="at most N core pairs of SOURCE (the first, in the file's seeded "
                        "order), before --limit: e.g. documents=25000")  # fmt: skip
    parser.add_argument("--deadline", type=float, default=420.0,
                        help="seconds: no run starts that would end after it")  # fmt: skip
    args = parser.parse_args()
    began = time.monotonic()
    core = capped(read_pairs(args.work / "core.jsonl.xz"), args.cap)[: args.limit]
    logger.info("%d core pairs", len(core))
    options = ct.TrainOptions(epochs=args.epochs, batch_size=args.batch,
                              learning_rate=args.lr, checkpoint_every=10**9)  # fmt: skip
    per_pair: float | None = None
    results: list[dict[str, Any]] = []
    for spec in args.run:
        name, added_text, *flags = spec.split(":")
        added = [x for x in added_text.split(",") if x]
        size = (len(core) + 2000 * len(added)) * args.epochs
        if per_pair is not None and time.monotonic() - began + per_pair * size > args.deadline:
            logger.info("skipping %s: it would end after the deadline", name)
            continue
        try:
            result = one_run(name, added, "export" in flags, core, args.work, args.out,
                             options, args.repeat)  # fmt: skip
        except Exception:  # one run's failure must not cost the runs after it their time
            logger.exception("run %s failed", name)
            continue
        per_pair = result["seconds"] / (result["pairs"] * args.epochs)
        logger.info("%s: %.0f pairs/s", name, 1 / per_pair)
        logger.info("%s done in %.0f s", name, result["seconds"])
        results.append(result)
        (args.out / "runs.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
