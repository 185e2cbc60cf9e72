"""Operations commands, registered in :mod:`verdictflow.cli`: ``monitor`` and ``topics``."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import signal
import sys
from typing import Annotated, Any

import typer
from rich.console import Console

from verdictflow.monitoring.verdict_monitor import VerdictMonitor, run_monitor
from verdictflow.streams.settings import Settings
from verdictflow.streams.topic_plan import create_topics, topic_plan


def monitor(
    broker: Annotated[str | None, typer.Option("--broker", help="kafka://host:port")] = None,
    prefix: Annotated[str | None, typer.Option("--prefix", help="Topic prefix")] = None,
    port: Annotated[int, typer.Option(help="Serve Prometheus /metrics on this port")] = 9109,
    host: Annotated[str, typer.Option(help="Bind address of /metrics")] = "0.0.0.0",
    from_beginning: Annotated[
        bool, typer.Option("--from-beginning", help="Count the topics' history too")
    ] = False,
    max_label_values: Annotated[
        int, typer.Option(min=1, help="Distinct model / tenant labels before 'other'")
    ] = 50,
) -> None:
    """Consume the verdict topics and expose pass/fail/defer rates and score histograms per
    kind, model and tenant as Prometheus metrics (the reference monitoring consumer)."""
    logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    settings = _settings(broker=broker, topic_prefix=prefix)
    metrics = VerdictMonitor(settings.topic_prefix, max_label_values=max_label_values)
    metrics.serve(port, host)
    Console(stderr=True).print(
        f"monitor: http://{host}:{port}/metrics (verdict topics on {settings.broker})"
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run_monitor(settings, metrics, from_beginning=from_beginning))


def topics(
    broker: Annotated[str | None, typer.Option("--broker", help="kafka://host:port")] = None,
    prefix: Annotated[str | None, typer.Option("--prefix", help="Topic prefix")] = None,
    partitions: Annotated[int | None, typer.Option(help="Partitions (default 4)")] = None,
    replication: Annotated[int | None, typer.Option(help="Replication factor (default 1)")] = None,
    verdict_days: Annotated[int, typer.Option(min=1, help="Retention of verdict topics")] = 30,
    create: Annotated[bool, typer.Option("--create", help="Create the missing topics")] = False,
) -> None:
    """Print the topic plan (partitions, replication, cleanup, retention) as JSON lines;
    with --create, create the missing topics with it."""
    settings = _settings(
        broker=broker, topic_prefix=prefix, partitions=partitions, replication_factor=replication
    )
    plan = topic_plan(settings, verdict_days=verdict_days)
    for spec in plan:
        typer.echo(json.dumps(dataclasses.asdict(spec), sort_keys=True))
    if create:
        created, existing = asyncio.run(create_topics(plan, settings))
        Console(stderr=True).print(
            f"created {len(created)} topics, {len(existing)} already existed (left unchanged)"
        )


def _settings(**given: Any) -> Settings:
    return Settings(**{k: v for k, v in given.items() if v is not None})
