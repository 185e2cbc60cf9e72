"""Declaring the registry's topics again when the broker has lost them.

A broker that restarts with empty storage (the embedded broker always does; a Kafka cluster
that lost its log directories too) comes back without verdictflow's topics. Faust and aiokafka
reconnect and rejoin the group by themselves, but topics that nothing subscribes to or produces
to right away (``alerts``, ``doc-quality``...) would stay missing, and a broker that
auto-creates topics would create the others with its own partition count. So the worker checks
every ``topic_check_seconds`` and declares what is missing, with the configured partition count,
and says loudly when a topic exists with another count (the keying contract, variants of a
request in one partition, needs the configured one; only an operator can fix that).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient

from verdictflow.settings import Settings
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.kafka_security import aiokafka_security_kwargs
from verdictflow.streams.topics import ALL_TOPICS, full_name

logger = logging.getLogger(__name__)


async def partition_mismatches(settings: Settings) -> dict[str, int]:
    """Registry topics whose partition count differs from the configured one: name -> count."""
    names = [full_name(t, settings.topic_prefix) for t in ALL_TOPICS]
    admin = AIOKafkaAdminClient(
        bootstrap_servers=settings.bootstrap_servers, **aiokafka_security_kwargs(settings)
    )
    await admin.start()
    try:
        described = await admin.describe_topics(names)
    finally:
        await admin.close()
    return {
        d["topic"]: len(d["partitions"])
        for d in described
        if d.get("error_code") == 0 and len(d["partitions"]) != settings.partitions
    }


class TopicGuard:
    """One check: declare missing topics, report partition-count mismatches once each."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.reported: set[str] = set()

    async def check(self) -> list[str]:
        """Declare missing registry topics; return the names declared. Never raises: while
        the broker is away the check fails quietly and the next one tries again."""
        timeout = max(self.settings.topic_check_seconds, 5.0)
        try:
            declared = await asyncio.wait_for(ensure_topics(self.settings), timeout)
            mismatched = await asyncio.wait_for(partition_mismatches(self.settings), timeout)
        except Exception as exc:  # broker unreachable or restarting: try again next time
            logger.debug("topic check failed: %s: %s", type(exc).__name__, exc)
            return []
        if declared:
            logger.warning(
                "the broker had lost %d topics (restarted with empty storage?); declared them "
                "again with %d partitions: %s",
                len(declared),
                self.settings.partitions,
                ", ".join(declared),
            )
        for topic, count in mismatched.items():
            if topic not in self.reported:
                self.reported.add(topic)
                logger.error(
                    "topic %s has %d partitions, not the configured %d (auto-created by the "
                    "broker?): variants of a request may be split; recreate it",
                    topic,
                    count,
                    self.settings.partitions,
                )
        return declared


def register(app: Any, settings: Settings) -> TopicGuard:
    """Run a :class:`TopicGuard` check on ``app`` every ``settings.topic_check_seconds``."""
    guard = TopicGuard(settings)

    @app.timer(settings.topic_check_seconds, name="vf-topic-guard")  # type: ignore[untyped-decorator]
    async def check_topics() -> None:
        await guard.check()

    return guard
