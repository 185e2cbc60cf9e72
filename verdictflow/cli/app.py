"""The ``verdictflow`` command: one typer app, every command registered here by name.

Commands live in small modules by what they touch (stream, offline, API, operations, audit,
document quality, retrieval A/B); this module only assembles them. No module imports the
command line from below it (``tests/test_imports.py`` imports each module alone).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import typer
from pydantic import ValidationError

from verdictflow.cli import (
    api_command,
    audit_commands,
    console_command,
    ingest_command,
    offline_commands,
    ops_commands,
    review_commands,
)
from verdictflow.cli import stream_commands as stream
from verdictflow.cli.options import err
from verdictflow.exceptions import VerdictflowError
from verdictflow.scoring_jobs.batch.export_quality import export_quality
from verdictflow.scoring_jobs.batch.score_quality import score_quality
from verdictflow.scoring_jobs.retrieval_eval.command import rq_eval_command

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="The verdictflow command. Settings are built here, once, and passed down.",
)
eval_app = typer.Typer(no_args_is_help=True, help="Score events from a file, without a broker.")
app.add_typer(eval_app, name="eval")
app.add_typer(review_commands.users_app, name="users")
app.add_typer(review_commands.labels_app, name="labels")

COMMANDS: list[tuple[str, Callable[..., Any]]] = [
    ("broker", stream.broker),
    ("worker", stream.worker),
    ("migrate-tables", stream.migrate_tables),
    ("replay", stream.replay),
    ("tail", stream.tail),
    ("build-idf", offline_commands.build_idf),
    ("calibrate", offline_commands.calibrate),
    ("train-faithfulness", offline_commands.train_faithfulness),
    ("train-checker", offline_commands.train_checker),
    ("schemas", offline_commands.schemas),
    ("index-contexts", offline_commands.index_contexts),
    ("api", api_command.api),
    ("dev", stream.dev),
    ("score-quality", score_quality),
    ("export-quality", export_quality),
    ("monitor", ops_commands.monitor),
    ("console", console_command.console),
    ("ingest", ingest_command.ingest),
    ("topics", ops_commands.topics),
    ("rq-eval", rq_eval_command),
    ("ledger", audit_commands.ledger),
    ("drift", audit_commands.drift),
    ("notify", audit_commands.notify),
]
for _name, _command in COMMANDS:
    app.command(_name)(_command)
eval_app.command("answers")(offline_commands.eval_answers)
eval_app.command("summaries")(offline_commands.eval_summaries)


def main() -> None:
    """Entry point: turn expected errors into one clear line and exit code 2."""
    try:
        app()
    except VerdictflowError as exc:
        err.print(f"[red]error:[/] {exc}", soft_wrap=True)  # one line, however long
        sys.exit(2)
    except ValidationError as exc:  # a setting from a flag or the environment is invalid
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or exc.title
        err.print(f"[red]error:[/] {where}: {first['msg']}", soft_wrap=True)
        sys.exit(2)
