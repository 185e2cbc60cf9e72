"""``verdictflow ledger``: append verdict topics to local JSONL files for audit, partitioned
``<out>/<day>/<kind>.jsonl``.

- The day is the verdict's own ``event_ts`` (UTC), never the wall clock, so a replay files every
  verdict where the first run did; verdicts without an event time, or with one no calendar
  day holds (written before times were checked at the edge), go to ``undated/``.
- Idempotent: the ids already in the ledger are read at start, and a ``verdict_id`` is written
  once however often it is delivered (the worker re-emits verdicts with the same ids and bytes
  after a crash). So the ledger reads its topics from the beginning, outside any consumer group,
  and a restart catches up without duplicating.
- The record is written as it came off the topic (its bytes, one line), so the ledger holds
  exactly what consumers saw, with its config and environment digests.
- A half-written last line (the process killed mid-write) is cut off at start; that verdict is
  read again from the topic.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import orjson
from pydantic import ValidationError

from verdictflow.models.verdicts import Verdict
from verdictflow.settings import Settings
from verdictflow.streams.tail import tail
from verdictflow.streams.topics import VERDICT_TOPICS

logger = logging.getLogger(__name__)
UNDATED = "undated"


def ledger_day(event_ts: float | None) -> str:
    """``YYYY-MM-DD`` (UTC) of a verdict's event time, or ``undated`` when it has none or one no
    calendar day can hold (a record written before event times were checked at the edge:
    ``1e308``, year 10000). The verdict is archived either way."""
    if event_ts is None:
        return UNDATED
    try:
        return datetime.fromtimestamp(event_ts, tz=UTC).strftime("%Y-%m-%d")
    except (OverflowError, OSError, ValueError):
        return UNDATED


class Ledger:
    """Append-only JSONL files under ``root``, deduplicated by ``verdict_id``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.ids: set[str] = set()
        self.written = 0
        self.duplicates = 0
        self.skipped = 0
        self.bad_times = 0  # verdicts whose event_ts no calendar day holds (filed undated)
        self._files: dict[Path, IO[bytes]] = {}
        root.mkdir(parents=True, exist_ok=True)
        for path in sorted(root.glob("*/*.jsonl")):
            self._load(path)

    def _load(self, path: Path) -> None:
        data = path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            logger.warning("%s: cutting a half-written last line (%d bytes)", path, len(data) - end)
            with path.open("r+b") as f:
                f.truncate(end)
        for line in data[:end].splitlines():
            if line.strip():
                self.ids.add(orjson.loads(line)["verdict_id"])

    def append(self, value: bytes) -> bool:
        """Write one verdict record unless its id is already in; False when not written."""
        try:
            verdict = Verdict.model_validate_json(value)
        except ValidationError as exc:
            self.skipped += 1
            logger.warning("skipping a record that is not a verdict: %s", str(exc)[:200])
            return False
        if verdict.verdict_id in self.ids:
            self.duplicates += 1
            return False
        day = ledger_day(verdict.event_ts)
        if day == UNDATED and verdict.event_ts is not None:
            self.bad_times += 1
            logger.warning(
                "verdict %s: event_ts %r has no calendar day; archived under %s/",
                verdict.verdict_id, verdict.event_ts, UNDATED,
            )  # fmt: skip
        path = self.root / day / f"{verdict.kind.value}.jsonl"
        f = self._files.get(path)
        if f is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            f = self._files[path] = path.open("ab")
        f.write(value.rstrip(b"\n") + b"\n")
        f.flush()  # an audit sink: on disk before the next record, not at exit
        self.ids.add(verdict.verdict_id)
        self.written += 1
        return True

    def close(self) -> None:
        for f in self._files.values():
            f.close()
        self._files.clear()


async def run_ledger(
    settings: Settings,
    out: Path,
    topics: Sequence[str] = VERDICT_TOPICS,
    *,
    timeout: float | None = None,
) -> Ledger:
    """Append ``topics`` from the beginning until ``timeout`` idle seconds (forever without)."""
    ledger = Ledger(out)
    try:
        async for _, value in tail(topics, settings, from_beginning=True, timeout=timeout):
            ledger.append(value)
    finally:
        ledger.close()
    return ledger
