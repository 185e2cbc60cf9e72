"""``verdictflow calibrate``: choose a kind's threshold from a labelled golden set.

A golden set is JSONL: each row an input event of the kind (AnswerEvent fields, or
SummaryEvent fields for ``judge.<judge>``) plus ``label`` (``pass`` or ``fail``) and an
optional ``group``. Scores come from the production evaluators (``calibration_kinds``). The
result is a policy file (the base policy with the new threshold and a ``calibration`` record:
golden digest, margin, expected FPR/TPR, worst group, direction, and the golden set's score
distribution that the drift monitor compares traffic with), and optionally a report directory
(``calibration_report``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml
from pydantic import ValidationError

from verdictflow.evaluators.calibration import (
    Choice,
    choose_threshold,
    rates_at,
    variance_margin,
)
from verdictflow.evaluators.drift import score_reference
from verdictflow.evaluators.kinds import DEFER_SCORE, KindSpec
from verdictflow.evaluators.perturb import ALL_PERTURBATIONS, perturbations_of
from verdictflow.evaluators.policy import CalibrationRecord, Policy
from verdictflow.input_files import records_of
from verdictflow.models.codec import summarize_validation_error
from verdictflow.scoring_jobs.calibration.kinds import (
    BatchScorer,
    CalibrationError,
    batch_scorer,
    spec_for,
)

__all__ = ["Calibration", "CalibrationError", "GoldenSet", "calibrate", "read_golden"]


@dataclass(frozen=True)
class GoldenSet:
    events: list[Any]
    positives: list[bool]
    groups: list[str]
    digest: str


@dataclass(frozen=True)
class Calibration:
    kind: str
    policy: Policy
    record: CalibrationRecord
    scores: list[float]  # gate space: higher passes, DEFER = DEFER_SCORE
    positives: list[bool]
    groups: list[str]
    choice: Choice
    spreads: list[float]
    gate_threshold: float


def read_golden(path: Path, kind: str) -> GoldenSet:
    """Parse a golden set for ``kind``, or raise :class:`CalibrationError` naming the line."""
    model = spec_for(kind).event_model
    events, positives, groups = [], [], []
    raw = path.read_bytes()  # read once: its records, and the set's digest
    for n, line in enumerate(records_of(raw, path), start=1):  # a line, or an array's item
        if not line.strip():
            continue
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise CalibrationError(f"{path}:{n}: not JSON ({exc})") from None
        label = row.get("label") if isinstance(row, dict) else None
        if label not in ("pass", "fail"):
            raise CalibrationError(f"{path}:{n}: label must be 'pass' or 'fail', got {label!r}")
        try:
            events.append(model.model_validate(row))
        except ValidationError as exc:
            raise CalibrationError(f"{path}:{n}: {summarize_validation_error(exc)}") from None
        positives.append(label == "pass")
        groups.append(str(row.get("group") or "all"))
    if len(set(positives)) < 2:
        raise CalibrationError(f"{path}: a golden set needs both pass and fail rows")
    return GoldenSet(events, positives, groups, hashlib.sha256(raw).hexdigest())


def calibrate(
    golden: GoldenSet,
    kind: str,
    base: Policy,
    *,
    cost_fp: float = 1.0,
    cost_fn: float = 1.0,
    max_fpr: float | None = None,
    margin_quantile: float = 0.95,
    scorer: BatchScorer | None = None,
) -> Calibration:
    """Score the golden set with the production code, choose the threshold, add the margin."""
    spec = spec_for(kind)
    score_all = scorer or batch_scorer(kind)
    verdicts = score_all(golden.events, base)
    scores = [spec.to_gate(v) for v in verdicts]
    spreads = _spreads(golden.events, scores, spec, score_all, base)
    try:
        choice = choose_threshold(
            scores,
            golden.positives,
            golden.groups,
            cost_fp=cost_fp,
            cost_fn=cost_fn,
            max_fpr=max_fpr,
        )
    except ValueError as exc:
        raise CalibrationError(str(exc)) from None
    margin = variance_margin(spreads, margin_quantile)
    gate_threshold = min(1.0, choice.threshold + margin)
    tpr, fpr = rates_at(gate_threshold, scores, golden.positives)
    threshold = spec.from_gate(gate_threshold)
    try:
        reference = score_reference([v.score for v in verdicts], spec.scale)
    except ValueError as exc:
        raise CalibrationError(f"{kind}: {exc}") from None
    record = CalibrationRecord(
        golden_digest=golden.digest,
        golden_rows=len(scores),
        deferred_rows=sum(s == DEFER_SCORE for s in scores),
        objective="cost under fpr budget" if max_fpr is not None else "cost",
        cost_fp=cost_fp,
        cost_fn=cost_fn,
        max_fpr=max_fpr,
        raw_threshold=spec.from_gate(choice.threshold),
        margin=round(margin * spec.scale, 12),
        margin_quantile=margin_quantile,
        threshold=threshold,
        expected_tpr=tpr,
        expected_fpr=fpr,
        worst_group=choice.worst_group,
        direction=spec.direction,
        perturbations=sorted(spec.perturbations or ALL_PERTURBATIONS),
        reference=reference,
    )
    data = base.model_dump(mode="json")
    spec.set_threshold(data, threshold)
    data["calibration"] = {**data["calibration"], kind: record.model_dump(mode="json")}
    return Calibration(
        kind,
        Policy.model_validate(data),
        record,
        scores,
        golden.positives,
        golden.groups,
        choice,
        spreads,
        gate_threshold,
    )


def _spreads(
    events: list[Any], scores: list[float], spec: KindSpec, score_all: BatchScorer, base: Policy
) -> list[float]:
    """Each item's largest gate-score change over its perturbations (all scored in one batch).
    A perturbation that turns a scored item into a DEFER (or back) counts as no spread: that is
    a change of decision the DEFER rule already fails closed on, not noise in the score."""
    variants = [[p for _, p in perturbations_of(e, spec.perturbations)] for e in events]
    flat = [p for group in variants for p in group]
    perturbed = [spec.to_gate(v) for v in score_all(flat, base)] if flat else []
    spreads, i = [], 0
    for score, group in zip(scores, variants, strict=True):
        moved = [
            abs(p - score)
            for p in perturbed[i : i + len(group)]
            if (p == DEFER_SCORE) == (score == DEFER_SCORE)
        ]
        spreads.append(max(moved, default=0.0))
        i += len(group)
    return spreads


def policy_yaml(policy: Policy) -> str:
    return yaml.safe_dump(policy.model_dump(mode="json"), sort_keys=False)
