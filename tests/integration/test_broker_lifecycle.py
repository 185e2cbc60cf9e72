"""The embedded broker starts, serves, and never outlives the process that started it."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time

import pytest

from verdictflow.streams.broker import EmbeddedBroker, free_port, wait_for_kafka

pytestmark = pytest.mark.broker


def tansu_running(port: int) -> bool:
    found = subprocess.run(["pgrep", "-f", f"tansu broker .*127.0.0.1:{port}"], capture_output=True)
    return found.returncode == 0


def wait_gone(port: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while tansu_running(port) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not tansu_running(port)


def test_context_manager_starts_and_stops():
    with EmbeddedBroker() as broker:
        asyncio.run(wait_for_kafka(broker.bootstrap, timeout=5))
        assert broker.is_running()
        port = broker.port
    assert wait_gone(port)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_broker_command_leaves_no_orphan(sig):
    port = free_port()
    cmd = [sys.executable, "-m", "verdictflow", "broker", "--port", str(port)]
    parent = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        asyncio.run(wait_for_kafka(f"127.0.0.1:{port}", timeout=30))
        assert tansu_running(port)
        parent.send_signal(sig)
        parent.wait(10)
        assert wait_gone(port), f"tansu outlived its parent after {sig.name}"
    finally:
        parent.kill()
