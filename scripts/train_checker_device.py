"""Train claim checkers on a GPU machine that has PyTorch and transformers but none of this
project's other dependencies (issue 43), with the project's own trainer and validation.

The pairs come from files ``verdictflow train-checker --pairs-out`` wrote on a CPU (building
the synthetic pairs needs spaCy); this script runs the same fit (``checker_training.train``)
for a list of runs, each validated on the held-out sets it did not train on (leave one set
out), and writes the figures of every run (``runs.json``) and, for the runs asked to, the
weights they trained (the word embeddings stay frozen, so only the rest travels back: fp16
safetensors in parts under 16 MB). ``verdictflow train-checker --weights`` turns such weights
into the int8 ONNX checker on the CPU. Each validated run also keeps every held-out row's
score (in ``scores.json``), which ``bench/validate_checker.py --checker-scores
scores.json:RUN`` reads to put a run's checker in the cascade without its weights. A run
that fails is logged and the next one starts; every result is written as its run ends.

Usage (on the GPU machine, from the repository root), as in docs/checker.md's "GPU runs"::

    PYTHONPATH=. python3 scripts/train_checker_device.py --work WORK --out OUT \\
        --run agg-out:begin-wow,begin-cmu,begin-tc:export --run begin-out:wice,factcheckgpt \\
        --run all:wice,factcheckgpt,begin-wow,begin-cmu,begin-tc:export \\
        --epochs 1 --limit 40000 --repeat 3

A run is ``NAME:ADDED_SETS[:FLAG...]``; its flags override the command's options for that run
alone: ``export`` (send its weights back), ``seed=N``, ``epochs=N``, ``lr=X``, ``limit=N``,
``cap=SOURCE=N`` (repeatable; applied to the core pairs after the command's ``--cap`` and
``--limit``), and ``soup=RUN+RUN+...``: no training, the uniform average of those earlier runs'
weights (a "model soup": fits from one start that differ by their seed), validated as a run.
Every run's held-out scores go to one ``scores.json`` (``{run: {set: {checker, labels}}}``;
the machine sends back at most 8 files), rewritten as each run ends.

WORK holds ``core.jsonl.xz`` (``train-checker --cap-scale 0 --pairs-out``), one pairs file
per held-out set (``train-checker --sets wice --cap-scale 0 --pairs-out wice.jsonl.xz``, ...),
``data/`` (``aggrefact_dev`` and ``begin_dev``) and ``base/`` (the MiniLM directory, its
weights stored fp16 so that everything travels under the machine's 64 MiB).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import time
from pathlib import Path
from typing import Any

from verdictflow.scoring_jobs.training import checker_sets as cs
from verdictflow.scoring_jobs.training import checker_training as ct
from verdictflow.scoring_jobs.training.checker_pairs import Pair, read_pairs

logger = logging.getLogger("train_checker_device")

Kept = dict[str, dict[str, list[float] | list[int]]]


@dataclasses.dataclass
class RunSpec:
    """One ``--run NAME:ADDED[:FLAG...]``: what it trains on and how, after its flags."""

    name: str
    added: list[str]
    options: ct.TrainOptions
    export: bool = False
    limit: int | None = None
    caps: list[str] = dataclasses.field(default_factory=list)
    soup: list[str] = dataclasses.field(default_factory=list)

    @property
    def validated(self) -> list[str]:
        """The held-out sets this run does not train on: what it is validated on."""
        return [n for n in cs.HELD_OUT if n not in self.added]

    def core_pairs(self, core: list[Pair]) -> list[Pair]:
        """The run's share of the core pairs: its caps, then its limit."""
        return capped(core, self.caps)[: self.limit]


def parse_run(spec: str, options: ct.TrainOptions) -> RunSpec:
    """``spec`` as a :class:`RunSpec`; a wrong flag or set is an error before any run starts."""
    name, added_text, *flags = spec.split(":")
    run = RunSpec(name, [x for x in added_text.split(",") if x], options)
    for flag in flags:
        key, _, value = flag.partition("=")
        try:
            if key == "export" and not value:
                run.export = True
            elif key == "seed":
                run.options = dataclasses.replace(run.options, seed=int(value))
            elif key == "epochs":
                run.options = dataclasses.replace(run.options, epochs=int(value))
            elif key == "lr":
                run.options = dataclasses.replace(run.options, learning_rate=float(value))
            elif key == "limit":
                run.limit = int(value)
            elif key == "cap" and "=" in value:
                int(value.partition("=")[2])
                run.caps.append(value)
            elif key == "soup" and value:
                run.soup = value.split("+")
            else:
                raise SystemExit(f"--run {spec}: unknown flag {flag!r}")
        except ValueError:
            raise SystemExit(f"--run {spec}: {flag!r} wants a number") from None
    unknown = [s for s in run.added if s not in cs.HELD_OUT]
    if unknown:
        raise SystemExit(f"--run {spec}: no held-out set {unknown}")
    return run


def held_out_check(run: RunSpec, data: Path, kept: Kept) -> Any:
    """The trainer's per-epoch validation: figures on the sets ``run`` is validated on, each
    row's score kept."""

    def held_out(model: Any, tokenizer: Any) -> list[dict[str, Any]]:
        predict = cs.torch_predict(model, tokenizer, run.options.max_length, batch=256)
        figures = cs.validate_all(data, predict, run.validated, keep=kept)
        for f in figures:
            logger.info("%s %s", run.name, f)
        return figures

    return held_out


def one_run(run: RunSpec, core: list[Pair], work: Path, repeat: int, kept: Kept) -> dict[str, Any]:
    """Fit ``run`` on its share of the core pairs and its added sets (each ``repeat`` times),
    validated on the held-out sets it did not add; what happened, for ``runs.json``."""
    pairs = run.core_pairs(core)
    for set_name in run.added:
        pairs += read_pairs(work / f"{set_name}.jsonl.xz") * repeat
    held_out = held_out_check(run, work / "data", kept) if run.validated else None
    started = time.monotonic()

    def progress(step: int, total: int, loss: float) -> None:
        if step % 500 == 0 or step == total:
            logger.info("%s step %d of %d, loss %.4f, %.0f s", run.name, step, total, loss,
                        time.monotonic() - started)  # fmt: skip

    report = ct.train(pairs, work / "base", work / "runs" / run.name, run.options, held_out,
                      progress)  # fmt: skip
    return {
        "run": run.name, "added": run.added, "repeat": repeat, "pairs": len(pairs),
        "caps": run.caps, "limit": run.limit, "steps": report.steps,
        "seconds": round(time.monotonic() - started, 1), "validation": report.validation,
        "options": vars(run.options), "device": _device_name(),
    }  # fmt: skip


def soup_run(run: RunSpec, work: Path, kept: Kept) -> dict[str, Any]:
    """The uniform average of ``run.soup``'s fitted weights, validated as its own run and
    saved where a trained run's are (why: fits from one start that differ only by their seed
    can often be averaged into one model that ranks better than each, at one model's cost;
    measured 2026-11-30 on three seeds, each with its own fresh head, it ranked no better than
    its members: docs/checker.md "GPU runs, 2026-11-30")."""
    from safetensors.torch import load_file
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    started = time.monotonic()
    members = [work / "runs" / n / "hf" for n in run.soup]
    states = [load_file(str(m / "model.safetensors")) for m in members]
    average = {k: sum(s[k].double() for s in states) / len(states) for k in states[0]}
    model = AutoModelForSequenceClassification.from_pretrained(str(members[0])).float()
    loaded = model.load_state_dict({k: v.float() for k, v in average.items()}, strict=False)
    missing = {n for n, _ in model.named_parameters()} & set(loaded.missing_keys)
    if missing or loaded.unexpected_keys:  # buffers a version does not save may be missing
        raise RuntimeError(f"soup: missing {sorted(missing)}, unexpected {loaded.unexpected_keys}")
    tokenizer = AutoTokenizer.from_pretrained(str(members[0]))  # type: ignore[no-untyped-call]
    device = ct.resolve_device(run.options.device)
    model.to(device).eval()
    figures = held_out_check(run, work / "data", kept)(model, tokenizer)
    for f in figures:
        f["epoch"] = 1
    hf = work / "runs" / run.name / "hf"
    model.to("cpu").save_pretrained(str(hf))
    tokenizer.save_pretrained(str(hf))
    return {
        "run": run.name, "added": run.added, "soup": run.soup, "pairs": 0, "steps": 0,
        "seconds": round(time.monotonic() - started, 1), "validation": figures,
        "options": vars(run.options), "device": _device_name(),
    }  # fmt: skip


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
                        help="name:added,sets[:flag...]: see the docstring")  # fmt: skip
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--limit", type=int, default=None, help="the first N core pairs only")
    parser.add_argument("--cap", action="append", default=[], metavar="SOURCE=N",
                        help="at most N core pairs of SOURCE (the first, in the file's seeded "
                        "order), before --limit: e.g. documents=25000")  # fmt: skip
    parser.add_argument("--deadline", type=float, default=420.0,
                        help="seconds: no run starts that would end after it")  # fmt: skip
    parser.add_argument("--device", default="auto", help="auto, cuda or cpu (a dry run)")
    parser.add_argument(
        "--export-best", action="store_true",
        help="at the end, also send back the weights of the run with the best mean held-out "
        "ROC-AUC (of the runs validated on every held-out set)",
    )  # fmt: skip
    args = parser.parse_args()
    began = time.monotonic()
    options = ct.TrainOptions(
        epochs=args.epochs, batch_size=args.batch, learning_rate=args.lr, seed=args.seed,
        checkpoint_every=10**9, device=args.device,
    )  # fmt: skip
    runs = [parse_run(spec, options) for spec in args.run]
    core = capped(read_pairs(args.work / "core.jsonl.xz"), args.cap)[: args.limit]
    logger.info("%d core pairs", len(core))
    per_pair: float | None = None
    results: list[dict[str, Any]] = []
    scores: dict[str, Kept] = {}
    for run in runs:
        size = 0 if run.soup else (
            len(run.core_pairs(core)) + 2000 * len(run.added)
        ) * run.options.epochs  # fmt: skip
        if per_pair is not None and time.monotonic() - began + per_pair * size > args.deadline:
            logger.info("skipping %s: it would end after the deadline", run.name)
            continue
        kept: Kept = {}
        try:
            result = soup_run(run, args.work, kept) if run.soup else one_run(
                run, core, args.work, args.repeat, kept
            )  # fmt: skip
            if run.export:
                result["weights"] = send_weights(args.work, args.out, run.name)
        except Exception:  # one run's failure must not cost the runs after it their time
            logger.exception("run %s failed", run.name)
            continue
        if result["pairs"]:
            per_pair = result["seconds"] / (result["pairs"] * run.options.epochs)
            logger.info("%s: %.0f pairs/s", run.name, 1 / per_pair)
        logger.info("%s done in %.0f s", run.name, result["seconds"])
        results.append(result)
        (args.out / "runs.json").write_text(json.dumps(results, indent=1) + "\n")
        if kept:
            scores[run.name] = kept
            (args.out / "scores.json").write_text(json.dumps(scores) + "\n")
    best = best_run(results) if args.export_best else None
    if best is not None and "weights" not in best:
        best["weights"] = send_weights(args.work, args.out, best["run"])
        logger.info("best run %s: weights sent back", best["run"])
        (args.out / "runs.json").write_text(json.dumps(results, indent=1) + "\n")


def send_weights(work: Path, out: Path, name: str) -> list[str]:
    """Run ``name``'s fitted weights, frozen vocabulary left out, as fp16 parts in ``out``."""
    from safetensors.torch import save

    blob = save(ct.trained_weights(work / "runs" / name / "hf"))
    return [p.name for p in ct.write_parts(blob, out / f"{name}.safetensors")]


def best_run(results: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The run validated on every held-out set whose last epoch's mean ROC-AUC is highest."""
    scored = []
    for result in results:
        aucs = {f["set"]: f["roc_auc"] for f in ct.last_epoch_figures(result["validation"])}
        if set(aucs) == set(cs.HELD_OUT):
            scored.append((sum(aucs.values()) / len(aucs), result["run"], result))
    return max(scored, key=lambda s: (s[0], s[1]))[2] if scored else None


if __name__ == "__main__":
    main()
