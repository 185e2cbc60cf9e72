"""The audit commands: ``verdictflow ledger`` and ``verdictflow drift``."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated

import typer

from verdictflow.cli.options import BrokerOpt, PrefixOpt, build_settings, err, setup_logging

TimeoutOpt = Annotated[
    float | None, typer.Option(help="Stop after S idle seconds (default: run until Ctrl-C)")
]


def ledger(
    out: Annotated[Path, typer.Option("--out", help="Ledger root directory")] = Path("ledger"),
    topic: Annotated[
        list[str] | None, typer.Option("--topic", help="Verdict topics (default: all)")
    ] = None,
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
    timeout: TimeoutOpt = None,
) -> None:
    """Append verdict topics to OUT/<day>/<kind>.jsonl (day = the verdict's event time, UTC),
    each verdict_id once."""
    from verdictflow.monitoring.ledger import run_ledger
    from verdictflow.streams.topics import VERDICT_TOPICS

    settings = build_settings(broker=broker, prefix=prefix)
    setup_logging("info", libraries="warning")  # alerts, skipped records; not the client
    result = asyncio.run(run_ledger(settings, out, topic or VERDICT_TOPICS, timeout=timeout))
    err.print(
        f"ledger {out}: {result.written} verdicts written, {result.duplicates} already there, "
        f"{result.skipped} records skipped, {result.bad_times} filed undated for an unusable "
        "event_ts"
    )


def drift(
    policy: Annotated[
        Path, typer.Option("--policy", help="Calibrated policy (its calibration records)")
    ],
    window: Annotated[int, typer.Option(min=10, help="Verdicts per window and key")] = 200,
    enter_psi: Annotated[float, typer.Option(min=0, help="PSI that enters drift")] = 0.25,
    exit_psi: Annotated[float, typer.Option(min=0, help="PSI below which drift ends")] = 0.10,
    from_beginning: Annotated[bool, typer.Option("--from-beginning")] = False,
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
    timeout: TimeoutOpt = None,
) -> None:
    """Watch verdict scores per kind/model/tenant against the calibration distribution; emit one
    alert to `alerts` (and stdout) when a key drifts."""
    from verdictflow.evaluators.policy import load_policy
    from verdictflow.models.alerts import DriftAlert
    from verdictflow.models.codec import encode
    from verdictflow.monitoring.drift_alerts import run_drift

    settings = build_settings(broker=broker, prefix=prefix)
    setup_logging("info", libraries="warning")  # alerts, skipped records; not the client

    def show(alert: DriftAlert) -> None:
        sys.stdout.buffer.write(encode(alert) + b"\n")
        sys.stdout.flush()

    watcher = asyncio.run(
        run_drift(
            settings,
            load_policy(policy),
            window=window,
            enter_psi=enter_psi,
            exit_psi=exit_psi,
            from_beginning=from_beginning,
            timeout=timeout,
            on_alert=show,
        )
    )
    err.print(f"drift: {watcher.seen} verdicts watched, {watcher.skipped} records skipped")


def notify(
    from_beginning: Annotated[
        bool,
        typer.Option(
            "--from-beginning",
            help="On this group's first start, deliver the alerts already on the topic too",
        ),
    ] = False,
    attempts: Annotated[int, typer.Option(min=1, max=20, help="Tries per webhook")] = 5,
    max_wait: Annotated[
        float, typer.Option(min=0.1, help="Longest wait between tries, seconds")
    ] = 30.0,
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
    timeout: TimeoutOpt = None,
) -> None:
    """Post every alert on `alerts` to the webhooks of $VERDICTFLOW_ALERT_WEBHOOKS (json or
    Slack's shape), once per alert and webhook, with retries; dead-letter what fails."""
    from verdictflow.monitoring.alert_messages import WebhookConfigError, parse_webhooks
    from verdictflow.monitoring.alert_webhooks import RetryPolicy, run_notifier

    settings = build_settings(broker=broker, prefix=prefix)
    setup_logging("info", libraries="warning")
    if settings.alert_webhooks is None:
        err.print("[red]notify:[/] set VERDICTFLOW_ALERT_WEBHOOKS (e.g. slack=https://...)")
        raise typer.Exit(2)
    try:
        hooks = parse_webhooks(settings.alert_webhooks.get_secret_value())
    except WebhookConfigError as exc:
        err.print(f"[red]notify:[/] {exc}")
        raise typer.Exit(2) from None
    token = settings.alert_webhook_token
    stats = asyncio.run(
        run_notifier(
            settings,
            hooks,
            policy=RetryPolicy(attempts=attempts, max_wait=max_wait),
            token=token.get_secret_value() if token else None,
            from_beginning=from_beginning,
            idle_timeout=timeout,
        )
    )
    err.print(
        f"notify: {stats.delivered} delivered, {stats.dead_lettered} dead-lettered, "
        f"{stats.already_settled} already settled, {stats.invalid} not alerts"
    )
