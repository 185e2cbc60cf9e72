"""``verdictflow replay FILE --topic T``: produce a JSONL file's lines to a topic, as they are.

Lines are sent verbatim (a malformed line is sent too: that is how the dead-letter path is
exercised). The key is the record's natural key (answers: request_id, else id; docs: doc_id;
doc-edges: src; others: id) when the line parses, else no key.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson
from aiokafka import AIOKafkaProducer

from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.kafka_security import aiokafka_security_kwargs
from verdictflow.streams.settings import Settings
from verdictflow.streams.topics import full_name

logger = logging.getLogger(__name__)

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
    """Non-blank lines of a file, without their line endings."""
    return [ln.rstrip(b"\r\n") for ln in path.read_bytes().splitlines() if ln.strip()]


def make_producer(settings: Settings) -> AIOKafkaProducer:
    """A producer that, on the embedded broker, puts one record in each batch (see
    docs/embedded-broker.md)."""
    return AIOKafkaProducer(
        bootstrap_servers=settings.bootstrap_servers,
        max_batch_size=1 if settings.embedded else 16384,
        linger_ms=0 if settings.embedded else 5,
        acks="all",
        **aiokafka_security_kwargs(settings),
    )


async def replay(
    lines: Sequence[bytes],
    topic: str,
    settings: Settings,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Produce ``lines`` to ``topic`` (short or full name) in order; return how many were sent."""
    short = full_name(topic, settings.topic_prefix)[len(settings.topic_prefix) :]
    target = settings.topic_prefix + short
    await ensure_topics(settings)
    producer = make_producer(settings)
    await producer.start()
    try:
        pending = []
        for i, line in enumerate(lines, start=1):
            pending.append(await producer.send(target, value=line, key=record_key(line, short)))
            if len(pending) >= 500:
                await asyncio.gather(*pending)
                pending.clear()
            if progress is not None and i % 100 == 0:
                progress(i)
        await asyncio.gather(*pending)
        if progress is not None:
            progress(len(lines))
        return len(lines)
    finally:
        await producer.stop()
