"""The 1,000-answer pipeline test against Apache Kafka in a container (testcontainers).

Runs only where a Docker engine answers and ``testcontainers`` is installed
(``pip install testcontainers``); everywhere else it is skipped with the reason. On the
embedded broker the same test runs in ``test_answers_pipeline.py``.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.verdict_collection import check_thousand_answers
from verdictflow.settings import Settings

pytestmark = [pytest.mark.broker, pytest.mark.docker]


def _docker_running() -> bool:
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(["docker", "info"], capture_output=True, timeout=20)
    return probe.returncode == 0


@pytest.fixture(scope="module")
def kafka_url() -> Iterator[str]:
    kafka = pytest.importorskip("testcontainers.kafka", reason="testcontainers not installed")
    if not _docker_running():
        pytest.skip("no Docker engine running")
    with kafka.KafkaContainer().with_kraft() as container:
        yield "kafka://" + container.get_bootstrap_server()


def test_thousand_answers_on_apache_kafka(kafka_url, tmp_path, worker_factory):
    def settings_factory(**overrides: object) -> Settings:
        import uuid

        tag = uuid.uuid4().hex[:10]
        return Settings(
            broker=kafka_url,
            broker_profile="kafka",
            topic_prefix=f"t{tag}.",
            app_id=f"vf-test-{tag}",
            data_dir=tmp_path / "data",
            **overrides,
        )

    check_thousand_answers(settings_factory, worker_factory, Path(tmp_path))
