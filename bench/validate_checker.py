"""The claim checker against human labels (issue 43), on the sets it never saw in training:
LLM-AggreFact's WiCE and FactCheck-GPT dev splits (claim against a long document) and BEGIN's
three dialogue corpora (response against its knowledge; Generic rows left out).

Per set, in one run: the checker alone (the shipped int8 ONNX export, or ``--model``), the
cheap ``faithfulness`` and ``groundedness`` verdicts (production scorers, shipped policy),
and the cascade: the cheap faithfulness decision, with the escalated share q of rows (the q
nearest its threshold: the policy's band) decided by the checker instead; next to the oracle
bound (the escalated rows decided by their true label, ``bench/judge_oracle.py``'s bound).

Balanced accuracy is at the threshold that maximises it on the set (the sets' READMEs ask for
a threshold chosen on this dev data), for every system alike; ROC-AUC needs none (the
cascade's score: each system's score mapped so its threshold sits at 0.5, then the escalated
rows take the checker's).

    python bench/validate_checker.py [--data ../shared/data] [--model DIR] [--json]
    python bench/validate_checker.py --checker-scores agg-out.scores.json begin-out.scores.json

``--checker-scores`` reads every row's checker score from files instead of running a model:
what ``scripts/train_checker_device.py`` writes for a run validated on the sets it left out,
so a checker fitted on a GPU machine (fp32 there, not the int8 export) is measured in the
cascade, leave one set out, without its weights travelling back.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from harness import machine
from sklearn.metrics import roc_auc_score

from verdictflow.evaluators.policy import Policy
from verdictflow.judge_tier.checker_backend import CheckerModel, shipped_dir
from verdictflow.models.events import AnswerEvent
from verdictflow.scoring_jobs.calibration.kinds import batch_scorer
from verdictflow.scoring_jobs.training.checker_sets import (
    HELD_OUT,
    Row,
    balanced_accuracy,
    best_threshold,
    checker_scores,
    shared_threshold,
)

SHARES = (0.1, 0.2, 0.5, 1.0)
PUBLISHED = {
    "wice": "SummaC-ZS 62.8, AlignScore 66.0, MiniCheck-FT5-L 72.2, HHEM-2.1 75.9, GPT-4o 78.5",
    "factcheckgpt": "SummaC-ZS 75.2, AlignScore 74.3, MiniCheck-FT5-L 74.7, HHEM-2.1 71.8",
}


def spread(scores: np.ndarray, threshold: float) -> np.ndarray:
    """Scores mapped piecewise-linearly so ``threshold`` sits at 0.5 (order kept)."""
    t = min(max(threshold, 1e-6), 1 - 1e-6)
    return np.where(scores < t, scores / (2 * t), 0.5 + (scores - t) / (2 * (1 - t)))


def cheap_scores(rows: Sequence[Row], kind: str) -> list[float]:
    events = [AnswerEvent(id=r.id, query=r.query, answer=r.claim, contexts=[r.doc]) for r in rows]
    verdicts = batch_scorer(kind)(events, Policy())
    return [v.score if v.score is not None else 0.0 for v in verdicts]


def evaluate(name: str, rows: Sequence[Row], checker: np.ndarray, faith: np.ndarray,
             grounded: np.ndarray) -> dict[str, object]:  # fmt: skip
    labels = np.array([r.label for r in rows])
    out: dict[str, object] = {"set": name, "n": len(rows), "positives": int(labels.sum())}
    for system, scores in (("checker", checker), ("faithfulness", faith),
                           ("groundedness", grounded)):  # fmt: skip
        bacc, threshold = best_threshold(scores, labels)
        out[system] = {
            "roc_auc": round(float(roc_auc_score(labels, scores)), 4),
            "balanced_accuracy": round(bacc, 4),
            "threshold": round(threshold, 4),
        }
    _, t_cheap = best_threshold(faith, labels)
    _, t_check = best_threshold(checker, labels)
    cheap_pass = faith >= t_cheap
    check_pass = checker >= t_check
    nearness = np.argsort(np.abs(faith - t_cheap), kind="stable")
    checker_mapped, cheap_mapped = spread(checker, t_check), spread(faith, t_cheap)
    for q in SHARES:
        escalated = np.zeros(len(rows), dtype=bool)
        escalated[nearness[: round(q * len(rows))]] = True
        decision = np.where(escalated, check_pass, cheap_pass)
        oracle = np.where(escalated, labels == 1, cheap_pass)
        score = np.where(escalated, checker_mapped, cheap_mapped)
        out[f"cascade_{int(q * 100)}"] = {
            "balanced_accuracy": round(balanced_accuracy(decision, labels), 4),
            "roc_auc": round(float(roc_auc_score(labels, score)), 4),
            "oracle_balanced_accuracy": round(balanced_accuracy(oracle, labels), 4),
        }
        # Not the product's cascade (the judge's verdict replaces the cheap one): what the
        # escalated rows would give with both opinions, the mean of the two mapped scores.
        blended = np.where(escalated, (checker_mapped + cheap_mapped) / 2, cheap_mapped)
        out[f"blend_{int(q * 100)}"] = {
            "balanced_accuracy": round(balanced_accuracy(blended >= 0.5, labels), 4),
            "roc_auc": round(float(roc_auc_score(labels, blended)), 4),
        }
    return out


def read_checker_scores(files: Sequence[Path]) -> dict[str, dict[str, list[float]]]:
    """Every row's checker score and label per set, from one or more ``<run>.scores.json``, or
    ``scores.json:RUN`` (one run of the file scripts/train_checker_device.py writes for all
    its runs); a set in two files is an error (which run's would count?)."""
    out: dict[str, dict[str, list[float]]] = {}
    for path in files:
        file, _, run = str(path).rpartition(":")
        if path.is_file() or not file:
            sets = json.loads(path.read_text())
        else:
            runs = json.loads(Path(file).read_text())
            if run not in runs:
                raise SystemExit(f"{file}: no run {run!r} (it has {', '.join(runs)})")
            sets = runs[run]
        for name, kept in sets.items():
            if name in out:
                raise SystemExit(f"{path}: {name} is in two files")
            out[name] = kept
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--sets", nargs="*", default=list(HELD_OUT))
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--cheap-cache", type=Path, default=None,
        help="JSON file keeping the cheap scores per set (they do not depend on the checker)",
    )  # fmt: skip
    parser.add_argument("--cheap-only", action="store_true", help="fill the cache and stop")
    parser.add_argument(
        "--checker-scores", type=Path, nargs="+", default=None,
        help="JSON files of every row's checker score per set (<run>.scores.json, or "
        "scores.json:RUN from scripts/train_checker_device.py) to use instead of a model; "
        "only their sets are measured",
    )  # fmt: skip
    parser.add_argument(
        "--scores-out", type=Path, default=None,
        help="JSON file for every row's checker score and label, per set",
    )  # fmt: skip
    args = parser.parse_args()
    cache: dict[str, dict[str, list[float]]] = {}
    if args.cheap_cache is not None and args.cheap_cache.is_file():
        cache = json.loads(args.cheap_cache.read_text())
    results = []
    scored: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    started = time.monotonic()
    given = read_checker_scores(args.checker_scores) if args.checker_scores else None
    if given is not None:
        args.sets = [n for n in args.sets if n in given]
    model = None
    if not args.cheap_only and given is None:
        model = CheckerModel(args.model or shipped_dir(), threads=2)
    for name in args.sets:
        rows = HELD_OUT[name](args.data)
        if name not in cache:
            cache[name] = {k: cheap_scores(rows, k) for k in ("faithfulness", "groundedness")}
            if args.cheap_cache is not None:
                args.cheap_cache.write_text(json.dumps(cache))
        if model is None and given is None:
            continue
        if given is not None:
            checker = np.array(given[name]["checker"], dtype=float)
            if given[name]["labels"] != [r.label for r in rows]:
                raise SystemExit(f"{name}: the scores' labels are not the set's rows")
        else:
            assert model is not None
            checker = np.array(checker_scores(rows, model.probabilities))
        faith = np.array(cache[name]["faithfulness"])
        grounded = np.array(cache[name]["groundedness"])
        results.append(evaluate(name, rows, checker, faith, grounded))
        scored[name] = (checker, np.array([r.label for r in rows]))
    if model is None and given is None:
        return
    at, shared = shared_threshold({n: (c.tolist(), y.tolist()) for n, (c, y) in scored.items()})
    if args.scores_out is not None:
        args.scores_out.write_text(json.dumps(
            {n: {"checker": c.tolist(), "labels": y.tolist()} for n, (c, y) in scored.items()}
        ))  # fmt: skip
    seconds = time.monotonic() - started
    if args.json:
        print(json.dumps({"machine": machine(), "seconds": seconds, "sets": results,
                          "shared_threshold": at, "at_shared_threshold": shared},
                         indent=1))  # fmt: skip
        return
    source = (", ".join(str(f) for f in args.checker_scores) if given is not None
              else f"model {args.model or shipped_dir()}")  # fmt: skip
    print(f"# validate_checker: {machine()}; checker {source}; {seconds:.0f} s")
    head = ["set", "n", "checker", "faithfulness", "groundedness",
            *(f"cascade {int(q * 100)} %" for q in SHARES)]  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in results:
        cells = [str(r["set"]), str(r["n"])]
        for system in ("checker", "faithfulness", "groundedness"):
            f = r[system]
            cells.append(f"{100 * f['balanced_accuracy']:.1f} / {f['roc_auc']:.3f}")  # type: ignore[index]
        for q in SHARES:
            c = r[f"cascade_{int(q * 100)}"]
            cells.append(
                f"{100 * c['balanced_accuracy']:.1f} / {c['roc_auc']:.3f} "  # type: ignore[index]
                f"(oracle {100 * c['oracle_balanced_accuracy']:.1f})"
            )  # type: ignore[index]
        print("| " + " | ".join(cells) + " |")
    print("\ncells: balanced accuracy % / ROC-AUC.")
    print("\nNot the product's cascade: the escalated rows scored by the mean of the checker's and")
    print("the cheap faithfulness' scores (each mapped so its threshold sits at 0.5):")
    print("| set | " + " | ".join(f"blend {int(q * 100)} %" for q in SHARES) + " |")
    print("|" + "---|" * (len(SHARES) + 1))
    for r in results:
        blends = [r[f"blend_{int(q * 100)}"] for q in SHARES]
        print(f"| {r['set']} | " + " | ".join(
            f"{100 * b['balanced_accuracy']:.1f} / {b['roc_auc']:.3f}" for b in blends  # type: ignore[index]
        ) + " |")  # fmt: skip
    print(f"\nThe checker at one threshold for every set ({at:.3f}, the best mean): "
          + ", ".join(f"{n} {100 * b:.1f}" for n, b in shared.items()))  # fmt: skip
    print("Published (balanced accuracy, the benchmark's test splits):")
    for name, line in PUBLISHED.items():
        print(f"- {name}: {line}")


if __name__ == "__main__":
    main()
