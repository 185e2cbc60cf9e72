"""``verdictflow eval summaries FILE``: the summaries agent's verdicts for a JSONL file.

Lines are judged in batches through the same :func:`judge_records` the agent runs, with the
same spaCy pipeline and policy, so each verdict equals (byte for byte, per verdict_id) what a
worker emits for the file replayed: the judge verdicts, then the faithfulness verdict of each
summary (unless the policy's ``faithfulness.summaries`` is off). Malformed lines become
dead-letter records. ``--judge`` overrides the events' own ``judges`` (without it: the event's
choice, else both judges); it picks judges only, faithfulness is the policy's to switch.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from verdictflow.evaluators.policy import Policy
from verdictflow.evaluators.summary_judges.rubric import METRICS
from verdictflow.evaluators.summary_judges.verdicts import JudgeContext, Parser
from verdictflow.exceptions import VerdictflowError
from verdictflow.input_files import event_records, source_name
from verdictflow.models.codec import DEFAULT_MAX_EVENT_BYTES
from verdictflow.models.verdicts import JudgeVerdict, Verdict, VerdictKind
from verdictflow.pipelines.summaries import MAX_BATCH, judge_records
from verdictflow.scoring_jobs.batch.render import verdict_table
from verdictflow.streams.records import Record, numbered_records
from verdictflow.streams.topics import DEAD_LETTERS

if TYPE_CHECKING:
    from verdictflow.scoring_setup import Scoring


def evaluate_summaries(
    lines: Iterable[bytes],
    parse: Parser,
    ctx: JudgeContext,
    *,
    judges: Sequence[str] | None = None,
    source: str = "file",
    max_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    progress: Callable[[int], None] | None = None,
    faithfulness: Scoring | None = None,
) -> Iterator[tuple[bool, bytes]]:
    """(is_dead_letter, encoded record) for raw JSONL lines, in input order: the exact bytes
    the agent would send to ``verdicts.judge``, ``verdicts.faithfulness`` (with
    ``faithfulness``) or ``dead-letters``."""
    batch: list[Record] = []
    done = 0

    def flush() -> Iterator[tuple[bool, bytes]]:
        for outputs in judge_records(
            batch, parse, ctx, max_bytes=max_bytes, override=judges, faithfulness=faithfulness
        ):
            for topic, _, value in outputs:
                yield topic == DEAD_LETTERS, value

    for record in numbered_records(lines, source):
        batch.append(record)
        if len(batch) == MAX_BATCH:
            yield from flush()
            done += len(batch)
            batch = []
            if progress is not None:
                progress(done)
    if batch:
        yield from flush()
        if progress is not None:
            progress(done + len(batch))


def run_cli(
    file: Path,
    judge: str | None,
    fmt: str,
    err: Console,
    policy: Policy | None = None,
    idf_stats: str | None = "default",
) -> None:
    """The body of ``verdictflow eval summaries`` (kept here so cli.py stays a thin hook):
    the judges under ``policy``'s ``judge`` section and, unless it switches it off,
    faithfulness under its scoring context (``idf_stats`` only enters its config digest, as
    in the worker)."""
    from verdictflow.evaluators.summary_judges.verdicts import ALL_JUDGES
    from verdictflow.pipelines.summaries import spacy_parser
    from verdictflow.scoring_setup import load_scoring

    choices: dict[str, list[str]] = {"both": list(ALL_JUDGES), **{j: [j] for j in ALL_JUDGES}}
    if judge is not None and judge not in choices:
        raise VerdictflowError(f"--judge must be one of {', '.join(choices)}, not {judge!r}")
    if fmt not in ("jsonl", "table"):
        raise VerdictflowError(f"--format must be jsonl or table, not {fmt!r}")
    policy = policy or Policy()
    lines = event_records(file)
    parse, version = spacy_parser()
    ctx = JudgeContext(policy.judge, version, policy.budget)
    scoring = load_scoring(policy, idf_stats) if policy.faithfulness.summaries else None
    judged: list[JudgeVerdict] = []
    others: list[Verdict] = []
    # off a terminal rich still ends a live display with a newline: a blank line among the
    # dead letters (JSON lines) on stderr
    with Progress(console=err, transient=True, disable=not err.is_terminal) as bar:
        task = bar.add_task(f"judging {source_name(file)}", total=len(lines))
        for dead, value in evaluate_summaries(
            lines,
            parse,
            ctx,
            judges=choices[judge] if judge else None,
            source=source_name(file),
            progress=lambda n: bar.update(task, completed=n),
            faithfulness=scoring,
        ):
            if dead:
                sys.stderr.buffer.write(value + b"\n")
            elif fmt == "jsonl":
                sys.stdout.buffer.write(value + b"\n")
            elif orjson.loads(value)["kind"] == VerdictKind.JUDGE:
                judged.append(JudgeVerdict.model_validate_json(value))
            else:
                others.append(Verdict.model_validate_json(value))
    if fmt == "table":
        Console().print(judge_table(judged))
        if others:
            Console().print(verdict_table(others, title="faithfulness verdicts"))


def judge_table(verdicts: Sequence[JudgeVerdict]) -> Table:
    table = Table(title="judge verdicts")
    for col in ("input_id", "judge", *METRICS, "score", "decision"):
        table.add_column(col, overflow="fold")
    for v in verdicts:
        cells = [
            "err" if "error" in v.metrics[m] else f"{v.metrics[m]['overall_score']:.2f}"
            for m in METRICS
        ]
        score = "-" if v.score is None else f"{v.score:.2f}"
        table.add_row(v.input_id, v.judge, *cells, score, v.decision.value)
    return table
