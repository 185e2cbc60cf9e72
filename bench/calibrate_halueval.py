"""Calibrate a kind on half of HaluEval QA and measure accuracy on the other half.

Rows of ``qa_data_first1000.json`` are split by parity: even rows calibrate, odd rows are held
out (never seen by calibration). Each row gives a ``pass`` item (knowledge + right answer) and a
``fail`` item (knowledge + hallucinated answer). Reports the calibrated threshold, its held-out
accuracy / TPR / FPR, the same at the uncalibrated default, and writes the ROC/DET report.
Held-out figures count the PASS decisions of verdicts scored under each policy, as an agent
loading that policy would emit them (a DEFER is not a PASS).

    python bench/calibrate_halueval.py [--kind groundedness|hallucination|relevance|completeness]
        [--report docs/calibration] [--max-fpr 0.1]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import orjson

from verdictflow.evaluators.policy import Policy
from verdictflow.models.verdicts import Decision
from verdictflow.scoring_jobs.calibration import calibrate as cal
from verdictflow.scoring_jobs.calibration.kinds import BatchScorer, batch_scorer
from verdictflow.scoring_jobs.calibration.report import write_report

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "halueval" / "qa_data_first1000.json"


def golden_lines(rows: list[dict[str, str]], parity: int) -> list[bytes]:
    lines = []
    for i, row in enumerate(rows):
        if i % 2 != parity:
            continue
        for field, label in (("right_answer", "pass"), ("hallucinated_answer", "fail")):
            lines.append(
                orjson.dumps(
                    {
                        "id": f"h{i}-{label}",
                        "query": row["question"],
                        "answer": row[field],
                        "contexts": [row["knowledge"]],
                        "label": label,
                    }
                )
            )
    return lines


def held_out_figures(
    golden: cal.GoldenSet, policy: Policy, kind: str, score: BatchScorer
) -> dict[str, float]:
    verdicts = score(golden.events, policy)
    passed = [v.decision is Decision.PASS for v in verdicts]
    pos = [p for p, y in zip(passed, golden.positives, strict=True) if y]
    neg = [p for p, y in zip(passed, golden.positives, strict=True) if not y]
    tpr, fpr = sum(pos) / len(pos), sum(neg) / len(neg)
    accuracy = (sum(pos) + len(neg) - sum(neg)) / len(passed)
    return {"threshold": verdicts[0].threshold, "accuracy": accuracy, "tpr": tpr, "fpr": fpr}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", type=Path, default=None, help="write ROC/DET report here")
    parser.add_argument("--max-fpr", type=float, default=None)
    parser.add_argument("--kind", default="groundedness")
    args = parser.parse_args()
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    with tempfile.TemporaryDirectory() as tmp:
        sets = {}
        for name, parity in (("calibration", 0), ("held_out", 1)):
            path = Path(tmp) / f"{name}.jsonl"
            path.write_bytes(b"\n".join(golden_lines(rows, parity)) + b"\n")
            sets[name] = cal.read_golden(path, args.kind)
    score = batch_scorer(args.kind)
    result = cal.calibrate(
        sets["calibration"], args.kind, Policy(), max_fpr=args.max_fpr, scorer=score
    )
    rec = result.record
    print(
        f"calibration half: {rec.golden_rows} items; threshold {rec.threshold:.4f} "
        f"(raw {rec.raw_threshold:.4f}, margin {rec.margin:.4f}, {rec.direction} passes); "
        f"in-sample TPR {rec.expected_tpr:.4f}, FPR {rec.expected_fpr:.4f}"
    )
    for label, policy in (("calibrated", result.policy), ("default", Policy())):
        f = held_out_figures(sets["held_out"], policy, args.kind, score)
        print(
            f"held-out half, {label:>10} threshold {f['threshold']:.4f}: accuracy "
            f"{f['accuracy']:.4f}, TPR {f['tpr']:.4f}, FPR {f['fpr']:.4f}"
        )
    if args.report:
        for path in write_report(result, args.report):
            print(f"report: {path}")


if __name__ == "__main__":
    main()
