"""The trace assembler (``vf-traces``, lexical tier): spans in (``internal.spans``, keyed by
trace id, from ``verdictflow ingest``), answer events out (``answers``, keyed by trace id).

A trace's spans are gathered in the table ``traces`` (keyed by trace id, so co-partitioned with
its spans; state written after the outputs it records, like the other tables). A trace is
assembled (:func:`verdictflow.pipelines.traces.assemble`) once its root span has ended and
``trace_quiet_seconds`` passed without a new span, or ``trace_max_age_seconds`` after its first
span, whichever comes first: this module's timer sends a close tick on the same topic, and the
agent assembles the trace when the tick reaches it, behind every span of that trace that came
before, in the partition that owns the trace. The entry is then kept, without its spans, for
``trace_retention_seconds`` (a span arriving later is counted and dropped, not assembled into a
second, partial set of answers), then forgotten by another tick.

At-least-once: a worker killed after it sent a trace's answers and before their table write
assembles the trace again after its restart and sends the same answers (same ids); a span
delivered twice is kept once (by span id).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import faust
import orjson
from pydantic import ValidationError

from verdictflow.models.spans import CloseTick, SpanRecord
from verdictflow.pipelines.traces import assemble
from verdictflow.streams.batch_agent import batch_agent, per_record
from verdictflow.streams.durable_table import StagedWrites, durable_table
from verdictflow.streams.outbox import Outbox
from verdictflow.streams.records import Record
from verdictflow.streams.settings import Settings
from verdictflow.streams.topics import ANSWERS, SPANS, TRACES_TABLE

logger = logging.getLogger(__name__)

AGENT = "vf-traces"
#: Spans and bytes of span records kept per trace at most; later ones are counted and dropped.
MAX_SPANS = 1000
MAX_BYTES = 8 * 1024 * 1024


class TraceAssembler:
    """The agent's logic over the table (see the module doc)."""

    def __init__(self, table: Any, settings: Settings) -> None:
        self.table = table
        self.settings = settings
        self.late_spans = 0
        self.dropped_spans = 0
        self.traces = 0
        self.answers = 0
        self.skipped: list[str] = []
        self._ticked: dict[str, float] = {}  # trace -> when its last tick was sent

    async def on_record(self, record: Record, outbox: Outbox) -> None:
        try:
            data = orjson.loads(record.value or b"")
            kind = data.get("t") if isinstance(data, dict) else None
            if kind == "close":
                await self._close(CloseTick.model_validate(data), record, outbox)
            else:
                self._add(SpanRecord.model_validate(data), record)
        except (orjson.JSONDecodeError, ValidationError) as exc:  # our own topic: a bug
            logger.error("unusable span record at %s skipped: %s", record.where, exc)

    def _add(self, span: SpanRecord, record: Record) -> None:
        key = span.trace_id
        now = record.timestamp or time.time()
        entry = dict(self.table.get(key) or {"spans": [], "first": now, "root_end": 0})
        if entry.get("done"):
            self.late_spans += 1
            return
        spans = list(entry["spans"])
        if any(s["span_id"] == span.span_id for s in spans):
            return  # redelivered
        value = span.model_dump(mode="json")
        size = entry.get("bytes", 0) + len(orjson.dumps(value))
        if len(spans) >= MAX_SPANS or size > MAX_BYTES:
            self.dropped_spans += 1
            logger.warning("trace %s: span %s dropped (over %d spans or %d bytes)",
                           key, span.span_id, MAX_SPANS, MAX_BYTES)  # fmt: skip
            return
        spans.append(value)
        entry.update(spans=spans, bytes=size, last=now)
        if span.is_root and span.end_unix_nano:
            entry["root_end"] = span.end_unix_nano
        self.table[key] = entry

    async def _close(self, tick: CloseTick, record: Record, outbox: Outbox) -> None:
        key = tick.trace_id
        entry = self.table.get(key)
        if entry is None:
            return
        if tick.reason == "forget":
            if entry.get("done"):
                del self.table[key]
            return
        if entry.get("done"):
            return
        spans = [SpanRecord.model_validate(s) for s in entry["spans"]]
        result = assemble(spans, self.settings.trace_tenant_attribute)
        headers = {"vf-source": record.where.encode()}
        for event in result.events:
            value = orjson.dumps(event.model_dump(mode="json", exclude_none=True))
            await outbox.send(ANSWERS, key, value, headers)
        for reason in result.skipped:
            logger.info("trace %s: %s", key, reason)
        self.traces += 1
        self.answers += len(result.events)
        self.skipped += result.skipped[-10:]
        self.table[key] = {
            "done": True,
            "done_at": record.timestamp or time.time(),
            "emitted": [e.id for e in result.events],
            "spans": [],
            "first": entry.get("first"),
        }

    def due(self, now: float) -> list[CloseTick]:
        """The ticks the timer sends now (resent every 10 s until applied)."""
        s = self.settings
        ticks = []
        for key in list(self.table.keys()):
            entry = self.table.get(key)
            if entry is None:
                continue
            if entry.get("done"):
                ready = now - (entry.get("done_at") or now) >= s.trace_retention_seconds
                reason = "forget"
            elif now - (entry.get("first") or now) >= s.trace_max_age_seconds:
                ready, reason = True, "max_age"
            else:
                quiet = now - (entry.get("last") or now) >= s.trace_quiet_seconds
                ready, reason = bool(entry.get("root_end")) and quiet, "quiet"
            if ready and now - self._ticked.get(key, 0.0) >= 10.0:
                self._ticked[key] = now
                ticks.append(CloseTick(trace_id=key, reason=reason))  # type: ignore[arg-type]
        for key in [k for k, t in self._ticked.items() if now - t > 600]:
            del self._ticked[key]
        return ticks


def register(
    app: faust.App,
    topics: Mapping[str, Any],
    new_outbox: Callable[[], Outbox],
    settings: Settings,
) -> TraceAssembler:
    """Declare the traces table, the assembler and its closing timer on ``app``."""
    outbox, timer_outbox = new_outbox(), new_outbox()
    table = durable_table(app, TRACES_TABLE, key_type=str, partitions=settings.partitions)
    staged = StagedWrites(table)  # a trace's state reaches the changelog after its answers
    assembler = TraceAssembler(staged, settings)

    async def handle(record: Record) -> None:
        await assembler.on_record(record, outbox)

    batch_agent(
        app,
        topics[SPANS],
        name=AGENT,
        settings=settings,
        outbox=outbox,
        handle=per_record(handle),
        staged=staged,
    )

    @app.timer(1.0, name="vf-traces-close")  # type: ignore[untyped-decorator]
    async def close_quiet_traces() -> None:
        try:
            for tick in assembler.due(time.time()):
                value = orjson.dumps(tick.model_dump(mode="json"))
                await timer_outbox.send(SPANS, tick.trace_id, value)
            await timer_outbox.drain()
        except Exception as exc:  # ticks are re-sent; a lost one only delays a trace
            logger.warning("could not send trace close ticks: %s", exc)

    return assembler
