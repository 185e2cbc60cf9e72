"""The held-out sets the claim checker is validated on (issue 43), and how a checker is scored
on them.

- ``aggrefact_dev``: WiCE and FactCheck-GPT dev splits (LLM-AggreFact), a claim against a long
  document, label 1 supported;
- ``begin_dev``: BEGIN's three dialogue corpora, the knowledge as the document and the response
  as the claim; "Fully attributable" is 1, "Not fully attributable" 0, "Generic" rows left out
  (they are neither: the README asks to say so).

A row's score is the best probability over its claim's top chunks
(:mod:`~verdictflow.evaluators.checker_chunks`); figures are ROC-AUC and the balanced accuracy
at the threshold that maximises it on the set itself (the sets' READMEs ask for a threshold
chosen on the dev data).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verdictflow.evaluators.checker_chunks import (
    PAIR_TRUNCATION,
    chunk_context,
    cut_claim,
    top_chunks,
)
from verdictflow.scoring_jobs.training.data_files import require

Predict = Callable[[Sequence[tuple[str, str]]], list[float]]


@dataclass(frozen=True, slots=True)
class Row:
    set_name: str
    id: str
    doc: str
    claim: str
    label: int
    query: str = ""


def aggrefact(data: Path, name: str) -> list[Row]:
    path = require(data / "aggrefact_dev" / f"{name}_dev.jsonl")
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    return [Row(name, str(r["id"]), str(r["doc"]), str(r["claim"]), int(r["label"])) for r in rows]


def begin(data: Path, corpus: str) -> list[Row]:
    path = require(data / "begin_dev" / f"begin_dev_{corpus}.tsv")
    out = []
    with path.open(encoding="utf-8", newline="") as f:
        for n, r in enumerate(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)):
            label = r["begin_label"].strip()
            if label == "Generic":
                continue
            out.append(
                Row(f"begin-{corpus}", f"begin-{corpus}-{n}", r["knowledge"], r["response"],
                    int(label == "Fully attributable"), r["message"])
            )  # fmt: skip
    return out


HELD_OUT: dict[str, Callable[[Path], list[Row]]] = {
    "wice": lambda d: aggrefact(d, "wice"),
    "factcheckgpt": lambda d: aggrefact(d, "factcheckgpt"),
    "begin-wow": lambda d: begin(d, "wow"),
    "begin-cmu": lambda d: begin(d, "cmu"),
    "begin-tc": lambda d: begin(d, "tc"),
}


def held_out_file(data: Path, name: str) -> Path:
    """The file a held-out set is read from."""
    if name.startswith("begin-"):
        return data / "begin_dev" / f"begin_dev_{name.removeprefix('begin-')}.tsv"
    return data / "aggrefact_dev" / f"{name}_dev.jsonl"


def checker_scores(rows: Sequence[Row], predict: Predict, k: int = 3) -> list[float]:
    """Each row's best probability over its claim's ``k`` best chunks (one batched call)."""
    pairs: list[tuple[str, str]] = []
    owners: list[int] = []
    for n, row in enumerate(rows):
        chunks = chunk_context(row.doc) or []
        claim = cut_claim(row.claim)
        for i in top_chunks(claim, chunks, k) if chunks else []:
            pairs.append((chunks[i].text, claim))
            owners.append(n)
    probabilities = predict(pairs) if pairs else []
    best = [0.0] * len(rows)
    for n, p in zip(owners, probabilities, strict=True):
        best[n] = max(best[n], p)
    return best


def best_threshold(scores: Sequence[float], labels: Sequence[int]) -> tuple[float, float]:
    """(balanced accuracy, threshold) at the threshold that maximises it: PASS when score >=
    threshold."""
    from sklearn.metrics import roc_curve

    fpr, tpr, thresholds = roc_curve(list(labels), list(scores))
    balanced = (tpr + 1 - fpr) / 2
    best = int(balanced.argmax())
    return float(balanced[best]), float(min(1.0, thresholds[best]))


def balanced_accuracy(passed: Any, labels: Any) -> float:
    """Balanced accuracy of boolean decisions ``passed`` against 0/1 ``labels`` (arrays)."""
    tpr = (passed & (labels == 1)).sum() / max(1, (labels == 1).sum())
    tnr = (~passed & (labels == 0)).sum() / max(1, (labels == 0).sum())
    return float((tpr + tnr) / 2)


def figures(name: str, scores: Sequence[float], labels: Sequence[int]) -> dict[str, Any]:
    """ROC-AUC and the best balanced accuracy (with its threshold) of ``scores``."""
    from sklearn.metrics import roc_auc_score

    balanced, threshold = best_threshold(scores, labels)
    return {
        "set": name,
        "n": len(labels),
        "positives": int(sum(labels)),
        "roc_auc": round(float(roc_auc_score(list(labels), list(scores))), 4),
        "balanced_accuracy": round(balanced, 4),
        "threshold": round(threshold, 4),
    }


def shared_threshold(
    scored: dict[str, tuple[Sequence[float], Sequence[int]]],
) -> tuple[float, dict[str, float]]:
    """The one threshold with the best mean balanced accuracy over the sets (a deployment
    has one cut for all text: the checker's ``supported_at``), and each set's balanced
    accuracy at it."""
    import numpy as np

    def bacc(scores: Any, labels: Any, at: float) -> float:
        return balanced_accuracy(scores >= at, labels)

    arrays = {n: (np.asarray(s, dtype=float), np.asarray(y)) for n, (s, y) in scored.items()}
    candidates = np.unique(np.concatenate([s for s, _ in arrays.values()]))
    best = (-1.0, 0.5)
    for at in candidates[:: max(1, len(candidates) // 2000)]:
        mean = float(np.mean([bacc(s, y, at) for s, y in arrays.values()]))
        if mean > best[0]:
            best = (mean, float(at))
    at = round(best[1], 4)
    return at, {n: round(bacc(s, y, at), 4) for n, (s, y) in arrays.items()}


def torch_predict(model: Any, tokenizer: Any, max_length: int = 256, batch: int = 32) -> Predict:
    """A predict function over a Hugging Face model being trained (fp32, no gradients)."""
    import torch

    device = next(model.parameters()).device

    def predict(pairs: Sequence[tuple[str, str]]) -> list[float]:
        out: list[float] = []
        with torch.no_grad():
            for i in range(0, len(pairs), batch):
                part = pairs[i : i + batch]
                encoded = tokenizer(
                    [c for c, _ in part], [q for _, q in part], truncation=PAIR_TRUNCATION,
                    max_length=max_length, padding=True, return_tensors="pt",
                ).to(device)  # fmt: skip
                logits = model(**encoded).logits[:, 0].float()
                out += torch.sigmoid(logits).tolist()
        return out

    return predict


def validate_all(
    data: Path, predict: Predict, names: Sequence[str] = tuple(HELD_OUT),
    keep: dict[str, dict[str, list[float] | list[int]]] | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """Figures per held-out set and at the one shared threshold; ``keep``, when given, gets
    every row's score and label per set (what ``bench/validate_checker.py --checker-scores``
    reads, so a checker fitted elsewhere is measured in the cascade without its weights)."""
    out = []
    scored: dict[str, tuple[Sequence[float], Sequence[int]]] = {}
    for name in names:
        rows = HELD_OUT[name](data)
        scored[name] = (checker_scores(rows, predict), [r.label for r in rows])
        out.append(figures(name, *scored[name]))
        if keep is not None:
            keep[name] = {"checker": list(scored[name][0]), "labels": list(scored[name][1])}
    if len(scored) > 1:
        at, each = shared_threshold(scored)
        out.append({"set": "one threshold", "threshold": at, "balanced_accuracy": each})
    return out
