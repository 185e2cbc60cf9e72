"""Commands around the stream: the embedded broker, a worker, replay, tail, table migration,
and ``dev``, which runs them together on sample traffic."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.progress import Progress

from verdictflow.cli.options import (
    BrokerOpt,
    EventsFile,
    InsecureOpt,
    PolicyOpt,
    PrefixOpt,
    build_settings,
    err,
    exit_on_sigterm,
    setup_logging,
)
from verdictflow.input_files import source_name


def broker(port: Annotated[int, typer.Option(help="Port on 127.0.0.1")] = 9092) -> None:
    """Run the embedded Kafka-protocol broker (Tansu) in the foreground."""
    from verdictflow.streams.broker import EmbeddedBroker

    setup_logging()
    exit_on_sigterm()
    embedded = EmbeddedBroker(port=port).start()
    err.print(f"embedded broker ready at [bold]{embedded.url}[/] (memory storage; Ctrl-C stops)")
    try:
        embedded.wait()
    except KeyboardInterrupt:
        pass
    finally:
        embedded.stop()


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
    metrics_host: Annotated[
        str | None,
        typer.Option(
            help="Bind address of /metrics (default 127.0.0.1; beyond loopback it needs "
            "$VERDICTFLOW_METRICS_TOKEN or --insecure)"
        ),
    ] = None,
    insecure: InsecureOpt = False,
    tier: Annotated[
        str | None,
        typer.Option(
            help="lexical (groundedness, relevance, completeness, consistency, summaries, "
            "document quality), nlp (hallucination, faithfulness) or all; each tier is its own "
            "consumer group"
        ),
    ] = None,
    otlp_endpoint: Annotated[
        str | None,
        typer.Option(
            help="Also send every verdict as an OpenTelemetry gen_ai.evaluation.result event "
            "to this OTLP/HTTP collector (http://host:4318); default $VERDICTFLOW_OTLP_ENDPOINT, "
            "off when unset"
        ),
    ] = None,
) -> None:
    """Run a Faust worker. Lexical tier (consumer group APP_ID): groundedness, relevance,
    completeness, the consistency agent, the summaries agent (judge verdicts, and faithfulness
    of each summary to its article) and the document-quality agents. NLP tier (group
    APP_ID-nlp): hallucination, faithfulness."""
    from verdictflow.agents.worker_app import run_worker
    from verdictflow.web.listeners import check_bind

    setup_logging(log_level)
    settings = build_settings(
        broker=broker,
        prefix=prefix,
        policy=policy,
        app_id=app_id,
        log_level=log_level,
        idf_stats=idf_stats,
        metrics_port=metrics_port,
        metrics_host=metrics_host,
        tier=tier,
        otlp_endpoint=otlp_endpoint,
    )
    if settings.metrics_port:
        check_bind(
            "worker /metrics",
            settings.metrics_host,
            token=settings.metrics_secret,
            insecure=insecure,
            token_env="VERDICTFLOW_METRICS_TOKEN",
        )
    run_worker(settings)


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


def replay(
    file: Annotated[Path, EventsFile("events")],
    topic: Annotated[str, typer.Option(help="Topic, short (answers) or full name")] = "answers",
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
) -> None:
    """Produce each line of a JSONL file (each item of a JSON array) to a topic, as is
    (malformed lines included). A line over 1 MiB, or one the broker refuses as too large, is
    reported and skipped, and the lines after it are sent; the exit code is then 1."""
    from verdictflow.streams.replay import read_lines
    from verdictflow.streams.replay import replay as do_replay

    settings = build_settings(broker=broker, prefix=prefix)
    lines = read_lines(file)
    with Progress(console=err, transient=True) as progress:
        task = progress.add_task(f"replaying {source_name(file)}", total=len(lines))
        result = asyncio.run(
            do_replay(lines, topic, settings, lambda n: progress.update(task, completed=n))
        )
    target = settings.topic_prefix + topic.removeprefix(settings.topic_prefix)
    err.print(f"sent {result.sent} records to {target}")
    if result.refused:
        for line_no, size, why in result.refused[:20]:
            err.print(f"[red]refused[/] line {line_no} ({size:,} bytes): {why}", soft_wrap=True)
        err.print(f"{len(result.refused)} of {len(lines)} lines refused")
        raise typer.Exit(1)


def tail(
    topic: Annotated[list[str], typer.Argument(help="Topics (short or full names)")],
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
    from_beginning: Annotated[bool, typer.Option("--from-beginning")] = False,
    count: Annotated[int | None, typer.Option(help="Stop after N records")] = None,
    timeout: Annotated[float | None, typer.Option(help="Stop after S idle seconds")] = None,
) -> None:
    """Print topic values as JSON lines (what a monitoring consumer sees)."""
    from verdictflow.streams.tail import tail as do_tail

    settings = build_settings(broker=broker, prefix=prefix)

    async def run() -> None:
        async for _, value in do_tail(
            topic, settings, from_beginning=from_beginning, count=count, timeout=timeout
        ):
            sys.stdout.buffer.write(value + b"\n")
            sys.stdout.flush()

    asyncio.run(run())


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

    setup_logging("warning")
    exit_on_sigterm()
    raise typer.Exit(
        run_dev(
            port=port,
            sample=sample,
            policy=policy,
            exit_after_replay=exit_after_replay,
            timeout=timeout,
        )
    )
