"""The embedded profile's worker consumer waits 50 ms per fetch; a real cluster keeps Faust's."""

from __future__ import annotations

import aiokafka
import pytest

from verdictflow.agents.worker_app import create_app
from verdictflow.evaluators.policy import load_policy
from verdictflow.settings import Settings
from verdictflow.streams.embedded_fetch import EMBEDDED_FETCH_WAIT_MS, EmbeddedBrokerApp


async def test_aiokafka_still_reads_the_wait_from_the_attribute_we_set() -> None:
    consumer = aiokafka.AIOKafkaConsumer(fetch_max_wait_ms=7)
    assert consumer._fetch_max_wait_ms == 7


@pytest.mark.parametrize(
    ("profile", "wait"), [("embedded", EMBEDDED_FETCH_WAIT_MS), ("kafka", 1500)]
)
async def test_worker_consumer_fetch_wait_by_profile(profile: str, wait: int, tmp_path) -> None:
    settings = Settings(broker_profile=profile, data_dir=tmp_path, topic_prefix="t.")
    app = create_app(settings, load_policy(None))
    assert isinstance(app, EmbeddedBrokerApp) is (profile == "embedded")
    consumer = app.consumer._thread._create_worker_consumer(app.transport)
    assert consumer._fetch_max_wait_ms == wait
