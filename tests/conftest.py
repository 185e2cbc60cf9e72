"""Shared fixtures: the embedded broker (once per session) and per-test isolated settings.

Set ``VERDICTFLOW_TEST_BROKER=kafka://host:port`` to run the broker tests against another
Kafka-protocol broker instead of the embedded Tansu.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from tests.support.processes import WorkerProcess
from verdictflow.gc_tuning import is_tuned, untune
from verdictflow.settings import Settings
from verdictflow.streams.broker import EmbeddedBroker

#: ranx, a test-only second reference for nDCG, compiles each metric with numba on first use:
#: 65 s of the suite on a 2-core VM and 268 s on a slow one, for the few queries of trec_eval's
#: fixtures. Interpreted (the same Python source, before any numba import) it takes ~1 s.
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")

#: Hypothesis checks properties here, not speed (benchmarks in bench/ do): its default 200 ms
#: deadline per example failed a 0.07 ms property once when a slow 2-core VM stalled for 430 ms.
hypothesis_settings.register_profile("verdictflow", deadline=None)
hypothesis_settings.load_profile("verdictflow")


@pytest.fixture(autouse=True)
def collector_defaults() -> Iterator[None]:
    """A command run in-process (``eval answers`` by typer's runner) tunes the collector for
    its process (``verdictflow/gc_tuning.py``): the next test gets CPython's defaults back."""
    yield
    if is_tuned():
        untune()


@pytest.fixture(scope="session")
def broker_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    external = os.environ.get("VERDICTFLOW_TEST_BROKER")
    if external:
        yield external
        return
    log = tmp_path_factory.mktemp("broker") / "tansu.log"
    with EmbeddedBroker(log_path=log) as broker:
        yield broker.url


@pytest.fixture
def settings_factory(broker_url: str, tmp_path: Path) -> Callable[..., Settings]:
    """Settings with a fresh topic prefix and app id, so tests never see each other's data."""

    def make(**overrides: object) -> Settings:
        tag = uuid.uuid4().hex[:10]
        base: dict[str, object] = {
            "broker": broker_url,
            "topic_prefix": f"t{tag}.",
            "app_id": f"vf-test-{tag}",
            "data_dir": tmp_path / "data",
            "partitions": 4,
        }
        return Settings(**{**base, **overrides})

    return make


@pytest.fixture
def worker_factory(tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    started: list[WorkerProcess] = []

    def start(
        settings: Settings,
        policy: Path | None = None,
        args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> WorkerProcess:
        log = tmp_path / f"worker-{len(started)}.log"
        worker = WorkerProcess(settings, log, policy, args=args, env=env)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()
