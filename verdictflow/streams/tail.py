"""``verdictflow tail TOPIC``: print topic values as JSON lines, as a monitoring consumer sees them.

Reads without a consumer group (it never steals partitions from workers), from the end by
default or from the beginning, and stops after ``count`` records or ``timeout`` idle seconds.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence

from verdictflow.settings import Settings
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.topic_reader import assign_all, groupless_consumer
from verdictflow.streams.topics import full_name


async def tail(
    topics: Sequence[str],
    settings: Settings,
    *,
    from_beginning: bool = False,
    count: int | None = None,
    timeout: float | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> AsyncIterator[tuple[str, bytes]]:
    """Yield ``(full topic name, value)`` pairs until ``count`` records, ``timeout`` idle
    seconds, or ``should_stop()`` (checked at every poll) says so."""
    names = [full_name(t, settings.topic_prefix) for t in topics]
    # Tailing before the worker has started is normal: declare what we read, as the worker would.
    await ensure_topics(settings, topics)
    consumer = groupless_consumer(settings)
    await consumer.start()
    try:
        partitions = await assign_all(consumer, names, wait_seconds=5)
        if from_beginning:
            await consumer.seek_to_beginning(*partitions)
        else:
            await consumer.seek_to_end(*partitions)
        seen = 0
        last = time.monotonic()
        while (count is None or seen < count) and not (should_stop and should_stop()):
            batches = await consumer.getmany(timeout_ms=200, max_records=1000)
            got = False
            for tp in sorted(batches, key=lambda t: (t.topic, t.partition)):
                for msg in batches[tp]:
                    got = True
                    yield tp.topic, msg.value
                    seen += 1
                    if count is not None and seen >= count:
                        return
            if got:
                last = time.monotonic()
            elif timeout is not None and time.monotonic() - last >= timeout:
                return
    finally:
        await consumer.stop()
