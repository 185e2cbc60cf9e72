"""The OpenTelemetry SDK side of :mod:`verdictflow.monitoring.otlp`, imported only when an
exporter is built (the SDK and the OTLP exporter cost tens of milliseconds to import, and a
process that does not export should not pay for them)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    LogRecordExporter,
    LogRecordExportResult,
)
from opentelemetry.sdk.resources import SERVICE_NAME, Resource

# Failures are reported under the public module's logger, where operators configure it.
logger = logging.getLogger("verdictflow.monitoring.otlp")


class ReportingLogExporter(LogRecordExporter):
    """The SDK's OTLP/HTTP log exporter, counting what it delivers and drops and logging an
    outage once (a warning when export starts failing, info when it recovers) instead of once
    per batch, which the SDK's own logger does at error level.

    ``closing`` (set by the owner before shutting the provider down): once a batch fails after
    it is set, the batches still queued are dropped at once, so a shutdown with the collector
    down is bounded by one batch's timeout.
    """

    def __init__(self, endpoint: str, timeout: float) -> None:
        self.endpoint = endpoint
        self._inner = OTLPLogExporter(endpoint=endpoint, timeout=timeout)
        self._lock = threading.Lock()
        self.exported = 0
        self.failed = 0
        self.failing = False
        self.closing = False
        self._failed_closing = False

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        n = len(batch)
        if self._failed_closing:
            self._count(n, ok=False)
            return LogRecordExportResult.FAILURE
        try:
            result = self._inner.export(batch)
        except Exception as exc:  # the SDK's exporter may raise (see LogRecordExporter)
            logger.debug("OTLP export raised: %r", exc)
            result = LogRecordExportResult.FAILURE
        self._count(n, ok=result is LogRecordExportResult.SUCCESS)
        return result

    def _count(self, n: int, *, ok: bool) -> None:
        with self._lock:
            if ok:
                self.exported += n
                recovered, self.failing = self.failing, False
                if recovered:
                    logger.info("OTLP export to %s works again", self.endpoint)
                return
            self.failed += n
            self._failed_closing = self.closing
            started, self.failing = not self.failing, True
        if started:
            logger.warning(
                "OTLP export to %s failed: %d verdict events dropped; further failures are "
                "logged at debug level until export works again (best effort: the verdict "
                "topics are unaffected)",
                self.endpoint,
                n,
            )
        else:
            logger.debug("OTLP export to %s failed: %d more events dropped", self.endpoint, n)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self._inner.shutdown()  # type: ignore[no-untyped-call]  # untyped in the SDK


def local_logger_provider(exporter: LogRecordExporter, service_name: str) -> LoggerProvider:
    """A logger provider of our own (never the global one) with a batch processor on
    ``exporter``; no exit hook: the owner shuts it down."""
    provider = LoggerProvider(
        resource=Resource.create({SERVICE_NAME: service_name}), shutdown_on_exit=False
    )
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
    return provider
