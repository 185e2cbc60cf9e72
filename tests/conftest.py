"""Shared fixtures: the embedded broker (once per session) and per-test isolated settings.

Set ``VERDICTFLOW_TEST_BROKER=kafka://host:port`` to run the broker tests against another
Kafka-protocol broker instead of the embedded Tansu.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from verdictflow.streams.broker import EmbeddedBroker
from verdictflow.streams.settings import Settings


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


def run_verdictflow(
    *args: object,
    module: str = "verdictflow",
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m verdictflow ARGS`` (or another module) as a user would, output as text."""
    return subprocess.run(
        [sys.executable, "-m", module, *map(str, args)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=check,
    )


def settings_env(settings: Settings) -> dict[str, str]:
    """The environment that makes a child ``verdictflow`` process use ``settings``."""
    env = {**os.environ}
    for name, value in settings.model_dump(exclude_none=True).items():
        env[f"VERDICTFLOW_{name.upper()}"] = str(value)
    return env


class WorkerProcess:
    """A ``verdictflow worker`` child process with its log file."""

    def __init__(self, settings: Settings, log_path: Path, policy: Path | None = None) -> None:
        self.settings = settings
        self.log_path = log_path
        cmd = [sys.executable, "-m", "verdictflow", "worker"]
        if policy is not None:
            cmd += ["--policy", str(policy)]
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(
                cmd, env=settings_env(settings), stdout=log, stderr=subprocess.STDOUT
            )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def worker_factory(tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    started: list[WorkerProcess] = []

    def start(settings: Settings, policy: Path | None = None) -> WorkerProcess:
        worker = WorkerProcess(settings, tmp_path / f"worker-{len(started)}.log", policy)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()
