"""Reading whole topics outside any consumer group (``tail``, the retriever's follower, the
per-worker duplicate index): every partition assigned by hand, never stolen from workers.

A topic created a moment ago may have no metadata yet, so partitions are looked up with a short
wait; callers choose how long (a monitoring tail gives up sooner than a worker starting up).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from aiokafka import AIOKafkaConsumer, TopicPartition


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
