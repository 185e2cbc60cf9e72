"""The worker's OpenTelemetry export of verdicts (``verdictflow worker --otlp-endpoint``).

An :class:`OtlpOutbox` wraps an agent's outbox: it keeps the verdicts the agent sends to
``verdicts.*`` topics and hands them to the exporter when the agent drains, i.e. once Kafka
acknowledged them and before the batch's offsets are committed. So:

- agents are unchanged and stay on the safe-commit path (the wrapper only forwards ``send``
  and ``drain``); scoring never sees the exporter;
- what is exported was delivered to the verdict topics; a delivery failure stops the worker
  before anything of that batch is exported, and the batch is scored and exported again after
  the restart (at-least-once, like the topics: consumers dedupe on ``verdictflow.verdict_id``);
- with no endpoint configured the wrapper is not built at all: no cost when off.

:class:`OtlpExportService` owns one :class:`~verdictflow.monitoring.otlp.VerdictOtlpExporter`
per app and is a dependency of that app, started and stopped with it. The app stops its agents
first (Faust adds them after our dependency, and mode stops children in reverse), so the
exporter is shut down, flushing its queue, after the last batch was handed to it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

import orjson
from mode import Service

from verdictflow.monitoring.otlp import VerdictOtlpExporter
from verdictflow.streams.outbox import Outbox
from verdictflow.streams.topics import VERDICT_TOPICS

logger = logging.getLogger(__name__)

_VERDICT_TOPICS = frozenset(VERDICT_TOPICS)


class OtlpExportService(Service):
    """One app's exporter, shut down (queue flushed) when the app stops."""

    def __init__(self, endpoint: str, service_name: str = "verdictflow") -> None:
        super().__init__()
        self.exporter = VerdictOtlpExporter(endpoint, service_name=service_name)

    async def on_start(self) -> None:
        logger.info("verdicts exported over OTLP to %s", self.exporter.endpoint)

    async def on_stop(self) -> None:
        # Blocking (HTTP in the SDK's thread, bounded by the exporter's timeout): off the loop.
        await asyncio.to_thread(self.exporter.shutdown)
        logger.info(
            "OTLP export stopped: %d verdict events sent, %d dropped, %d skipped",
            self.exporter.exported,
            self.exporter.failed,
            self.exporter.skipped,
        )


class OtlpOutbox:
    """An :class:`~verdictflow.streams.outbox.Outbox` that also exports the verdicts it sent,
    once they are delivered (see the module docstring)."""

    def __init__(self, inner: Outbox, exporter: VerdictOtlpExporter) -> None:
        self._inner = inner
        self._exporter = exporter
        self._verdicts: list[bytes] = []

    async def send(
        self, topic: str, key: str, value: bytes, headers: Mapping[str, bytes] | None = None
    ) -> None:
        await self._inner.send(topic, key, value, headers)
        if topic in _VERDICT_TOPICS:
            self._verdicts.append(value)

    async def drain(self) -> None:
        # Taken before awaiting, as the inner outbox takes its pending deliveries: what is sent
        # while this drain waits belongs to the next drain on both sides.
        verdicts, self._verdicts = self._verdicts, []
        await self._inner.drain()  # raises on a failed delivery: nothing of it is exported
        for value in verdicts:
            try:
                record = orjson.loads(value)
            except orjson.JSONDecodeError:
                logger.warning("verdict record is not JSON; not exported over OTLP")
                continue
            self._exporter.export(record)
