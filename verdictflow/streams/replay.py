"""``verdictflow replay FILE --topic T``: produce a JSONL file's lines to a topic, as they are.

Lines are sent verbatim (a malformed line is sent too: that is how the dead-letter path is
exercised). The key is the record's natural key (answers: request_id, else id; docs: doc_id;
doc-edges: src; others: id) when the line parses, else no key.

A line longer than :data:`MAX_LINE_BYTES` (1 MiB: Kafka's default ``message.max.bytes`` is
1,048,588, and the worker dead-letters anything over its own 1,000,000-byte limit anyway) is
not sent: it is reported with its line number and size, and the lines after it are sent. So is
a line the broker refuses as too large. :class:`ReplayResult` says how many of each.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaProducer
from aiokafka.errors import MessageSizeTooLargeError, RecordTooLargeError

from verdictflow.input_files import event_records
from verdictflow.settings import Settings
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.kafka_security import aiokafka_security_kwargs
from verdictflow.streams.topics import full_name

logger = logging.getLogger(__name__)

#: Longest line sent; the producer's request limit leaves room for the key and headers.
MAX_LINE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class ReplayResult:
    """How many lines were sent, and which were refused (line number, size, why)."""

    sent: int
    refused: tuple[tuple[int, int, str], ...] = ()


_KEY_FIELDS: dict[str, tuple[str, ...]] = {
    "answers": ("request_id", "id"),
    "docs": ("doc_id",),
    "doc-edges": ("src",),
}


def record_key(line: bytes, short_topic: str) -> bytes | None:
    """The natural key of a line for its topic, or None when it does not parse."""
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    for name in _KEY_FIELDS.get(short_topic, ("id",)):
        value = data.get(name)
        if isinstance(value, str) and value:
            return value.encode()
    return None


def read_lines(path: Path) -> list[bytes]:
    """The non-blank records of an events file: its lines, or the items of one JSON array
    (:func:`verdictflow.input_files.event_records`)."""
    return [line for line in event_records(path) if line.strip()]


def make_producer(
    settings: Settings, max_record_bytes: int = MAX_LINE_BYTES, *, linger_ms: int = 5
) -> AIOKafkaProducer:
    """A producer that, on the embedded broker, puts one record in each batch (see
    docs/embedded-broker.md), and may send records of ``max_record_bytes``; on a cluster it
    waits ``linger_ms`` to fill batches (0 for a producer in a request path: the ingest)."""
    return AIOKafkaProducer(
        bootstrap_servers=settings.bootstrap_servers,
        max_batch_size=1 if settings.embedded else 16384,
        linger_ms=0 if settings.embedded else linger_ms,
        acks="all",
        max_request_size=max_record_bytes + 64 * 1024,
        **aiokafka_security_kwargs(settings),
    )


async def replay(
    lines: Sequence[bytes],
    topic: str,
    settings: Settings,
    progress: Callable[[int], None] | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> ReplayResult:
    """Produce ``lines`` to ``topic`` (short or full name) in order; lines too large for the
    producer or the broker are refused and reported, the rest are sent."""
    short = full_name(topic, settings.topic_prefix)[len(settings.topic_prefix) :]
    target = settings.topic_prefix + short
    await ensure_topics(settings)
    producer = make_producer(settings, max_line_bytes)
    await producer.start()
    refused: list[tuple[int, int, str]] = []
    sent = 0
    try:
        pending: list[tuple[int, int, asyncio.Future[Any]]] = []

        async def settle() -> None:
            nonlocal sent
            for line_no, size, future in pending:
                try:
                    await future
                    sent += 1
                except (MessageSizeTooLargeError, RecordTooLargeError) as exc:
                    refused.append((line_no, size, f"the broker refused it: {exc}"))
            pending.clear()

        for i, line in enumerate(lines, start=1):
            if len(line) > max_line_bytes:
                refused.append((i, len(line), f"over the {max_line_bytes:,}-byte limit"))
                logger.warning("line %d: %d bytes, over %d: not sent", i, len(line), max_line_bytes)
                continue
            future = await producer.send(target, value=line, key=record_key(line, short))
            pending.append((i, len(line), future))
            if len(pending) >= 500:
                await settle()
            if progress is not None and i % 100 == 0:
                progress(i)
        await settle()
        if progress is not None:
            progress(len(lines))
        return ReplayResult(sent, tuple(refused))
    finally:
        await producer.stop()
