"""Upgrading table state from changelog layout 1 to layout 2 (issue 19).

Layout 1 (verdictflow before the fix) named a table's changelog ``<app>-<table>-changelog``,
stored JSON-quoted keys and let the producer hash *those* bytes to pick a partition, so most
keys' state sat in another partition than their records, and a rebalance lost it. Layout 2
(:mod:`verdictflow.streams.durable_table`) writes each key's state in the partition of its
records under ``<app>-<table>-v2-changelog`` with raw keys.

An upgrade therefore has two honest options, and the worker refuses to start until one was
taken (:func:`check_table_layout`), because starting on an empty layout-2 table would silently
drop every open consistency group and every document's graph degree:

- ``verdictflow migrate-tables`` (workers stopped): read each layout-1 changelog to its end,
  keep the newest value of every key (a tombstone removes it), and write it to the layout-2
  changelog in the partition where the key's records are (Kafka's default murmur2 partitioner
  over the raw key, which is how verdictflow produces its internal topics and how the Java and
  aiokafka clients produce ``docs``). The layout-1 topic is left untouched (delete it once the
  upgrade is confirmed).
- ``verdictflow migrate-tables --reset``: create the layout-2 changelogs empty. Open groups
  start again (answers already seen will not be collected again: their groups close by window
  with what arrives later), and document features must be rebuilt by replaying ``docs`` and
  ``doc-edges``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

import orjson
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from verdictflow.exceptions import VerdictflowError
from verdictflow.settings import Settings
from verdictflow.streams.durable_table import TABLE_LAYOUT, versioned
from verdictflow.streams.kafka_security import aiokafka_security_kwargs
from verdictflow.streams.records import key_partition
from verdictflow.streams.topic_reader import read_whole_topic
from verdictflow.streams.topics import LAYOUT1_TABLES

logger = logging.getLogger(__name__)


class TableLayoutError(VerdictflowError):
    """Table state of an older layout is on the broker and was neither migrated nor reset."""


def legacy_changelog(app_id: str, table: str) -> str:
    return f"{app_id}-{table}-changelog"


def changelog(app_id: str, table: str) -> str:
    return f"{app_id}-{versioned(table)}-changelog"


@dataclass(frozen=True)
class MigrationReport:
    table: str
    source: str
    target: str
    status: str  # migrated | reset | already_done | nothing_to_migrate
    records_read: int = 0
    keys_written: int = 0
    keys_moved: int = 0  # keys whose layout-1 partition differed from their records'


def latest_values(records: list[tuple[int, bytes | None, bytes | None]]) -> dict[str, bytes]:
    """Newest value per key of a layout-1 changelog (records in per-partition offset order;
    a key only ever lived in one layout-1 partition). Keys are JSON strings there."""
    latest: dict[str, bytes] = {}
    for _partition, raw_key, value in records:
        if raw_key is None:
            continue
        key = str(orjson.loads(raw_key))
        if value is None:
            latest.pop(key, None)
        else:
            latest[key] = value
    return latest


async def _admin(settings: Settings) -> AIOKafkaAdminClient:
    admin = AIOKafkaAdminClient(
        bootstrap_servers=settings.bootstrap_servers, **aiokafka_security_kwargs(settings)
    )
    await admin.start()
    return admin


async def check_table_layout(settings: Settings) -> None:
    """Raise :class:`TableLayoutError` when a layout-1 changelog exists without its layout-2
    successor: the worker would start with that state missing."""
    admin = await _admin(settings)
    try:
        topics = set(await admin.list_topics())
    finally:
        await admin.close()
    stale = [
        legacy_changelog(settings.app_id, table)
        for table in LAYOUT1_TABLES
        if legacy_changelog(settings.app_id, table) in topics
        and changelog(settings.app_id, table) not in topics
    ]
    if stale:
        raise TableLayoutError(
            f"table state in changelog layout 1 ({', '.join(stale)}) would be lost by this "
            f"version (layout {TABLE_LAYOUT}); stop every worker of {settings.app_id} and run "
            "`verdictflow migrate-tables` (or `--reset` to start the tables empty); "
            "see docs/operations.md"
        )


async def migrate_tables(
    settings: Settings,
    *,
    reset: bool = False,
    progress: Callable[[str], None] | None = None,
) -> list[MigrationReport]:
    """Migrate (or reset) every table of ``settings.app_id``; see the module doc.

    Idempotent: a table whose layout-2 changelog exists already is left alone, so a second run
    (or one after a worker created the topic) never writes old state over newer state.
    """
    say = progress or (lambda message: None)
    admin = await _admin(settings)
    try:
        topics = set(await admin.list_topics())
        reports = []
        for table in LAYOUT1_TABLES:
            source = legacy_changelog(settings.app_id, table)
            target = changelog(settings.app_id, table)
            if target in topics:
                reports.append(MigrationReport(table, source, target, "already_done"))
                continue
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics(
                    [NewTopic(target, settings.partitions, settings.replication_factor)]
                )
            if source not in topics:
                reports.append(MigrationReport(table, source, target, "nothing_to_migrate"))
            elif reset:
                reports.append(MigrationReport(table, source, target, "reset"))
            else:
                say(f"reading {source}")
                reports.append(await _copy(settings, table, source, target))
            say(f"{table}: {reports[-1].status}")
        return reports
    finally:
        await admin.close()


async def _copy(settings: Settings, table: str, source: str, target: str) -> MigrationReport:
    records = await read_whole_topic(settings, source)
    latest = latest_values(records)
    old_partition = {str(orjson.loads(k)): p for p, k, _ in records if k is not None}
    producer = AIOKafkaProducer(
        bootstrap_servers=settings.bootstrap_servers,
        acks="all",
        max_batch_size=16384,
        **aiokafka_security_kwargs(settings),
    )
    await producer.start()
    moved = 0
    try:
        for key in sorted(latest):
            raw = key.encode()
            partition = key_partition(raw, settings.partitions)
            moved += partition != old_partition[key]
            # One record per request: a Faust table recovers from this topic, and the embedded
            # broker reports a wrong end offset after a batch of several records
            # (docs/embedded-broker.md).
            await producer.send_and_wait(target, latest[key], key=raw, partition=partition)
    finally:
        await producer.stop()
    logger.info("%s: %d keys from %s to %s (%d moved)", table, len(latest), source, target, moved)
    return MigrationReport(table, source, target, "migrated", len(records), len(latest), moved)
