"""The ``console`` command: the operator web page over the verdict topics (docs/console.md)."""

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


def console(
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
    host: Annotated[str, typer.Option(help="Bind address")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (0: a free one)")] = 8090,
    from_beginning: Annotated[
        bool, typer.Option("--from-beginning", help="Read the topics from their start")
    ] = False,
    api_url: Annotated[
        str | None,
        typer.Option(help="The /search API's base URL, for the page's search box"),
    ] = None,
    otlp_endpoint: Annotated[
        str | None,
        typer.Option(
            help="Also send each verdict as an OpenTelemetry gen_ai.evaluation.result event "
            "to this OTLP/HTTP endpoint (e.g. http://127.0.0.1:4318)"
        ),
    ] = None,
    policy: PolicyOpt = None,
    insecure: InsecureOpt = False,
    log_level: Annotated[str, typer.Option(help="debug, info, warning")] = "info",
) -> None:
    """Serve the live operator page: verdict rates and scores per kind, failing answers with
    their unsupported spans, drift alerts, dead letters and document quality."""

    import uvicorn

    from verdictflow.console.app import ConsoleOptions, create_console_app
    from verdictflow.web.listeners import check_bind, host_checked, listening_socket

    setup_logging(log_level, libraries="warning")
    exit_on_sigterm()
    settings = build_settings(broker=broker, prefix=prefix)
    users = None
    if settings.console_users is not None:
        from verdictflow.console.users import UsersFileError, load_users

        try:
            users = load_users(settings.console_users)
        except UsersFileError as exc:
            raise typer.BadParameter(str(exc)) from None
    check_bind(
        "console",
        host,
        token=settings.console_secret or ("users file" if users else None),
        insecure=insecure,
        token_env="VERDICTFLOW_CONSOLE_TOKEN (or VERDICTFLOW_API_TOKEN)",
    )
    exporter = None
    if otlp_endpoint:
        from verdictflow.monitoring.otlp import VerdictOtlpExporter

        exporter = VerdictOtlpExporter(otlp_endpoint, service_name="verdictflow-console")
    from verdictflow.evaluators.policy import load_policy
    from verdictflow.evaluators.review_policy import ReviewPolicy

    budget = None
    review = ReviewPolicy()
    if policy is not None:
        loaded = load_policy(policy)
        budget = loaded.judge_tier.budget.model_dump()
        review = loaded.review
    options = ConsoleOptions(
        from_beginning=from_beginning,
        api_url=api_url,
        api_token=settings.api_token.get_secret_value() or None if settings.api_token else None,
        token=settings.console_secret,
        on_verdict=exporter.export if exporter is not None else None,
        judge_budget=budget,
        session_seconds=settings.console_session_seconds,
        secure_cookie=settings.console_secure_cookie,
        users=users,
        review=review,
    )
    app = create_console_app(settings, options)
    try:
        sock = listening_socket(host, port)
    except OSError as exc:
        raise typer.BadParameter(f"cannot listen on {host}:{port}: {exc}") from None
    bound = sock.getsockname()[1]
    login = " (log in with the console token)" if settings.console_secret else ""
    if users is not None:
        login = f" ({len(users)} named users; review queue at /review)"
    err.print(f"console [bold]http://{host}:{bound}/[/]{login} following {settings.broker}")
    config = uvicorn.Config(
        host_checked(app, host),
        log_level=log_level,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=3,
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        if exporter is not None:
            exporter.shutdown()
