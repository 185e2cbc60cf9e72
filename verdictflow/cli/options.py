"""What every ``verdictflow`` command shares: options, the settings builder, logging.

Settings are built here, once, from the environment and the options actually given, and passed
down; nothing below the CLI reads the environment for them.
"""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from verdictflow.settings import Settings

#: stderr console for progress and one-line errors (stdout carries data).
err = Console(stderr=True)

BrokerOpt = Annotated[
    str | None,
    typer.Option(
        "--broker",
        help="kafka://host:port (default: $VERDICTFLOW_BROKER or kafka://127.0.0.1:9092)",
    ),
]
PrefixOpt = Annotated[str | None, typer.Option("--prefix", help="Topic prefix (default vf.)")]
InsecureOpt = Annotated[
    bool,
    typer.Option(
        "--insecure",
        help="Allow listening beyond loopback without a token (default: refused, exit 2)",
    ),
]
PolicyOpt = Annotated[Path | None, typer.Option("--policy", help="Policy YAML (thresholds).")]
IdfStatsOpt = Annotated[
    str,
    typer.Option(
        "--idf-stats", help="Relevance background statistics: a build-idf file, default or none"
    ),
]


def events_file(value: Path) -> Path:
    """An events file argument: an existing file, or "-" for standard input. (typer 0.29
    turns the argument into a ``Path`` before its ``allow_dash`` test, so "-" never passes
    ``exists=True``; this checks it instead.)"""
    if str(value) != "-" and not value.is_file():
        raise typer.BadParameter(f"file {str(value)!r} does not exist.")
    return value


def EventsFile(what: str) -> Any:  # noqa: N802 - reads as the type it makes
    """The ``FILE`` argument of a command that reads events: a file or "-"."""
    return typer.Argument(
        dir_okay=False,
        callback=events_file,
        help=f"JSONL {what}, or a JSON array of them; - reads standard input",
    )


def build_settings(**overrides: Any) -> Settings:
    """Settings from the environment, overridden by the options actually given."""
    given = {k: v for k, v in overrides.items() if v is not None}
    if "prefix" in given:
        given["topic_prefix"] = given.pop("prefix")
    return Settings(**given)


def exit_on_sigterm() -> None:
    """Make SIGTERM unwind like Ctrl-C, so ``finally`` blocks stop child processes."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def setup_logging(level: str = "info", *, libraries: str | None = None) -> None:
    """One log format for every command, on stderr: verdictflow's own messages at ``level``,
    other libraries' (the Kafka client's) at ``libraries`` when given, else at ``level``."""
    logging.basicConfig(
        level=(libraries or level).upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("verdictflow").setLevel(level.upper())
