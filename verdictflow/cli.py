"""The ``verdictflow`` command. Settings are built here, once, and passed down."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.progress import Progress

from verdictflow.exceptions import VerdictflowError
from verdictflow.streams.settings import Settings

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
eval_app = typer.Typer(no_args_is_help=True, help="Score events from a file, without a broker.")
app.add_typer(eval_app, name="eval")
err = Console(stderr=True)

BrokerOpt = Annotated[
    str | None,
    typer.Option(
        "--broker",
        help="kafka://host:port (default: $VERDICTFLOW_BROKER or kafka://127.0.0.1:9092)",
    ),
]
PrefixOpt = Annotated[str | None, typer.Option("--prefix", help="Topic prefix (default vf.)")]
PolicyOpt = Annotated[Path | None, typer.Option("--policy", help="Policy YAML (thresholds).")]
IdfStatsOpt = Annotated[
    str,
    typer.Option(
        "--idf-stats", help="Relevance background statistics: a build-idf file, default or none"
    ),
]


def build_settings(**overrides: Any) -> Settings:
    """Settings from the environment, overridden by the options actually given."""
    given = {k: v for k, v in overrides.items() if v is not None}
    if "prefix" in given:
        given["topic_prefix"] = given.pop("prefix")
    return Settings(**given)


def _exit_on_sigterm() -> None:
    """Make SIGTERM unwind like Ctrl-C, so ``finally`` blocks stop child processes."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def _setup_logging(level: str = "info") -> None:
    logging.basicConfig(
        level=level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


@app.command()
def broker(port: Annotated[int, typer.Option(help="Port on 127.0.0.1")] = 9092) -> None:
    """Run the embedded Kafka-protocol broker (Tansu) in the foreground."""
    from verdictflow.streams.broker import EmbeddedBroker

    _setup_logging()
    _exit_on_sigterm()
    embedded = EmbeddedBroker(port=port).start()
    err.print(f"embedded broker ready at [bold]{embedded.url}[/] (memory storage; Ctrl-C stops)")
    try:
        embedded.wait()
    except KeyboardInterrupt:
        pass
    finally:
        embedded.stop()


@app.command()
def worker(
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
    policy: PolicyOpt = None,
    app_id: Annotated[str | None, typer.Option(help="Consumer group / app id")] = None,
    log_level: Annotated[str, typer.Option(help="debug, info, warning")] = "info",
    idf_stats: Annotated[
        str | None, typer.Option("--idf-stats", help="build-idf file, default or none")
    ] = None,
    metrics_port: Annotated[
        int | None, typer.Option(help="Serve Prometheus /metrics on this port (0: off)")
    ] = None,
) -> None:
    """Run a Faust worker: the answers agent (groundedness, relevance, completeness,
    hallucination), the consistency agent, the summaries agent (judge verdicts) and the
    document-quality agents."""
    from verdictflow.streams.worker import run_worker

    _setup_logging(log_level)
    run_worker(
        build_settings(
            broker=broker,
            prefix=prefix,
            policy=policy,
            app_id=app_id,
            log_level=log_level,
            idf_stats=idf_stats,
            metrics_port=metrics_port,
        )
    )


@app.command("migrate-tables")
def migrate_tables(
    broker: BrokerOpt = None,
    app_id: Annotated[str | None, typer.Option(help="Consumer group / app id")] = None,
    reset: Annotated[
        bool, typer.Option("--reset", help="Start the new tables empty instead of migrating")
    ] = False,
) -> None:
    """Move table state written by verdictflow before changelog layout 2 (stop the workers
    first); workers refuse to start until this ran. See docs/operations.md."""
    from verdictflow.streams.table_migration import migrate_tables as do_migrate

    settings = build_settings(broker=broker, app_id=app_id)
    with err.status("migrating table changelogs") as status:
        reports = asyncio.run(do_migrate(settings, reset=reset, progress=status.update))
    for r in reports:
        print(orjson.dumps(r.__dict__).decode())


@app.command()
def replay(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="JSONL events")],
    topic: Annotated[str, typer.Option(help="Topic, short (answers) or full name")] = "answers",
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
) -> None:
    """Produce each line of a JSONL file to a topic, as is (malformed lines included)."""
    from verdictflow.scoring_jobs.replay import read_lines
    from verdictflow.scoring_jobs.replay import replay as do_replay

    settings = build_settings(broker=broker, prefix=prefix)
    lines = read_lines(file)
    with Progress(console=err, transient=True) as progress:
        task = progress.add_task(f"replaying {file.name}", total=len(lines))
        sent = asyncio.run(
            do_replay(lines, topic, settings, lambda n: progress.update(task, completed=n))
        )
    err.print(
        f"sent {sent} records to {settings.topic_prefix}{topic.removeprefix(settings.topic_prefix)}"
    )


@app.command()
def tail(
    topic: Annotated[list[str], typer.Argument(help="Topics (short or full names)")],
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
    from_beginning: Annotated[bool, typer.Option("--from-beginning")] = False,
    count: Annotated[int | None, typer.Option(help="Stop after N records")] = None,
    timeout: Annotated[float | None, typer.Option(help="Stop after S idle seconds")] = None,
) -> None:
    """Print topic values as JSON lines (what a monitoring consumer sees)."""
    from verdictflow.scoring_jobs.tail import tail as do_tail

    settings = build_settings(broker=broker, prefix=prefix)

    async def run() -> None:
        async for _, value in do_tail(
            topic, settings, from_beginning=from_beginning, count=count, timeout=timeout
        ):
            sys.stdout.buffer.write(value + b"\n")
            sys.stdout.flush()

    asyncio.run(run())


@eval_app.command("answers")
def eval_answers(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="JSONL AnswerEvents")],
    policy: PolicyOpt = None,
    fmt: Annotated[str, typer.Option("--format", help="jsonl (verdicts) or table")] = "jsonl",
    idf_stats: IdfStatsOpt = "default",
) -> None:
    """Score answers offline with the agents' code: one verdict per line on stdout,
    dead letters on stderr."""
    from verdictflow.evaluators.policy import load_policy
    from verdictflow.scoring_jobs.eval_answers import evaluate_answers
    from verdictflow.scoring_setup import load_scoring

    scoring = load_scoring(load_policy(policy), idf_stats)
    outputs = list(evaluate_answers(file.read_bytes().splitlines(), scoring, source=str(file)))
    verdicts = [o.verdict for o in outputs if o.verdict is not None]
    for o in outputs:
        if o.dead_letter is not None:
            sys.stderr.write(o.dead_letter.model_dump_json() + "\n")
    if fmt == "table":
        from verdictflow.scoring_jobs.render import verdict_table

        Console().print(verdict_table(verdicts))
    else:
        for v in verdicts:
            sys.stdout.buffer.write(orjson.dumps(v.model_dump(mode="json")) + b"\n")


@app.command("build-idf")
def build_idf(
    corpus: Annotated[
        list[Path] | None, typer.Argument(help="JSONL (one document per line) or text files")
    ] = None,
    out: Annotated[Path, typer.Option(help="Statistics file to write (.json or .json.gz)")] = Path(
        "background_df.json.gz"
    ),
    min_df: Annotated[int, typer.Option(min=1, help="Drop terms in fewer documents")] = 2,
    field: Annotated[str | None, typer.Option(help="JSONL field holding the text")] = None,
    wordfreq: Annotated[
        bool, typer.Option("--wordfreq", help="From wordfreq's English list (the default)")
    ] = False,
) -> None:
    """Build background document frequencies for relevance's TF-IDF."""
    from verdictflow.background import write_stats
    from verdictflow.scoring_jobs.build_idf import build_from_corpus, build_from_wordfreq

    if wordfreq == bool(corpus):
        raise typer.BadParameter("give corpus files or --wordfreq (one of them)")
    stats = (
        build_from_wordfreq()
        if wordfreq
        else build_from_corpus(corpus or [], min_df=min_df, field=field)
    )
    write_stats(stats, out)
    Console(stderr=True).print(
        f"{out}: {stats.n_docs} documents, {len(stats.df)} terms, digest {stats.digest[:16]}"
    )


@eval_app.command("summaries")
def eval_summaries(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="JSONL SummaryEvents")],
    judge: Annotated[
        str | None, typer.Option(help="twin_lock, judge_lock or both (default: each event's)")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="jsonl (verdicts) or table")] = "jsonl",
    policy: PolicyOpt = None,
) -> None:
    """Judge summaries offline with the agent's code (Twin-Lock / Judge-Lock): one verdict per
    line on stdout, dead letters on stderr."""
    from verdictflow.evaluators.policy import load_policy
    from verdictflow.scoring_jobs.eval_summaries import run_cli

    run_cli(file, judge, fmt, err, load_policy(policy).judge)


@app.command()
def calibrate(
    golden: Annotated[
        Path,
        typer.Argument(
            exists=True, dir_okay=False, help="JSONL: events + label (pass/fail) + group?"
        ),
    ],
    kind: Annotated[
        str,
        typer.Option(
            help="groundedness, consistency, relevance, completeness, hallucination, "
            "judge.twin_lock or judge.judge_lock"
        ),
    ],
    cost_fp: Annotated[float, typer.Option(min=0, help="Cost of passing a fail item")] = 1.0,
    cost_fn: Annotated[float, typer.Option(min=0, help="Cost of failing a pass item")] = 1.0,
    max_fpr: Annotated[
        float | None, typer.Option(min=0, max=1, help="FPR budget, met in every group")
    ] = None,
    margin_quantile: Annotated[
        float, typer.Option(min=0, max=1, help="Spread quantile added as margin")
    ] = 0.95,
    policy: PolicyOpt = None,
    out: Annotated[Path, typer.Option(help="Policy file to write")] = Path("policy.yaml"),
    report: Annotated[
        Path | None, typer.Option(help="Directory for ROC/DET plot and table")
    ] = None,
) -> None:
    """Choose a kind's threshold from a labelled golden set; write a policy (and a report)."""
    from verdictflow.evaluators.policy import load_policy
    from verdictflow.scoring_jobs import calibrate as cal
    from verdictflow.scoring_jobs.calibration_report import write_report

    result = cal.calibrate(
        cal.read_golden(golden, kind),
        kind,
        load_policy(policy),
        cost_fp=cost_fp,
        cost_fn=cost_fn,
        max_fpr=max_fpr,
        margin_quantile=margin_quantile,
    )
    out.write_text(cal.policy_yaml(result.policy))
    rec = result.record
    err.print(
        f"{kind}: threshold {rec.threshold:.4f} (raw {rec.raw_threshold:.4f} "
        f"{'-' if rec.direction == 'lower' else '+'} margin {rec.margin:.4f}; "
        f"{'at most' if rec.direction == 'lower' else 'at least'} passes), "
        f"expected TPR {rec.expected_tpr:.4f}, FPR {rec.expected_fpr:.4f}"
        + (f", worst group {rec.worst_group}" if rec.worst_group else "")
        + f"; policy written to {out}"
    )
    if report is not None:
        for path in write_report(result, report):
            err.print(f"report: {path}")


@app.command()
def schemas(
    out: Annotated[Path, typer.Option("--out", help="Output directory")] = Path("schemas"),
) -> None:
    """Write one JSON Schema per topic value, for consumers in other languages."""
    from verdictflow.models.schemas import write_schemas

    for path in write_schemas(out):
        typer.echo(str(path))


@app.command()
def api(
    host: Annotated[str | None, typer.Option(help="Bind address (default 127.0.0.1)")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default 8080)")] = None,
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
    npz: Annotated[
        Path | None, typer.Option(help="Artifact mode: vectors NPZ (doc_ids, concept_texts, ...)")
    ] = None,
    quality: Annotated[
        Path | None, typer.Option(help="Artifact mode: id_quality.jsonl or .npz")
    ] = None,
    index: Annotated[Path | None, typer.Option(help="Artifact mode: FAISS index file")] = None,
    mode: Annotated[
        str | None, typer.Option(help="Default retrieval mode: dense, lexical or hybrid")
    ] = None,
    log_level: Annotated[str, typer.Option(help="debug, info, warning")] = "info",
) -> None:
    """Serve POST /search, GET /healthz and /metrics: topics (--broker) or artifacts (--npz)."""
    from verdictflow.rerank_api.server import serve
    from verdictflow.rerank_api.settings import ApiSettings

    _setup_logging(log_level)
    _exit_on_sigterm()
    if npz is None and (quality is not None or index is not None):
        raise typer.BadParameter("--quality and --index need --npz (artifact mode)")
    if npz is not None and broker is not None:
        raise typer.BadParameter("give either --broker (topic mode) or --npz (artifact mode)")
    given: dict[str, Any] = {"host": host, "port": port, "npz": npz, "quality": quality}
    given.update(index=index, mode=mode)
    overrides = {k: v for k, v in given.items() if v is not None}
    if npz is not None:
        overrides["source"] = "artifacts"
    api_settings = ApiSettings(**overrides)  # type: ignore[arg-type,unused-ignore]
    streams = build_settings(broker=broker, prefix=prefix) if npz is None else None
    serve(api_settings, streams, log_level)


@app.command()
def dev(
    port: Annotated[int | None, typer.Option(help="Broker port (default: a free one)")] = None,
    sample: Annotated[Path | None, typer.Option(help="JSONL answers to replay")] = None,
    policy: PolicyOpt = None,
    exit_after_replay: Annotated[
        bool, typer.Option("--exit-after-replay", help="Exit once every verdict arrived")
    ] = False,
    timeout: Annotated[float, typer.Option(help="Give up waiting after S seconds")] = 120.0,
) -> None:
    """Embedded broker + worker, replay sample traffic, and show verdicts as they arrive."""
    from verdictflow.dev import run_dev

    _setup_logging("warning")
    _exit_on_sigterm()
    raise typer.Exit(
        run_dev(
            port=port,
            sample=sample,
            policy=policy,
            exit_after_replay=exit_after_replay,
            timeout=timeout,
        )
    )


# Document quality (issue 5): the commands live in their modules; these lines only register them.
from verdictflow.scoring_jobs.export_quality import export_quality  # noqa: E402
from verdictflow.scoring_jobs.score_quality import score_quality  # noqa: E402

app.command("score-quality")(score_quality)
app.command("export-quality")(export_quality)
# Operations (issue 9): the reference monitoring consumer and the topic creation plan.
from verdictflow.ops_cli import monitor, topics  # noqa: E402

app.command("monitor")(monitor)
app.command("topics")(topics)

# Retrieval A/B harness (spec 001, issue 7): the command lives in its module.
from verdictflow.scoring_jobs.rq_command import rq_eval_command  # noqa: E402

app.command("rq-eval")(rq_eval_command)

from verdictflow.cli_audit import drift, ledger  # noqa: E402

app.command("ledger")(ledger)
app.command("drift")(drift)


def main() -> None:
    """Entry point: turn expected errors into one clear line and exit code 2."""
    try:
        app()
    except VerdictflowError as exc:
        err.print(f"[red]error:[/] {exc}", soft_wrap=True)  # one line, however long
        sys.exit(2)
