"""Faust settings and topic objects for a verdictflow app: the plumbing every tier's app is
built from (the apps themselves are composed in :mod:`verdictflow.agents.worker_app`)."""

from __future__ import annotations

from typing import Any

import faust

from verdictflow.settings import Settings
from verdictflow.streams.durable_table import DurableWritesTable
from verdictflow.streams.kafka_security import faust_credentials
from verdictflow.streams.topics import ALL_TOPICS, full_name


def faust_config(settings: Settings) -> dict[str, Any]:
    """Faust settings. The embedded-broker profile adds the Tansu workarounds (see
    docs/embedded-broker.md)."""
    conf: dict[str, Any] = {
        "broker": settings.broker,
        "store": settings.store,
        "datadir": str(settings.data_dir / settings.app_id),
        "topic_partitions": settings.partitions,
        "topic_replication_factor": settings.replication_factor,
        "processing_guarantee": "at_least_once",
        "consumer_auto_offset_reset": "earliest",
        "web_enabled": settings.web_enabled,
        "web_port": settings.web_port,
        "autodiscover": False,
        "table_standby_replicas": 0 if settings.embedded else 1,
        "Table": DurableWritesTable,  # agents await table writes before acking (durable_table)
    }
    credentials = faust_credentials(settings)
    if credentials is not None:
        conf["broker_credentials"] = credentials
    if settings.embedded:
        # Tansu reports a wrong end offset when a partition's last batch holds several records,
        # which breaks table recovery; one record per batch avoids it. Short session timeouts
        # make a worker ready in ~4 s instead of ~30 s on a single-node dev broker.
        conf.update(
            producer_max_batch_size=1, broker_session_timeout=6, broker_heartbeat_interval=1
        )
    return conf


def declare_topics(app: faust.App, settings: Settings) -> dict[str, Any]:
    """Faust topic objects for every registry topic, raw bytes in and out (we decode ourselves,
    so a malformed record reaches our dead-letter path instead of Faust's codec errors)."""
    return {
        short: app.topic(
            full_name(short, settings.topic_prefix),
            key_type=bytes,
            value_type=bytes,
            key_serializer="raw",
            value_serializer="raw",
            partitions=settings.partitions,
        )
        for short in ALL_TOPICS
    }
