"""``verdictflow rq-eval``: retrieval quality of two systems side by side (spec 001).

A system is a TREC run file (``--runA`` / ``--runB``), so runs from any retriever, or from the
API's logs, are compared with the same metrics, or a YAML retriever config (``--configA`` /
``--configB``): verdictflow's own retriever built in-process, or a running ``/search``
(:mod:`verdictflow.scoring_jobs.retrieval_eval.systems`). Either side may be either kind.

Which queries are evaluated: every query that has at least one judgment in ``--truth``; each
must appear in ``--queries`` (else the inputs are inconsistent). A query a run does not answer
counts as an empty ranking (all metrics 0), as ``trec_eval -c`` does; queries without judgments
are skipped and counted. Output is deterministic: keys in a fixed order, floats rounded to 6
decimals, queries sorted by id; two runs give byte-identical files.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from verdictflow.evaluators.retrieval_metrics import (
    macro_average,
    mrr_at_k,
    ndcg_at_k,
    recall_at_k,
)
from verdictflow.scoring_jobs.retrieval_eval.inputs import RQInputError
from verdictflow.scoring_jobs.retrieval_eval.systems import System

SCHEMA_VERSION = 1
METRIC_NAMES = ("recall", "mrr", "ndcg")
DECIMALS = 6


def _round(x: float) -> float:
    return round(x, DECIMALS) + 0.0  # + 0.0 turns -0.0 into 0.0


def query_metrics(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> dict[str, Any]:
    """Exact (unrounded) metrics of one query, plus the relevant docs found in the top k."""
    return {
        "recall": recall_at_k(ranking, judged, k),
        "mrr": mrr_at_k(ranking, judged, k),
        "ndcg": ndcg_at_k(ranking, judged, k),
        "hits": [d for d in ranking[:k] if judged.get(d, 0) > 0],
    }


def check_judged_queries(queries: Mapping[str, str], qrels: Mapping[str, object]) -> None:
    """Every judged query must be a known query (else the inputs do not belong together)."""
    unknown = sorted(set(qrels) - set(queries))
    if unknown:
        raise RQInputError(
            f"{len(unknown)} query ids in --truth are not in --queries "
            f"(first: {', '.join(unknown[:5])})"
        )


def evaluate(
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    systems: Sequence[System],
    k: int,
    digests: Mapping[str, str | None],
    progress: Callable[[int, int], None] | None = None,
    traces: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The report (JSON-ready, stable key order) comparing ``systems`` (A then B)."""
    check_judged_queries(queries, qrels)
    for system in systems:
        strays = sorted(set(system.rankings) - set(queries))
        if strays:
            raise RQInputError(
                f"{len(strays)} query ids in run {system.label} are not in "
                f"--queries (first: {', '.join(strays[:5])})"
            )
    traces = traces or {}
    qids = sorted(qrels)
    per_query: list[dict[str, Any]] = []
    exact: dict[str, dict[str, list[float]]] = {
        s.label: {m: [] for m in METRIC_NAMES} for s in systems
    }
    for i, qid in enumerate(qids, start=1):
        row: dict[str, Any] = {"qid": qid}
        for system in systems:
            found = query_metrics(system.rankings.get(qid, ()), qrels[qid], k)
            for m in METRIC_NAMES:
                exact[system.label][m].append(found[m])
            row[system.label] = {
                **{m: _round(found[m]) for m in METRIC_NAMES},
                "hits": found["hits"],
            }
        if len(systems) == 2:
            a, b = (s.label for s in systems)
            row["delta"] = {m: _round(exact[b][m][-1] - exact[a][m][-1]) for m in METRIC_NAMES}
        per_query.append(row)
        if progress is not None:
            progress(i, len(qids))
    macro = {
        label: {m: macro_average(v) for m, v in by_metric.items()}
        for label, by_metric in exact.items()
    }
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "k": k,
        "corpus_digest": digests.get("corpus"),
        "queries_digest": digests.get("queries"),
        "qrels_digest": digests.get("qrels"),
        "queries_evaluated": len(qids),
        "queries_without_judgments": len(set(queries) - set(qrels)),
        "systems": {
            s.label: {
                "source": s.source,
                "config_path": s.path,
                "config_digest": s.digest,
                "traces": traces.get(s.label),
                "metrics": {"macro": {m: _round(macro[s.label][m]) for m in METRIC_NAMES}},
            }
            for s in systems
        },
    }
    if len(systems) == 2:
        a, b = (s.label for s in systems)
        report["delta"] = {"macro": {m: _round(macro[b][m] - macro[a][m]) for m in METRIC_NAMES}}
    report["per_query"] = per_query
    return report


def report_json(report: Mapping[str, Any]) -> bytes:
    return orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n"


def traces_jsonl(system: System, qrels: Mapping[str, Mapping[str, int]]) -> bytes:
    """One line per judged query (sorted by id): its ranked candidates and their judgments."""
    assert system.traces is not None
    lines = []
    for qid in sorted(system.traces):
        rows = [{**row, "rel": qrels.get(qid, {}).get(row["doc_id"])} for row in system.traces[qid]]
        record = {
            "qid": qid,
            "system": system.label,
            "config_digest": system.digest,
            "candidates": rows,
        }
        lines.append(orjson.dumps(record))
    return b"\n".join(lines) + b"\n"


def report_csv(report: Mapping[str, Any]) -> bytes:
    """``qid,system,recall,mrr,ndcg,hits`` with hits space-separated in rank order."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["qid", "system", *METRIC_NAMES, "hits"])
    labels = list(report["systems"])
    for row in report["per_query"]:
        for label in labels:
            values = row[label]
            writer.writerow(
                [
                    row["qid"],
                    label,
                    *(repr(values[m]) for m in METRIC_NAMES),
                    " ".join(values["hits"]),
                ]
            )
    return out.getvalue().encode()
