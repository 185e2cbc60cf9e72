"""``verdictflow rq-eval``: the command line of the retrieval A/B harness (spec 001).

Thin driver: reads and checks the inputs, builds the two systems (each from a run file or a
config), evaluates them with :mod:`verdictflow.scoring_jobs.retrieval_eval.rq_eval` and writes
the files.
Inputs are checked before any retriever is built, so a bad qrels line fails in milliseconds.

Traces: ``--emit-traces`` asks for them; a system writes them only when its config says
``trace: true`` (the harness never forces a config's tracing on, as the spec requires). They go
to ``<out>.traces.<A|B>.jsonl`` next to ``--out``. A run file has no candidates to trace.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import Progress

from verdictflow.digests import file_digest
from verdictflow.job_outputs import Outputs, check_outputs
from verdictflow.scoring_jobs.retrieval_eval.inputs import (
    Document,
    RQInputError,
    read_corpus,
    read_qrels,
    read_queries,
)

if TYPE_CHECKING:  # the retriever, FAISS and BM25 are imported when the command runs
    from verdictflow.scoring_jobs.retrieval_eval.systems import System

logger = logging.getLogger(__name__)
err = Console(stderr=True, soft_wrap=True)  # one line per message, paths unbroken

RUN_HELP = "TREC run file 'qid Q0 doc rank score tag'"
CONFIG_HELP = "Retriever config YAML (in-process retriever, or url of a /search)"


def trace_path(out: Path, label: str) -> Path:
    """Where a system's traces go: ``run.json`` -> ``run.traces.A.jsonl``."""
    return out.with_name(f"{out.stem}.traces.{label}.jsonl")


def _system(
    label: str,
    run: Path | None,
    config: Path | None,
    build: tuple[list[Document] | None, dict[str, str], list[str], int],
    progress: Progress,
) -> System:
    if (run is None) == (config is None):
        raise RQInputError(f"system {label}: give exactly one of --run{label} and --config{label}")
    from verdictflow.scoring_jobs.retrieval_eval.config import load_config
    from verdictflow.scoring_jobs.retrieval_eval.systems import config_system, run_system

    if run is not None:
        return run_system(label, run)
    assert config is not None
    loaded = load_config(config)
    corpus, queries, qids, k = build
    task = progress.add_task(f"system {label}: ranking queries", total=len(qids))
    embed_task = progress.add_task(f"system {label}: embedding the corpus", total=None)
    return config_system(
        label,
        loaded,
        corpus,
        queries,
        qids,
        k,
        lambda i, n: progress.update(task, completed=i, total=n),
        lambda i, n: progress.update(embed_task, completed=i, total=n),
    )


def rq_eval_command(
    queries: Annotated[Path, typer.Option(help="TSV 'qid<TAB>text' or BEIR queries.jsonl")],
    truth: Annotated[Path, typer.Option(help="qrels: TSV, BEIR TSV with header, or TREC")],
    out: Annotated[Path, typer.Option(help="JSON report")],
    run_a: Annotated[Path | None, typer.Option("--runA", help=RUN_HELP)] = None,
    run_b: Annotated[Path | None, typer.Option("--runB", help=RUN_HELP)] = None,
    config_a: Annotated[Path | None, typer.Option("--configA", help=CONFIG_HELP)] = None,
    config_b: Annotated[Path | None, typer.Option("--configB", help=CONFIG_HELP)] = None,
    k: Annotated[int, typer.Option(min=1, help="Cut-off for recall, MRR and nDCG")] = 10,
    csv_out: Annotated[Path | None, typer.Option("--csv", help="Per-query CSV")] = None,
    corpus: Annotated[
        Path | None, typer.Option(help="Corpus JSONL (id/text or BEIR _id/title/text)")
    ] = None,
    emit_traces: Annotated[
        bool, typer.Option("--emit-traces", help="Write traces of systems whose config allows")
    ] = False,
) -> None:
    """Compare two retrieval systems: recall@k, MRR@k, nDCG@k, macro and per query (spec 001).

    Each system is a TREC run (--runA/--runB) or a retriever config (--configA/--configB).
    """
    from verdictflow.scoring_jobs.retrieval_eval import rq_eval as rq

    for path in (queries, truth, run_a, run_b, config_a, config_b, corpus):
        if path is not None and not path.is_file():
            raise RQInputError(f"no such file: {path}")
    trace_outputs = [trace_path(out, label) for label in "AB"] if emit_traces else []
    check_outputs([out, csv_out, *trace_outputs])  # before any work
    digests = {
        "queries": file_digest(queries),
        "qrels": file_digest(truth),
        "corpus": file_digest(corpus) if corpus else None,
    }
    docs = read_corpus(corpus) if corpus is not None else None  # a bad corpus is an error
    query_texts = read_queries(queries)
    qrels = read_qrels(truth)
    rq.check_judged_queries(query_texts, qrels)
    build = (docs, query_texts, sorted(qrels), k)
    with Progress(console=err, transient=True) as progress:
        systems = [
            _system("A", run_a, config_a, build, progress),
            _system("B", run_b, config_b, build, progress),
        ]
        task = progress.add_task("evaluating queries", total=None)
        traces = {
            s.label: trace_path(out, s.label)
            for s in systems
            if emit_traces and s.trace_enabled and s.traces is not None
        }
        report = rq.evaluate(
            query_texts,
            qrels,
            systems,
            k,
            digests,
            lambda i, n: progress.update(task, completed=i, total=n),
            {label: path.name for label, path in traces.items()},  # next to the report
        )
    outputs = Outputs()  # the report, the CSV and the traces: all written, or none
    outputs.add(out, rq.report_json(report))
    if csv_out is not None:
        outputs.add(csv_out, rq.report_csv(report))
    for system in systems:
        if system.label in traces:
            outputs.add(traces[system.label], rq.traces_jsonl(system, qrels))
    outputs.commit()
    for system in systems:
        if system.label in traces:
            err.print(f"{system.label}: traces written to {traces[system.label]}")
        elif emit_traces:
            why = "is a run file" if system.source == "run" else "does not set trace: true"
            err.print(f"{system.label}: no traces: {system.path} {why}")
    macro = {label: s["metrics"]["macro"] for label, s in report["systems"].items()}
    for label, values in macro.items():
        err.print(f"{label}: " + "  ".join(f"{m}@{k} {v:.4f}" for m, v in values.items()))
    err.print(
        "delta: "
        + "  ".join(f"{m} {v:+.4f}" for m, v in report["delta"]["macro"].items())
        + f"  ({report['queries_evaluated']} queries)"
    )
