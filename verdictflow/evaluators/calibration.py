"""Threshold calibration (spec 000's calibration hooks), pure: no I/O, no randomness.

Conventions. A golden item labelled ``pass`` is a positive: the gate should PASS it. The gate
passes ``score >= t``. A false positive is a ``fail`` item that passes (the costly error for a
quality gate); a false negative is a ``pass`` item that fails. Items the scorer DEFERs never
pass, so they enter the curves with a score below every threshold.

Choosing t:
- cost-optimal: minimise ``cost_fp * FP + cost_fn * FN`` over the ROC operating points;
- with a false-positive budget: only thresholds whose FPR <= budget *in every group* are
  eligible (min-over-groups fairness; the group that forces the strictest threshold is reported
  as the worst group), and among them the cost-optimal one;
- ties go to the higher (stricter) threshold: fail closed.
Then a safety margin is added: the P95 (or P99) of each item's score spread under deterministic
perturbations of its input, so a threshold is not set on a knife edge the scorer cannot hold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.metrics import roc_curve


@dataclass(frozen=True, slots=True)
class OperatingPoint:
    threshold: float
    tpr: float
    fpr: float


@dataclass(frozen=True, slots=True)
class Choice:
    """The chosen operating point and why."""

    threshold: float
    tpr: float
    fpr: float
    cost: float
    worst_group: str | None
    group_fpr: Mapping[str, float]


def operating_points(scores: Sequence[float], positives: Sequence[bool]) -> list[OperatingPoint]:
    """ROC operating points with thresholds inside [0, 1], strictest first.

    sklearn's first point (threshold +inf: nothing passes) becomes threshold 1.0 when no score
    reaches 1.0, and is dropped otherwise (a policy threshold cannot exceed 1).
    """
    if len(set(positives)) < 2:
        raise ValueError("a golden set needs both pass and fail items")
    fpr, tpr, thresholds = roc_curve(positives, scores, drop_intermediate=False)
    points = []
    for f, t, thr in zip(fpr, tpr, thresholds, strict=True):
        if math.isinf(thr):
            if max(scores) < 1.0:
                points.append(OperatingPoint(1.0, float(t), float(f)))
            continue
        if thr < 0.0:  # only DEFERred items sit here: a threshold below 0 is meaningless
            continue
        points.append(OperatingPoint(float(thr), float(t), float(f)))
    return points


def rates_at(
    threshold: float, scores: Sequence[float], positives: Sequence[bool]
) -> tuple[float, float]:
    """(TPR, FPR) of the gate ``score >= threshold``."""
    s, y = np.asarray(scores), np.asarray(positives, dtype=bool)
    passed = s >= threshold
    tpr = float(passed[y].mean()) if y.any() else 0.0
    fpr = float(passed[~y].mean()) if (~y).any() else 0.0
    return tpr, fpr


def choose_threshold(
    scores: Sequence[float],
    positives: Sequence[bool],
    groups: Sequence[str] | None = None,
    *,
    cost_fp: float = 1.0,
    cost_fn: float = 1.0,
    max_fpr: float | None = None,
) -> Choice:
    """The operating point by cost, under an optional per-group false-positive budget."""
    n_pos = sum(positives)
    n_neg = len(positives) - n_pos
    members = _split_by_group(scores, positives, groups)
    best: Choice | None = None
    for point in operating_points(scores, positives):  # strictest first: ties keep the stricter
        fprs: dict[str, float] = {}
        if max_fpr is not None:
            fprs = {
                g: rates_at(point.threshold, s, p)[1] for g, (s, p) in members.items() if not all(p)
            }
            if any(f > max_fpr for f in fprs.values()):
                continue
        cost = cost_fp * point.fpr * n_neg + cost_fn * (1.0 - point.tpr) * n_pos
        if best is None or cost < best.cost - 1e-12:
            best = Choice(point.threshold, point.tpr, point.fpr, cost, None, fprs)
    if best is None:
        raise ValueError(f"no threshold meets a false-positive rate of {max_fpr} in every group")
    if max_fpr is None:
        return best
    return Choice(
        best.threshold,
        best.tpr,
        best.fpr,
        best.cost,
        _binding_group(members, best.group_fpr, max_fpr),
        best.group_fpr,
    )


def _split_by_group(
    scores: Sequence[float], positives: Sequence[bool], groups: Sequence[str] | None
) -> dict[str, tuple[list[float], list[bool]]]:
    """Scores and labels of each group (one group ``all`` without groups), split once."""
    members: dict[str, tuple[list[float], list[bool]]] = {}
    names = groups if groups is not None else ["all"] * len(scores)
    for name, score, positive in zip(names, scores, positives, strict=True):
        group_scores, group_positives = members.setdefault(name, ([], []))
        group_scores.append(score)
        group_positives.append(positive)
    return dict(sorted(members.items()))


def _binding_group(
    members: Mapping[str, tuple[list[float], list[bool]]],
    group_fpr: Mapping[str, float],
    max_fpr: float,
) -> str | None:
    """The worst group: the one whose own budget threshold is the strictest (else, when no
    group has both labels, the one with the highest false-positive rate)."""
    per_group = {}
    for g, (group_scores, group_positives) in members.items():
        if len(set(group_positives)) < 2:
            continue
        eligible = [
            p.threshold for p in operating_points(group_scores, group_positives) if p.fpr <= max_fpr
        ]
        per_group[g] = min(eligible) if eligible else 1.0
    ranked = per_group or dict(group_fpr)
    return max(ranked, key=lambda g: (ranked[g], g)) if ranked else None


def variance_margin(spreads: Sequence[float], quantile: float = 0.95) -> float:
    """The ``quantile`` of per-item score spreads under perturbation (0 for no items)."""
    if not spreads:
        return 0.0
    # The smallest spread with at least `quantile` of all spreads at or below it (type-1 quantile).
    return float(np.quantile(np.asarray(spreads, dtype=float), quantile, method="inverted_cdf"))
