"""The ``verdictflow monitor`` command (registered in :mod:`verdictflow.cli`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from typing import Annotated, Any

import typer
from rich.console import Console

from verdictflow.monitoring.verdict_monitor import VerdictMonitor, run_monitor
from verdictflow.streams.settings import Settings


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
    given: dict[str, Any] = {"broker": broker, "topic_prefix": prefix}
    settings = Settings(**{k: v for k, v in given.items() if v is not None})
    metrics = VerdictMonitor(settings.topic_prefix, max_label_values=max_label_values)
    metrics.serve(port, host)
    Console(stderr=True).print(
        f"monitor: http://{host}:{port}/metrics (verdict topics on {settings.broker})"
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run_monitor(settings, metrics, from_beginning=from_beginning))
