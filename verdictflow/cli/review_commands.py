"""The review loop's commands (docs/review-loop.md): ``users`` (who may label) and
``labels export`` (people's labels as a data set for ``calibrate --labels``)."""

from __future__ import annotations

import asyncio
import os
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from verdictflow.cli.options import BrokerOpt, PrefixOpt, build_settings, err

users_app = typer.Typer(
    no_args_is_help=True,
    help="Named console users and their roles (viewer, reviewer, admin), with hashed tokens.",
)
labels_app = typer.Typer(no_args_is_help=True, help="People's labels on verdicts.")

UsersFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--file",
        help="The users file (default: $VERDICTFLOW_CONSOLE_USERS, else console-users.yaml)",
    ),
]


def _users_file(given: Path | None) -> Path:
    return given or Path(os.environ.get("VERDICTFLOW_CONSOLE_USERS") or "console-users.yaml")


@users_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="The user's name, as labels will show it")],
    role: Annotated[str, typer.Option(help="viewer, reviewer or admin")] = "reviewer",
    file: UsersFileOpt = None,
) -> None:
    """Add a user (or give one a new token): prints the token once; the file keeps its hash."""
    from verdictflow.console.users import ROLES, UsersFileError, add_user

    if role not in ROLES:
        raise typer.BadParameter(f"role must be one of {', '.join(ROLES)}")
    path = _users_file(file)
    try:
        token = add_user(path, name, role)  # type: ignore[arg-type]
    except UsersFileError as exc:
        raise typer.BadParameter(str(exc)) from None
    err.print(f"{name} ({role}) in {path}; their token (shown once, give it to them):")
    typer.echo(token)


@users_app.command("remove")
def remove(name: str, file: UsersFileOpt = None) -> None:
    """Remove a user: their token and sessions stop working at the console's next start."""
    from verdictflow.console.users import UsersFileError, remove_user

    path = _users_file(file)
    try:
        removed = remove_user(path, name)
    except UsersFileError as exc:
        raise typer.BadParameter(str(exc)) from None
    if not removed:
        raise typer.BadParameter(f"{path} has no user {name!r}")
    err.print(f"removed {name} from {path}")


@users_app.command("list")
def list_users(file: UsersFileOpt = None) -> None:
    """Names and roles (never tokens)."""
    from verdictflow.console.users import UsersFileError, load_users

    try:
        users = load_users(_users_file(file))
    except UsersFileError as exc:
        raise typer.BadParameter(str(exc)) from None
    for user in sorted(users.by_name.values(), key=lambda u: u.name):
        typer.echo(f"{user.name}\t{user.role}")


def _time(value: str | None, flag: str) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise typer.BadParameter(f"{flag}: Unix seconds or an ISO-8601 time") from None
    if moment.tzinfo is None:
        from datetime import UTC

        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


@labels_app.command("export")
def export(
    out: Annotated[Path, typer.Argument(dir_okay=False, help="JSONL file to write")],
    kind: Annotated[list[str] | None, typer.Option(help="Only this kind (repeatable)")] = None,
    tenant: Annotated[list[str] | None, typer.Option(help="Only this tenant (repeatable)")] = None,
    since: Annotated[
        str | None, typer.Option(help="Labels given at or after (Unix seconds or ISO-8601)")
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="Labels given before (Unix seconds or ISO-8601)")
    ] = None,
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
) -> None:
    """Write people's labels with the texts and verdicts they were given on (one row per
    verdict and every reviewer's latest label on it): the input of calibrate --labels."""
    from verdictflow.job_outputs import Outputs, check_outputs
    from verdictflow.scoring_jobs.calibration.labelled import (
        ExportFilter,
        dump_items,
        labelled_items,
    )
    from verdictflow.streams.topic_reader import read_whole_topic
    from verdictflow.streams.topics import LABELS, REVIEW_QUEUE

    check_outputs([out], [])
    settings = build_settings(broker=broker, prefix=prefix)
    keep = ExportFilter(
        kinds=frozenset(kind) if kind else None,
        tenants=frozenset(tenant) if tenant else None,
        since=_time(since, "--since"),
        until=_time(until, "--until"),
    )

    async def read() -> tuple[list[bytes], list[bytes]]:
        entries = await read_whole_topic(settings, settings.topic_prefix + REVIEW_QUEUE)
        labels = await read_whole_topic(settings, settings.topic_prefix + LABELS)
        return [v for _, _, v in entries if v], [v for _, _, v in labels if v]

    import orjson

    entries, labels = asyncio.run(read())
    rows, orphans = labelled_items(
        (orjson.loads(v) for v in entries), (orjson.loads(v) for v in labels), keep
    )
    outputs = Outputs()
    outputs.add(out, dump_items(rows))
    outputs.commit()
    reviewers = {x.reviewer for row in rows for x in row.labels}
    err.print(
        f"{out}: {len(rows)} labelled verdicts, {sum(len(r.labels) for r in rows)} labels by "
        f"{len(reviewers)} reviewers"
        + (f"; {orphans} labels without a queue entry left out" if orphans else "")
    )
