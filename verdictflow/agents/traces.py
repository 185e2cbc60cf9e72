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

**Bounded state.** A trace's state is one table entry, so it must fit in one changelog record
(:mod:`verdictflow.streams.record_limits`): its spans are kept up to :data:`MAX_SPANS` and
:data:`MAX_STATE_BYTES` (JSON bytes); a span past either bound is dropped and counted, and the
trace is assembled from the spans that fit when it closes, with one dead letter
(``trace_spans_dropped``: how many spans, how many bytes) so that an operator sees that its
answers were built from part of it. An answer event too large to send is dead-lettered
(``record_too_large``) instead of sent; the trace's other answers go on. (The 8 MiB per-trace
bound before issue 40 could never be reached: the first state record over ~1 MB crashed the
worker, and every restart crashed again on the same records.)

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

from verdictflow.exceptions import InvalidEvent
from verdictflow.models.codec import encode
from verdictflow.models.spans import CloseTick, SpanRecord
from verdictflow.pipelines.traces import assemble
from verdictflow.settings import Settings
from verdictflow.streams.batch_agent import batch_agent, per_record
from verdictflow.streams.durable_table import StagedWrites, durable_table
from verdictflow.streams.outbox import Outbox
from verdictflow.streams.record_limits import MAX_RECORD_BYTES, RecordTooLarge, check_record
from verdictflow.streams.records import Record, dead_letter
from verdictflow.streams.topics import ANSWERS, DEAD_LETTERS, SPANS, TRACES_TABLE

logger = logging.getLogger(__name__)

AGENT = "vf-traces"
#: Spans and JSON bytes of spans kept per trace at most; later ones are counted and dropped.
#: The bytes leave room under the changelog record's limit for the entry's own fields.
MAX_SPANS = 1000
MAX_STATE_BYTES = MAX_RECORD_BYTES - 32 * 1024


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
        if len(entry["spans"]) >= MAX_SPANS:  # full: no copy, no log line per span
            self._drop(key, entry, span, 0)
            return
        if any(s["span_id"] == span.span_id for s in entry["spans"]):
            return  # redelivered
        value = span.model_dump(mode="json")
        span_bytes = len(orjson.dumps(value))
        size = entry.get("bytes", 0) + span_bytes
        if size > MAX_STATE_BYTES:
            self._drop(key, entry, span, span_bytes)
            return
        entry.update(spans=[*entry["spans"], value], bytes=size, last=now)
        if span.is_root and span.end_unix_nano:
            entry["root_end"] = span.end_unix_nano
        self.table[key] = entry

    def _drop(self, key: str, entry: dict[str, Any], span: SpanRecord, span_bytes: int) -> None:
        """Count a span past the trace's bounds (logged once per trace)."""
        self.dropped_spans += 1
        dropped = entry.get("dropped", 0)
        if not dropped:
            logger.warning(
                "trace %s: span %s and later ones past %d spans or %d bytes are dropped; the "
                "trace is assembled from the spans kept", key, span.span_id, MAX_SPANS,
                MAX_STATE_BYTES,
            )  # fmt: skip
        entry.update(dropped=dropped + 1, dropped_bytes=entry.get("dropped_bytes", 0) + span_bytes)
        if span.is_root and span.end_unix_nano and not entry.get("root_end"):
            entry["root_end"] = span.end_unix_nano  # the trace can still close when quiet
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
        sent = []
        for event in result.events:
            value = orjson.dumps(event.model_dump(mode="json", exclude_none=True))
            try:
                check_record(ANSWERS, key, value, headers)
            except RecordTooLarge as exc:
                await self._dead_letter(outbox, record, "record_too_large", str(exc), value)
                continue
            await outbox.send(ANSWERS, key, value, headers)
            sent.append(event)
        if entry.get("dropped"):
            detail = (
                f"trace {key}: {entry['dropped']} spans ({entry.get('dropped_bytes', 0):,} bytes "
                f"counted) past {MAX_SPANS} spans or {MAX_STATE_BYTES:,} bytes were dropped; "
                f"{len(sent)} answers were assembled from the {len(spans)} spans kept"
            )
            await self._dead_letter(outbox, record, "trace_spans_dropped", detail, b"")
        for reason in result.skipped:
            logger.info("trace %s: %s", key, reason)
        self.traces += 1
        self.answers += len(sent)
        self.skipped += result.skipped[-10:]
        self.table[key] = {
            "done": True,
            "done_at": record.timestamp or time.time(),
            "emitted": [e.id for e in sent],
            "spans": [],
            "first": entry.get("first"),
        }

    @staticmethod
    async def _dead_letter(
        outbox: Outbox, record: Record, code: str, detail: str, value: bytes
    ) -> None:
        letter = dead_letter(record, InvalidEvent(code, detail[:500]), raw=value)
        await outbox.send(DEAD_LETTERS, record.topic, encode(letter))

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
