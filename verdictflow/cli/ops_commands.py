"""Operations commands: ``monitor`` (the reference monitoring consumer) and ``topics`` (the
topic creation plan)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from typing import Annotated

import typer

from verdictflow.cli.options import (
    BrokerOpt,
    InsecureOpt,
    PrefixOpt,
    build_settings,
    err,
    exit_on_sigterm,
    setup_logging,
)
from verdictflow.monitoring.verdict_monitor import VerdictMonitor, run_monitor
from verdictflow.streams.topic_plan import create_topics, topic_plan
from verdictflow.web.listeners import check_bind


def monitor(
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
    port: Annotated[int, typer.Option(help="Serve Prometheus /metrics on this port")] = 9109,
    host: Annotated[
        str,
        typer.Option(
            help="Bind address of /metrics (beyond loopback it needs $VERDICTFLOW_METRICS_TOKEN "
            "or --insecure)"
        ),
    ] = "127.0.0.1",
    insecure: InsecureOpt = False,
    from_beginning: Annotated[
        bool, typer.Option("--from-beginning", help="Count the topics' history too")
    ] = False,
    max_label_values: Annotated[
        int, typer.Option(min=1, help="Distinct model / tenant labels before 'other'")
    ] = 50,
) -> None:
    """Consume the verdict topics and expose pass/fail/defer rates and score histograms per
    kind, model and tenant as Prometheus metrics (the reference monitoring consumer)."""
    setup_logging("info")
    exit_on_sigterm()
    settings = build_settings(broker=broker, prefix=prefix)
    token = settings.metrics_secret
    check_bind(
        "monitor", host, token=token, insecure=insecure, token_env="VERDICTFLOW_METRICS_TOKEN"
    )
    metrics = VerdictMonitor(settings.topic_prefix, max_label_values=max_label_values)
    try:
        metrics.serve(port, host, token)
    except OSError as exc:
        raise typer.BadParameter(f"cannot listen on {host}:{port}: {exc}") from None
    err.print(f"monitor: http://{host}:{port}/metrics (verdict topics on {settings.broker})")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run_monitor(settings, metrics, from_beginning=from_beginning))


def topics(
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
    partitions: Annotated[int | None, typer.Option(help="Partitions (default 4)")] = None,
    replication: Annotated[int | None, typer.Option(help="Replication factor (default 1)")] = None,
    verdict_days: Annotated[int, typer.Option(min=1, help="Retention of verdict topics")] = 30,
    create: Annotated[bool, typer.Option("--create", help="Create the missing topics")] = False,
) -> None:
    """Print the topic plan (partitions, replication, cleanup, retention) as JSON lines;
    with --create, create the missing topics with it."""
    settings = build_settings(
        broker=broker, prefix=prefix, partitions=partitions, replication_factor=replication
    )
    plan = topic_plan(settings, verdict_days=verdict_days)
    for spec in plan:
        typer.echo(json.dumps(dataclasses.asdict(spec), sort_keys=True))
    if create:
        created, existing = asyncio.run(create_topics(plan, settings))
        err.print(
            f"created {len(created)} topics, {len(existing)} already existed (left unchanged)"
        )
