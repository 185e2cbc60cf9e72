"""``verdictflow calibrate``: choose a kind's threshold from a labelled golden set.

A golden set is JSONL: each row an input event of the kind (AnswerEvent fields) plus
``label`` (``pass`` or ``fail``) and an optional ``group``. Scores come from the production
evaluators. The result is a policy file (the base policy with the new threshold and a
``calibration`` record: golden digest, margin, expected FPR/TPR, worst group), and optionally
a report directory with the ROC and DET curves (PNG), a table and the figures as JSON.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml
from pydantic import ValidationError

from verdictflow.evaluators import variant_groups as vg
from verdictflow.evaluators.answer_verdicts import ScoringContext, score_groundedness
from verdictflow.evaluators.calibration import (
    DEFER_SCORE,
    Choice,
    choose_threshold,
    rates_at,
    variance_margin,
)
from verdictflow.evaluators.perturb import perturbations
from verdictflow.evaluators.policy import CalibrationRecord, Policy
from verdictflow.exceptions import VerdictflowError
from verdictflow.models.codec import summarize_validation_error
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Decision, Verdict

Scorer = Callable[[AnswerEvent, ScoringContext], Verdict]
KIND_SCORERS: dict[str, Scorer] = {
    "groundedness": score_groundedness,
    "consistency": vg.score_self_contained,
}


class CalibrationError(VerdictflowError):
    """A golden set or option that calibration cannot use."""


@dataclass(frozen=True)
class GoldenSet:
    events: list[AnswerEvent]
    positives: list[bool]
    groups: list[str]
    digest: str


@dataclass(frozen=True)
class Calibration:
    kind: str
    policy: Policy
    record: CalibrationRecord
    scores: list[float]
    positives: list[bool]
    groups: list[str]
    choice: Choice
    spreads: list[float]


def read_golden(path: Path) -> GoldenSet:
    raw = path.read_bytes()
    events, positives, groups = [], [], []
    for n, line in enumerate(raw.splitlines(), start=1):
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
            events.append(AnswerEvent.model_validate(row))
        except ValidationError as exc:
            raise CalibrationError(f"{path}:{n}: {summarize_validation_error(exc)}") from None
        positives.append(label == "pass")
        groups.append(str(row.get("group") or "all"))
    if len(set(positives)) < 2:
        raise CalibrationError(f"{path}: a golden set needs both pass and fail rows")
    return GoldenSet(events, positives, groups, hashlib.sha256(raw).hexdigest())


def gate_score(verdict: Verdict) -> float:
    """The score the gate compares; a DEFER never passes."""
    if verdict.decision is Decision.DEFER or verdict.score is None:
        return DEFER_SCORE
    return verdict.score


def calibrate(
    golden: GoldenSet,
    kind: str,
    base: Policy,
    *,
    cost_fp: float = 1.0,
    cost_fn: float = 1.0,
    max_fpr: float | None = None,
    margin_quantile: float = 0.95,
) -> Calibration:
    if kind not in KIND_SCORERS:
        raise CalibrationError(
            f"kind {kind!r} cannot be calibrated yet; scored kinds: " + ", ".join(KIND_SCORERS)
        )
    scorer = KIND_SCORERS[kind]
    ctx = ScoringContext(base)
    scores = [gate_score(scorer(e, ctx)) for e in golden.events]
    spreads = []
    for event, score in zip(golden.events, scores, strict=True):
        perturbed = [gate_score(scorer(p, ctx)) for _, p in perturbations(event)]
        spreads.append(max(abs(p - score) for p in perturbed))
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
    threshold = min(1.0, choice.threshold + margin)
    tpr, fpr = rates_at(threshold, scores, golden.positives)
    record = CalibrationRecord(
        golden_digest=golden.digest,
        golden_rows=len(scores),
        deferred_rows=sum(s == DEFER_SCORE for s in scores),
        objective="cost under fpr budget" if max_fpr is not None else "cost",
        cost_fp=cost_fp,
        cost_fn=cost_fn,
        max_fpr=max_fpr,
        raw_threshold=choice.threshold,
        margin=margin,
        margin_quantile=margin_quantile,
        threshold=threshold,
        expected_tpr=tpr,
        expected_fpr=fpr,
        worst_group=choice.worst_group,
    )
    data = base.model_dump(mode="json")
    data[kind] = {**data[kind], "threshold": threshold}
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
    )


def policy_yaml(policy: Policy) -> str:
    return yaml.safe_dump(policy.model_dump(mode="json"), sort_keys=False)


def write_report(result: Calibration, out_dir: Path) -> list[Path]:
    """ROC and DET curves (PNG), a Markdown table and the figures as JSON."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy.stats import norm
    from sklearn.metrics import det_curve, roc_curve

    out_dir.mkdir(parents=True, exist_ok=True)
    fpr, tpr, _ = roc_curve(result.positives, result.scores)
    det_fpr, det_fnr, _ = det_curve(result.positives, result.scores)
    rec = result.record
    fig, (roc_ax, det_ax) = plt.subplots(1, 2, figsize=(10, 4.5))
    roc_ax.plot(fpr, tpr, label=f"{result.kind}")
    roc_ax.plot([0, 1], [0, 1], linestyle=":", color="grey")
    roc_ax.scatter(
        [rec.expected_fpr],
        [rec.expected_tpr],
        color="red",
        zorder=3,
        label=f"threshold {rec.threshold:.3f}",
    )
    roc_ax.set(
        xlabel="false positive rate (fail items passed)",
        ylabel="true positive rate (pass items passed)",
        title="ROC",
    )
    roc_ax.legend(loc="lower right")
    clip = 1e-3
    det_ax.plot(norm.ppf(_clip(det_fpr, clip)), norm.ppf(_clip(det_fnr, clip)))
    det_ax.scatter(
        [norm.ppf(_clip([rec.expected_fpr], clip)[0])],
        [norm.ppf(_clip([1 - rec.expected_tpr], clip)[0])],
        color="red",
        zorder=3,
    )
    ticks = [0.001, 0.01, 0.05, 0.2, 0.5, 0.8, 0.95]
    det_ax.set_xticks(norm.ppf(ticks), [f"{t:g}" for t in ticks])
    det_ax.set_yticks(norm.ppf(ticks), [f"{t:g}" for t in ticks])
    det_ax.set(xlabel="false positive rate", ylabel="false negative rate", title="DET (probit)")
    fig.tight_layout()
    png = out_dir / f"{result.kind}_roc_det.png"
    fig.savefig(png, dpi=110, metadata={"Software": None})
    plt.close(fig)
    figures = _figures(result)
    table = out_dir / f"{result.kind}_report.md"
    table.write_text(_markdown(result.kind, figures))
    figures_path = out_dir / f"{result.kind}_calibration.json"
    figures_path.write_bytes(orjson.dumps(figures, option=orjson.OPT_INDENT_2) + b"\n")
    return [png, table, figures_path]


def _clip(values: Any, eps: float) -> Any:
    import numpy as np

    return np.clip(np.asarray(values, dtype=float), eps, 1 - eps)


def _figures(result: Calibration) -> dict[str, Any]:
    groups = sorted(set(result.groups))
    per_group = {}
    for g in groups:
        idx = [i for i, name in enumerate(result.groups) if name == g]
        tpr, fpr = rates_at(
            result.record.threshold,
            [result.scores[i] for i in idx],
            [result.positives[i] for i in idx],
        )
        per_group[g] = {"rows": len(idx), "tpr": tpr, "fpr": fpr}
    return {
        "kind": result.kind,
        **result.record.model_dump(mode="json"),
        "margin_p95": variance_margin(result.spreads, 0.95),
        "margin_p99": variance_margin(result.spreads, 0.99),
        "groups": per_group,
    }


def _markdown(kind: str, f: dict[str, Any]) -> str:
    lines = [f"# Calibration of `{kind}`", "", "| figure | value |", "|---|---|"]
    for key in (
        "golden_rows",
        "deferred_rows",
        "objective",
        "cost_fp",
        "cost_fn",
        "max_fpr",
        "raw_threshold",
        "margin_p95",
        "margin_p99",
        "margin",
        "threshold",
        "expected_tpr",
        "expected_fpr",
        "worst_group",
        "golden_digest",
    ):
        value = f[key]
        lines.append(
            f"| {key} | {value:.4f} |" if isinstance(value, float) else f"| {key} | {value} |"
        )
    lines += ["", "| group | rows | TPR | FPR |", "|---|---|---|---|"]
    for g, v in f["groups"].items():
        lines.append(f"| {g} | {v['rows']} | {v['tpr']:.4f} | {v['fpr']:.4f} |")
    return "\n".join(lines) + "\n"
