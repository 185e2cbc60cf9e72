"""Reading whole topics outside any consumer group (``tail``, the retriever's follower, the
per-worker duplicate index): every partition assigned by hand, never stolen from workers.

A topic created a moment ago may have no metadata yet, so partitions are looked up with a short
wait; callers choose how long (a monitoring tail gives up sooner than a worker starting up).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from aiokafka import AIOKafkaConsumer, TopicPartition

from verdictflow.settings import Settings
from verdictflow.streams.kafka_security import aiokafka_security_kwargs


async def partitions_for(
    consumer: AIOKafkaConsumer, topic: str, *, wait_seconds: float
) -> set[int]:
    """Partitions of ``topic``, refreshing metadata for up to ``wait_seconds``."""
    deadline = time.monotonic() + wait_seconds
    while True:
        parts = consumer.partitions_for_topic(topic)
        if parts or time.monotonic() > deadline:
            return set(parts or ())
        await consumer.topics()  # refreshes cluster metadata


async def assign_all(
    consumer: AIOKafkaConsumer, topics: Sequence[str], *, wait_seconds: float
) -> list[TopicPartition]:
    """Assign every partition of ``topics`` (in topic, then partition order) and return them."""
    assigned = [
        TopicPartition(topic, p)
        for topic in topics
        for p in sorted(await partitions_for(consumer, topic, wait_seconds=wait_seconds))
    ]
    consumer.assign(assigned)
    return assigned


def groupless_consumer(settings: Settings) -> AIOKafkaConsumer:
    """A consumer outside any group, committing nothing: it reads without stealing partitions
    from workers (assign partitions with :func:`assign_all`)."""
    return AIOKafkaConsumer(
        bootstrap_servers=settings.bootstrap_servers,
        group_id=None,
        enable_auto_commit=False,
        **aiokafka_security_kwargs(settings),
    )


async def read_whole_topic(
    settings: Settings, topic: str, *, idle_seconds: float = 3.0
) -> list[tuple[int, bytes | None, bytes | None]]:
    """Every record of ``topic`` as ``(partition, key, value)``, in partition then offset order.

    Stops when every partition reached the end offset it had at the start, or after
    ``idle_seconds`` without a record (the embedded broker reports an end offset short of the
    log end when the last batch held several records, docs/embedded-broker.md; the fetch that
    reaches it returns that whole batch).
    """
    consumer = groupless_consumer(settings)
    await consumer.start()
    try:
        partitions = await assign_all(consumer, [topic], wait_seconds=5)
        await consumer.seek_to_beginning(*partitions)
        ends = await consumer.end_offsets(partitions)
        records: dict[int, list[tuple[int, bytes | None, bytes | None]]] = {}
        last = time.monotonic()
        while time.monotonic() - last < idle_seconds:
            positions = [await consumer.position(tp) for tp in partitions]
            if all(pos >= ends[tp] for pos, tp in zip(positions, partitions, strict=True)):
                break
            batches = await consumer.getmany(timeout_ms=200, max_records=10_000)
            for tp, messages in batches.items():
                records.setdefault(tp.partition, []).extend(
                    (tp.partition, m.key, m.value) for m in messages
                )
                last = time.monotonic()
        return [r for p in sorted(records) for r in records[p]]
    finally:
        await consumer.stop()
