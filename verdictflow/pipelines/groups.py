"""The consistency agent's internal messages, and applying one to a group store.

The lexical answers tier forwards each answer that belongs to a request's variant group as an
``answer`` message, keyed by request; the consistency agent's timer sends ``close`` once the
answers tier's watermark passed a group's window (:mod:`verdictflow.agents.consistency`).
Offline, ``eval answers`` applies the same messages to an in-memory store.
"""

from __future__ import annotations

import orjson

from verdictflow.evaluators import variant_groups as vg
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Verdict

_FORWARDED_FIELDS = {
    "id",
    "request_id",
    "answer",
    "variants",
    "expected_variants",
    "model",
    "tenant",
    "group",
    "ts",
}


def group_message(event: AnswerEvent, log_time: float | None) -> bytes:
    """An ``answer`` message: the event without its contexts (not needed for Q2), and the log
    time of its ``answers`` record, which starts or shortens its group's window."""
    event_fields = event.model_dump(include=_FORWARDED_FIELDS)
    return orjson.dumps({"type": "answer", "event": event_fields, "log_time": log_time})


def close_message(key: str, watermark: float) -> bytes:
    """A ``close`` message: every answer of the key's partition up to log time ``watermark``
    was forwarded before this message (:mod:`verdictflow.streams.source_progress`)."""
    return orjson.dumps({"type": "close", "key": key, "watermark": watermark})


def parse_group_message(value: bytes, now: float) -> tuple[AnswerEvent, float] | tuple[str, float]:
    """The inverse of :func:`group_message` and :func:`close_message`: an answer to add to its
    group with its log time, or the key of a group to close with the watermark. Messages
    written before log-time windows (no time field) take ``now``, the old processing time.
    Raises ``orjson.JSONDecodeError``, ``KeyError``, ``TypeError`` or ``ValueError`` on a
    message this package did not write."""
    msg = orjson.loads(value)
    if msg["type"] == "answer":
        log_time = msg.get("log_time")
        return AnswerEvent.model_validate(msg["event"]), float(
            now if log_time is None else log_time
        )
    watermark = msg.get("watermark")
    return str(msg["key"]), float(now if watermark is None else watermark)


def apply_group_message(store: vg.GroupStore, value: bytes, now: float) -> Verdict | None:
    """Apply one message to ``store``: the group's Q2 verdict when the message closed it."""
    item, at = parse_group_message(value, now)
    if isinstance(item, AnswerEvent):
        return store.on_answer(item, at)
    return store.on_close(item, at)
