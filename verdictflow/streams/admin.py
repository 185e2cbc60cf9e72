"""Topic declaration with the configured partition count, before anything produces.

Producing to a missing topic lets the broker auto-create it with its own default partition
count, which would break the keying contract (variants of a request in one partition). So every
entry point declares the registry's topics first; existing topics are left alone.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from verdictflow.settings import Settings
from verdictflow.streams.kafka_security import aiokafka_security_kwargs
from verdictflow.streams.topics import ALL_TOPICS, full_name

logger = logging.getLogger(__name__)


async def ensure_topics(settings: Settings, names: Iterable[str] = ALL_TOPICS) -> list[str]:
    """Create the missing topics among ``names``; return the full names that were created."""
    admin = AIOKafkaAdminClient(
        bootstrap_servers=settings.bootstrap_servers, **aiokafka_security_kwargs(settings)
    )
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        wanted = [full_name(n, settings.topic_prefix) for n in names]
        missing = [t for t in dict.fromkeys(wanted) if t not in existing]
        if missing:
            new = [NewTopic(t, settings.partitions, settings.replication_factor) for t in missing]
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics(new)
            logger.info("declared topics %s", ", ".join(missing))
        return missing
    finally:
        await admin.close()
