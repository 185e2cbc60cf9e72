"""The ``ingest`` command: OTLP/HTTP traces and answer events in, over HTTP
(docs/getting-traffic-in.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from verdictflow.cli.options import (
    BrokerOpt,
    InsecureOpt,
    PolicyOpt,
    PrefixOpt,
    build_settings,
    err,
    exit_on_sigterm,
    setup_logging,
)


def ingest(
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
    host: Annotated[str, typer.Option(help="Bind address")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (4318: OTLP/HTTP's own; 0: a free one)")] = 4318,
    max_body_bytes: Annotated[
        int, typer.Option(min=1024, help="Largest request body, decompressed")
    ] = 16 * 1024 * 1024,
    insecure: InsecureOpt = False,
    policy: PolicyOpt = None,
    idf_stats: Annotated[
        str | None, typer.Option("--idf-stats", help="build-idf file, default or none")
    ] = None,
    log_level: Annotated[str, typer.Option(help="debug, info, warning")] = "info",
) -> None:
    """Receive OTLP/HTTP traces (POST /v1/traces, protobuf or JSON, gzip) and answer events
    (POST /v1/answers: a JSON object, an array or NDJSON), and produce them to the topics the
    workers read: traces become answer events once assembled (worker, lexical tier). POST
    /v1/check is the inline gate: one answer event's verdicts in the reply, scored with
    --policy and --idf-stats (give the workers' own, so the verdicts are the stream's)."""

    import uvicorn

    from verdictflow.ingest.app import create_ingest_app
    from verdictflow.web.listeners import check_bind, host_checked, listening_socket

    setup_logging(log_level, libraries="warning")
    exit_on_sigterm()
    settings = build_settings(broker=broker, prefix=prefix, policy=policy, idf_stats=idf_stats)
    token = settings.ingest_secret
    check_bind(
        "ingest",
        host,
        token=token,
        insecure=insecure,
        token_env="VERDICTFLOW_INGEST_TOKEN (or VERDICTFLOW_API_TOKEN)",
    )
    app = create_ingest_app(settings, token=token, max_body_bytes=max_body_bytes, tune_gc=True)
    try:
        sock = listening_socket(host, port)
    except OSError as exc:
        raise typer.BadParameter(f"cannot listen on {host}:{port}: {exc}") from None
    bound = sock.getsockname()[1]
    err.print(
        f"ingest [bold]http://{host}:{bound}[/] (OTLP/HTTP /v1/traces, /v1/answers, /v1/check) "
        f"producing to {settings.broker}"
    )
    config = uvicorn.Config(
        host_checked(app, host),
        log_level=log_level,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
    )
    uvicorn.Server(config).run(sockets=[sock])
