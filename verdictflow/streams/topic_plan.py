"""The topic creation plan for a real cluster: partitions, replication, cleanup and retention.

Workers declare missing topics with the partition count only (the embedded broker has no
compaction). On a real cluster, create them ahead of time with ``verdictflow topics --create``
(the compose file and the Kubernetes Job do), so that each gets the cleanup policy its readers
rely on:

- ``docs`` and ``doc-quality`` are **compacted**: keyed by doc_id, and readers (the retriever,
  the duplicate index) replay them from the beginning to rebuild state, so only the newest
  record per document matters and the topic stays the size of the corpus.
- ``doc-edges`` is keyed by the *source* document with one record per edge, so compaction
  would drop edges: it is kept forever (``retention.ms=-1``) instead.
- Verdicts are an audit trail consumed by monitoring and the ledger: kept ``verdict_days``
  (default 30). Dead letters are kept longer (operators inspect them late); inputs shorter.
- Internal topics carry re-keyed work whose result lives in table changelogs: 7 days.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from verdictflow.settings import Settings
from verdictflow.streams.kafka_security import aiokafka_security_kwargs
from verdictflow.streams.topics import (
    ALERTS,
    ALL_TOPICS,
    ANSWERS,
    CONSISTENCY_GROUPS,
    DEAD_LETTERS,
    DOC_EDGES,
    DOC_QUALITY,
    DOC_QUALITY_INTERNAL,
    DOCS,
    JUDGE_REQUESTS,
    LABELS,
    NOTIFY_LOG,
    REVIEW_QUEUE,
    SPANS,
    SUMMARIES,
    VERDICT_TOPICS,
    full_name,
)

logger = logging.getLogger(__name__)

DAY_MS = 24 * 3600 * 1000


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    replication: int
    config: dict[str, str] = field(default_factory=dict)


def topic_plan(settings: Settings, *, verdict_days: int = 30) -> list[TopicSpec]:
    """One spec per registry topic, in registry order."""
    delete = {"cleanup.policy": "delete"}
    configs: dict[str, dict[str, str]] = {
        DOCS: {"cleanup.policy": "compact"},
        DOC_QUALITY: {"cleanup.policy": "compact"},
        DOC_EDGES: {**delete, "retention.ms": "-1"},
        ANSWERS: {**delete, "retention.ms": str(7 * DAY_MS)},
        SUMMARIES: {**delete, "retention.ms": str(7 * DAY_MS)},
        DEAD_LETTERS: {**delete, "retention.ms": str(90 * DAY_MS)},
        ALERTS: {**delete, "retention.ms": str(90 * DAY_MS)},
        CONSISTENCY_GROUPS: {**delete, "retention.ms": str(7 * DAY_MS)},
        DOC_QUALITY_INTERNAL: {**delete, "retention.ms": str(7 * DAY_MS)},
        JUDGE_REQUESTS: {**delete, "retention.ms": str(7 * DAY_MS)},
        SPANS: {**delete, "retention.ms": str(7 * DAY_MS)},
        # compacted: the latest entry per (alert, webhook) is all the notifier reads back
        NOTIFY_LOG: {"cleanup.policy": "compact"},
        # compacted: a reviewer's latest label per (input, kind), the queue's latest entry
        LABELS: {"cleanup.policy": "compact"},
        REVIEW_QUEUE: {"cleanup.policy": "compact"},
    }
    for topic in VERDICT_TOPICS:
        configs[topic] = {**delete, "retention.ms": str(verdict_days * DAY_MS)}
    if settings.replication_factor >= 3:
        # With 3 replicas, acks=all (our producers) survives one broker down.
        for config in configs.values():
            config["min.insync.replicas"] = "2"
    return [
        TopicSpec(
            full_name(short, settings.topic_prefix),
            settings.partitions,
            settings.replication_factor,
            configs[short],
        )
        for short in ALL_TOPICS
    ]


async def create_topics(plan: list[TopicSpec], settings: Settings) -> tuple[list[str], list[str]]:
    """Create the plan's missing topics with their configs; return (created, already there).

    Existing topics are left as they are (changing partitions re-shuffles keys; change configs
    deliberately with ``kafka-configs.sh``).
    """
    admin = AIOKafkaAdminClient(
        bootstrap_servers=settings.bootstrap_servers, **aiokafka_security_kwargs(settings)
    )
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [t for t in plan if t.name not in existing]
        if missing:
            new = [
                NewTopic(t.name, t.partitions, t.replication, topic_configs=t.config)
                for t in missing
            ]
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics(new)
        return [t.name for t in missing], [t.name for t in plan if t.name in existing]
    finally:
        await admin.close()
