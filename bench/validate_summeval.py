"""Validate the summary judges against SummEval's expert scores (``../shared/data/summeval``).

Every judge metric is computed by the production code (the agent's parser and judges) on all
1,600 summaries (100 CNN/DM articles x 16 systems); the references are never used. For each
metric and expert dimension: summary-level Spearman rho and Kendall tau-b, computed per article
over its 16 summaries (an article whose metric or expert list is constant is skipped) and
averaged, the G-Eval / UniEval convention the data README describes. Printed next to the
published rows, with the plain unigram-precision baseline (share of summary content words the
article contains) measured in the same run.

    python bench/validate_summeval.py [--data ../shared/data/summeval] [--json out.json]

Deterministic: no sampling; same data, same spaCy model, same figures.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import track
from rich.table import Table
from scipy.stats import kendalltau, spearmanr

from verdictflow.evaluators.summary_judges import judge_lock, twin_lock
from verdictflow.evaluators.summary_judges.claims import extraneous_tokens
from verdictflow.pipelines.summaries import spacy_parser

ROOT = Path(__file__).resolve().parent.parent
DIMS = ("coherence", "consistency", "fluency", "relevance")
PUBLISHED = {  # G-Eval Table 1, summary-level rho/tau (data README)
    "ROUGE-1 (11 refs)": ((0.167, 0.126), (0.160, 0.130), (0.115, 0.094), (0.326, 0.252)),
    "BERTScore (refs)": ((0.284, 0.211), (0.110, 0.090), (0.193, 0.158), (0.312, 0.243)),
    "UniEval": ((0.575, 0.442), (0.446, 0.371), (0.449, 0.371), (0.426, 0.325)),
    "G-Eval-4": ((0.582, 0.457), (0.507, 0.425), (0.455, 0.378), (0.547, 0.433)),
}
METRICS = ("coverage", "alignment", "hallucination", "relevance", "bias_toxicity")


def summary_level(rows: Sequence[dict], values: Sequence[float], dim: str) -> tuple[float, float]:
    by_doc: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for row, v in zip(rows, values, strict=True):
        by_doc[row["doc_id"]].append((v, row[dim]))
    rhos, taus = [], []
    for pairs in by_doc.values():
        m, h = [p[0] for p in pairs], [p[1] for p in pairs]
        if len(set(m)) < 2 or len(set(h)) < 2:
            continue
        rhos.append(spearmanr(m, h).statistic)
        taus.append(kendalltau(m, h).statistic)
    return math.fsum(rhos) / len(rhos), math.fsum(taus) / len(taus)


def score_all(rows: Sequence[dict]) -> dict[str, list[float]]:
    parse, _ = spacy_parser()
    articles = sorted({r["source"] for r in rows})
    parsed_articles = dict(zip(articles, parse(articles), strict=True))
    summaries = parse([r["system_output"] for r in rows])
    out: dict[str, list[float]] = defaultdict(list)
    for row, summary in track(list(zip(rows, summaries, strict=True)), description="judging"):
        article = parsed_articles[row["source"]]
        for name, judge in (("twin", twin_lock.judge), ("judge", judge_lock.judge)):
            metrics = judge(summary, article)
            for metric in METRICS:
                out[f"{name}.{metric}"].append(metrics[metric].get("overall_score", math.nan))
        extra, total = extraneous_tokens(summary, article)
        out["baseline: unigram precision"].append(1 - len(extra) / total if total else 0.0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "summeval")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    with open(args.data / "summeval_pairs.jsonl", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    scores = score_all(rows)
    errors = {k: sum(1 for v in vs if math.isnan(v)) for k, vs in scores.items()}
    results = {
        name: {d: summary_level(rows, [0.0 if math.isnan(v) else v for v in vs], d) for d in DIMS}
        for name, vs in scores.items()
    }
    table = Table(title=f"SummEval, {len(rows)} summaries: summary-level Spearman / Kendall tau")
    table.add_column("metric")
    for d in DIMS:
        table.add_column(d, justify="right")
    for name, res in results.items():
        table.add_row(name, *(f"{res[d][0]:.3f} / {res[d][1]:.3f}" for d in DIMS))
    for name, pub in PUBLISHED.items():
        table.add_row(f"[dim]{name} (published)[/]", *(f"{r:.3f} / {t:.3f}" for r, t in pub))
    console = Console()
    console.print(table)
    console.print(f"error objects (scored 0 here): { ({k: v for k, v in errors.items() if v}) }")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "errors": errors}, indent=2))


if __name__ == "__main__":
    main()
