"""A real OTLP/HTTP logs receiver for tests: an HTTP server on 127.0.0.1 (a free port, in a
thread) that takes ``POST /v1/logs``, decodes the protobuf body with the OTLP protos'
``ExportLogsServiceRequest`` and keeps every log record, decoded to plain Python.

It stands in for an OpenTelemetry Collector, so tests check what actually crosses the wire
(event name, attribute names and values), not what our code handed to the SDK::

    with otlp_receiver() as receiver:
        exporter = VerdictOtlpExporter(receiver.endpoint)
        ...
        records = receiver.wait_for(3, timeout=10)
        assert records[0]["event_name"] == "gen_ai.evaluation.result"

``fail_status`` makes it answer every request with that HTTP status instead (a collector that
rejects data), to test failure handling without waiting for connection timeouts.
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

LOGS_PATH = "/v1/logs"


@dataclass
class Receiver:
    """What the receiver got. ``records``: one dict per log record, in arrival order, with
    ``event_name``, ``body``, ``attributes`` (name -> value), ``severity_number``,
    ``time_unix_nano``, ``resource`` (resource attributes) and ``scope`` (instrumentation
    scope name)."""

    endpoint: str
    records: list[dict[str, Any]] = field(default_factory=list)
    #: Requests answered (any path, any status).
    requests: int = 0
    #: Answer every request with this HTTP status instead of accepting it (None: accept).
    fail_status: int | None = None
    _cond: threading.Condition = field(default_factory=threading.Condition, repr=False)

    def wait_for(self, n: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """A copy of the records once there are at least ``n``; TimeoutError after
        ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.records) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"OTLP receiver got {len(self.records)} log records, wanted {n}, "
                        f"in {timeout} s ({self.requests} requests)"
                    )
                self._cond.wait(left)
            return list(self.records)

    def _add(self, records: list[dict[str, Any]]) -> None:
        with self._cond:
            self.records.extend(records)
            self._cond.notify_all()


def any_value(value: AnyValue) -> Any:
    """An OTLP ``AnyValue`` as plain Python (lists for arrays, dicts for key-value lists)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return key_values(value.kvlist_value.values)
    return getattr(value, kind)


def key_values(pairs: Any) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in pairs if isinstance(kv, KeyValue)}


def decode_logs(body: bytes) -> list[dict[str, Any]]:
    """Every log record of an OTLP ``ExportLogsServiceRequest``, flattened."""
    request = ExportLogsServiceRequest()
    request.ParseFromString(body)
    out = []
    for resource_logs in request.resource_logs:
        resource = key_values(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                out.append(
                    {
                        "event_name": record.event_name,
                        "body": any_value(record.body) if record.HasField("body") else None,
                        "attributes": key_values(record.attributes),
                        "severity_number": record.severity_number,
                        "time_unix_nano": record.time_unix_nano,
                        "resource": resource,
                        "scope": scope_logs.scope.name,
                    }
                )
    return out


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with receiver._cond:
                receiver.requests += 1
            if receiver.fail_status is not None:
                self._reply(receiver.fail_status, b"rejected by the test receiver")
                return
            if self.path != LOGS_PATH:
                self._reply(404, b"not found")
                return
            encoding = (self.headers.get("Content-Encoding") or "").lower()
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            try:
                records = decode_logs(body)
            except Exception as exc:  # a body that is not OTLP: the client is broken
                self._reply(400, f"not an ExportLogsServiceRequest: {exc}".encode())
                return
            receiver._add(records)
            self._reply(
                200, ExportLogsServiceResponse().SerializeToString(), "application/x-protobuf"
            )

        def _reply(self, status: int, body: bytes, content_type: str = "text/plain") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    """A running receiver on 127.0.0.1 and a free port; stopped on exit."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    receiver = Receiver(endpoint=f"http://127.0.0.1:{server.server_address[1]}")
    server.RequestHandlerClass = _handler(receiver)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="otlp-receiver", daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
