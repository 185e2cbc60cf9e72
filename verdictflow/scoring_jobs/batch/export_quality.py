"""``verdictflow export-quality``: the live ``doc-quality`` topic as the batch tool's two files.

Reads the topic from the beginning without a consumer group, keeps each document's row with
the highest ``version`` (the per-document revision the agents increment on every change),
drops documents whose latest row retires them (``deleted``), and writes ``id_quality.jsonl`` /
``.npz`` in doc_id order with the same writer as ``score-quality``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from verdictflow.models.codec import decode
from verdictflow.models.quality import DocQuality
from verdictflow.scoring_jobs.batch.score_quality import write_outputs
from verdictflow.settings import Settings
from verdictflow.streams.tail import tail
from verdictflow.streams.topics import DOC_QUALITY

err = Console(stderr=True, soft_wrap=True)  # one line per message, paths unbroken


def latest_rows(rows: list[DocQuality]) -> list[DocQuality]:
    """The current row of every live document, sorted by doc_id."""
    latest: dict[str, DocQuality] = {}
    for row in rows:
        seen = latest.get(row.doc_id)
        if seen is None or row.version >= seen.version:
            latest[row.doc_id] = row
    return [latest[d] for d in sorted(latest) if not latest[d].deleted]


async def read_quality_rows(settings: Settings, idle_seconds: float) -> list[DocQuality]:
    """Every row on the topic, until it has been idle for ``idle_seconds``."""
    rows = []
    async for _, value in tail([DOC_QUALITY], settings, from_beginning=True, timeout=idle_seconds):
        rows.append(decode(value, DocQuality))
    return rows


def export_quality(
    out_jsonl: Annotated[Path, typer.Option("--out-jsonl")] = Path("artifacts/id_quality.jsonl"),
    out_npz: Annotated[Path, typer.Option("--out-npz")] = Path("artifacts/id_quality.npz"),
    broker: Annotated[str | None, typer.Option("--broker", help="kafka://host:port")] = None,
    prefix: Annotated[str | None, typer.Option("--prefix", help="Topic prefix")] = None,
    idle: Annotated[float, typer.Option("--idle", help="Stop after S idle seconds")] = 5.0,
) -> None:
    """Write id_quality.jsonl/.npz from the live doc-quality topic (latest row per document)."""
    given: dict[str, Any] = {"broker": broker, "topic_prefix": prefix}
    settings = Settings(**{k: v for k, v in given.items() if v is not None})
    rows = latest_rows(asyncio.run(read_quality_rows(settings, idle)))
    write_outputs(rows, out_jsonl, out_npz)
    err.print(f"exported {len(rows)} documents -> {out_jsonl}, {out_npz}")
