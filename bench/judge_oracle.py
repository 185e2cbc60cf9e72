"""What the judge tier could add, bounded from above: the balanced accuracy and ROC-AUC of the
combined decision if the escalated share of traffic were judged *correctly*, on the human
labels in ``../shared/data``; next to escalating the same share at random.

No model runs here, so this is an oracle bound, not a measurement of any judge: it says how
much of the cheap tier's error sits where the policy sends traffic to the judge. A real judge
(GPT-4-class: ~82 % balanced accuracy on SummEdits in its paper) gets part of the way.

Per set, the faithfulness scores are held out (the model fitted without that set, or without
that SummEdits domain, as ``bench/validate_faithfulness.py`` does). A row is faithful when its
target is 1 (SummEdits, HaluEval: the label; QAGS: every sentence supported; SummEval: every
expert gave consistency 5). The cheap decision is PASS at the shipped threshold (a DEFER
counts as FAIL). Escalating a share q of the rows:

- ``band``: the q rows nearest the threshold (``judge_tier.escalate.*.band``);
- ``lowest``: the q lowest scores (FAILs first: ``fail: true``, then the lowest PASSes);
- ``random``: q rows at random (mean of 20 seeded draws).

Escalated rows take their true label; the others keep the cheap decision (balanced accuracy)
or score (AUC: an escalated row scores 1 or 0).

    python bench/judge_oracle.py [--data ../shared/data] [--shares 0.05 0.1 0.2]
"""

from __future__ import annotations

import argparse
import os
import platform
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from sklearn.metrics import roc_auc_score

from verdictflow.evaluators.faithfulness_model import load_model
from verdictflow.evaluators.policy import Policy
from verdictflow.scoring_jobs.training.faithfulness_data import (
    LOADERS,
    SUMMEDITS_DOMAINS,
    load_sets,
)
from verdictflow.scoring_jobs.training.faithfulness_training import (
    Featurised,
    balanced_accuracy,
    featurise,
    fit,
    predict,
)
from verdictflow.scoring_setup import load_scoring

ROOT = Path(__file__).resolve().parent.parent
Vector = NDArray[np.float64]
Mask = NDArray[np.bool_]


def combined(
    scores: Vector, positive: Mask, threshold: float, escalated: Mask
) -> tuple[float, float]:
    """Balanced accuracy % and ROC-AUC of the decision with ``escalated`` rows judged right."""
    decided = np.where(escalated, positive, scores >= threshold)
    rates = [float(np.mean(decided[positive])), float(np.mean(~decided[~positive]))]
    merged = np.where(escalated, positive.astype(float), scores)
    return 100 * float(np.mean(rates)), float(roc_auc_score(positive, merged))


def chosen(scores: Vector, threshold: float, share: float, how: str, seed: int = 0) -> Mask:
    n = len(scores)
    k = round(share * n)
    mask = np.zeros(n, dtype=bool)
    if k == 0:
        return mask
    if how == "band":
        order = np.argsort(np.abs(scores - threshold), kind="stable")
    elif how == "lowest":
        order = np.argsort(scores, kind="stable")
    else:
        order = np.random.default_rng(seed).permutation(n)
    mask[order[:k]] = True
    return mask


def table(
    name: str, scores: Vector, positive: Mask, threshold: float, shares: Sequence[float]
) -> list[str]:
    base_acc = 100 * balanced_accuracy(scores, positive, threshold)
    base_auc = float(roc_auc_score(positive, scores))
    share = 100 * positive.mean()
    rows = [f"| {name} | {len(scores)} | {share:.0f} % | {base_acc:.1f} / {base_auc:.3f} |"]
    for share in shares:
        cells = []
        for how in ("band", "lowest"):
            acc, auc = combined(scores, positive, threshold, chosen(scores, threshold, share, how))
            cells.append(f"{acc:.1f} / {auc:.3f}")
        draws = [
            combined(scores, positive, threshold, chosen(scores, threshold, share, "random", s))
            for s in range(20)
        ]
        cells.append(f"{np.mean([d[0] for d in draws]):.1f} / {np.mean([d[1] for d in draws]):.3f}")
        rows[-1] += " " + " | ".join(cells) + " |"
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--shares", type=float, nargs="+", default=[0.05, 0.10, 0.20])
    args = parser.parse_args()
    print(f"machine: {platform.node()} | {os.cpu_count()} cores | load {os.getloadavg()[0]:.2f}")
    threshold = load_model(Policy().faithfulness.model).threshold
    sets = featurise(load_sets(args.data, tuple(LOADERS)), load_scoring(Policy(), None))
    by_name = {s.labelled.name: s for s in sets}

    def held_out(item: Featurised) -> Vector:
        model = fit([s for s in sets if s.labelled.name != item.labelled.name])
        scores = np.asarray(predict(model, item.signals), dtype=float)
        scores[np.asarray(item.deferred)] = 0.0  # a DEFER never passes
        return scores

    head = " | ".join(f"{int(100 * q)} %: band | lowest | random" for q in args.shares)
    print(f"\nthreshold {threshold:.2f}; cells: balanced accuracy % / ROC-AUC")
    print(f"| set | rows | faithful | cheap tier | {head} |")
    print("|---|---:|---:|---|" + "---|---|---|" * len(args.shares))
    names = [f"summedits-{d}" for d in SUMMEDITS_DOMAINS]
    names += ["halueval-qa", "qags-cnndm", "qags-xsum", "summeval"]
    for name in names:
        item = by_name[name]
        scores = held_out(item)
        positive = np.asarray(item.labelled.targets) >= 0.999
        if name.startswith("summedits"):  # the data set's protocol: its test split
            test = np.asarray([s == "test" for s in item.labelled.splits])
            scores, positive = scores[test], positive[test]
        for line in table(name, scores, positive, threshold, args.shares):
            print(line)


if __name__ == "__main__":
    main()
