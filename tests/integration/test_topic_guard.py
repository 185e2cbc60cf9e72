"""The worker's topic guard declares lost topics and names a topic with the wrong count."""

from __future__ import annotations

import logging

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from verdictflow.streams.topic_guard import TopicGuard, partition_mismatches
from verdictflow.streams.topics import ALL_TOPICS, full_name

pytestmark = pytest.mark.broker


async def test_guard_declares_missing_topics_and_reports_a_wrong_count(settings_factory, caplog):
    settings = settings_factory(partitions=3)
    wrong = full_name("alerts", settings.topic_prefix)
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap_servers)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(wrong, 2, 1)])
        guard = TopicGuard(settings)
        with caplog.at_level(logging.WARNING, logger="verdictflow.streams.topic_guard"):
            declared = await guard.check()
            assert await guard.check() == []  # nothing left to declare
        assert set(declared) == {full_name(t, settings.topic_prefix) for t in ALL_TOPICS} - {wrong}
        assert await partition_mismatches(settings) == {wrong: 2}
        errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert len(errors) == 1, "a mismatch is reported once, not at every check"
        assert wrong in errors[0]
    finally:
        await admin.close()
