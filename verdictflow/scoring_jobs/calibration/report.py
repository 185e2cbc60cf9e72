"""Report of a calibration run: ROC and DET curves (PNG), a Markdown table, figures as JSON.

Plots are in gate space (higher passes, [0, 1]), which is the kind's own score except for
hallucination (1 - score) and judges (score / 10); the table gives thresholds in the kind's
own units.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson

from verdictflow.evaluators.calibration import rates_at, variance_margin
from verdictflow.job_outputs import Outputs
from verdictflow.scoring_jobs.calibration.calibrate import Calibration


def write_report(result: Calibration, out_dir: Path) -> list[Path]:
    """ROC and DET curves (PNG), a Markdown table and the figures as JSON, written
    atomically (all or none: :class:`~verdictflow.job_outputs.Outputs`)."""
    outputs = Outputs()
    for path, data in report_files(result, out_dir):
        outputs.add(path, data)
    return outputs.commit()


def report_files(result: Calibration, out_dir: Path) -> list[tuple[Path, bytes]]:
    """The report's files and their bytes (nothing written)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy.stats import norm
    from sklearn.metrics import det_curve, roc_curve

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
        label=f"threshold {'<=' if rec.direction == 'lower' else '>='} {rec.threshold:.3f}",
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
    image = io.BytesIO()
    fig.savefig(image, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)
    figures = _figures(result)
    return [
        (png, image.getvalue()),
        (out_dir / f"{result.kind}_report.md", _markdown(result.kind, figures).encode()),
        (
            out_dir / f"{result.kind}_calibration.json",
            orjson.dumps(figures, option=orjson.OPT_INDENT_2) + b"\n",
        ),
    ]


def _clip(values: Any, eps: float) -> Any:
    import numpy as np

    return np.clip(np.asarray(values, dtype=float), eps, 1 - eps)


def _figures(result: Calibration) -> dict[str, Any]:
    groups = sorted(set(result.groups))
    per_group = {}
    for g in groups:
        idx = [i for i, name in enumerate(result.groups) if name == g]
        tpr, fpr = rates_at(
            result.gate_threshold,
            [result.scores[i] for i in idx],
            [result.positives[i] for i in idx],
        )
        per_group[g] = {"rows": len(idx), "tpr": tpr, "fpr": fpr}
    return {
        "kind": result.kind,
        **result.record.model_dump(mode="json", exclude={"reference"}),
        "reference": (
            result.record.reference.model_dump(mode="json") if result.record.reference else None
        ),
        "margin_p95": variance_margin(result.spreads, 0.95),
        "margin_p99": variance_margin(result.spreads, 0.99),
        "groups": per_group,
    }


def _markdown(kind: str, f: dict[str, Any]) -> str:
    lines = [f"# Calibration of `{kind}`", "", "| figure | value |", "|---|---|"]
    for key in (
        "direction",
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
