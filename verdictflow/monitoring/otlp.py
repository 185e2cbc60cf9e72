"""OpenTelemetry export of verdicts: one ``gen_ai.evaluation.result`` event per verdict, sent
as an OTLP log record over HTTP.

Why events and not metrics or spans: the OpenTelemetry GenAI semantic conventions define the
result of evaluating a model's output as the event ``gen_ai.evaluation.result`` (model file
``model/gen-ai/events.yaml`` of open-telemetry/semantic-conventions-genai, rendered in
``docs/gen-ai/gen-ai-events.md``), so an observability backend that understands those
conventions shows verdictflow's verdicts next to the traces of the calls they judge, joined on
``gen_ai.response.id``.

Two layers:

- :func:`evaluation_event_attributes` is pure: verdict record in, attribute dict out. It is the
  whole mapping, tested on real verdicts, and needs no OpenTelemetry package.
- :class:`VerdictOtlpExporter` sends those attributes through the OpenTelemetry SDK's logs
  pipeline (``LoggerProvider`` + ``BatchLogRecordProcessor`` + the OTLP/HTTP log exporter), all
  local to the instance: verdictflow never installs global providers, so an application that
  embeds it keeps its own telemetry set-up. The SDK is imported when an exporter is built, not
  when this module is, so importing verdictflow stays cheap for everything that does not export.

Delivery is best effort: events wait in a bounded in-memory queue and are sent in batches from
a background thread; when the collector is down a batch is retried until the exporter's
timeout, then dropped and counted (:attr:`VerdictOtlpExporter.failed`), with one warning per
outage. The Kafka verdict topics stay the record of truth.
"""

from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from verdictflow import __version__
from verdictflow.exceptions import VerdictflowError
from verdictflow.settings import http_url

if TYPE_CHECKING:
    from opentelemetry.sdk._logs import LoggerProvider

    from verdictflow.monitoring._otlp_sdk import ReportingLogExporter

logger = logging.getLogger(__name__)

#: What an OpenTelemetry attribute may hold (the subset this mapping produces): never None.
AttributeValue: TypeAlias = str | bool | int | float | Sequence[str]

#: The event name the conventions prescribe ("The event name MUST be gen_ai.evaluation.result").
EVALUATION_RESULT_EVENT = "gen_ai.evaluation.result"

# Attribute names of the gen_ai.evaluation.result event, as the GenAI conventions define them.
# opentelemetry-semantic-conventions ships the same strings in its private ``_incubating``
# module, flagged "Deprecated: Moved to the OpenTelemetry GenAI semantic conventions
# repository"; they are spelled out here so a release that drops them cannot break the export,
# and tests/monitoring/test_otlp.py checks they still equal that package's constants.
GEN_AI_EVALUATION_NAME = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"
GEN_AI_RESPONSE_ID = "gen_ai.response.id"

# verdictflow's own attributes, under its namespace (what the conventions have no name for, and
# what a consumer needs to deduplicate, audit or group verdicts).
VF_VERDICT_ID = "verdictflow.verdict_id"
VF_INPUT_ID = "verdictflow.input_id"
VF_KIND = "verdictflow.kind"
VF_JUDGE = "verdictflow.judge"
VF_THRESHOLD = "verdictflow.threshold"
VF_REASON_CODES = "verdictflow.reason_codes"
VF_CONFIG_DIGEST = "verdictflow.config_digest"
VF_MODEL = "verdictflow.model"
VF_TENANT = "verdictflow.tenant"
VF_GROUP = "verdictflow.group"

#: ``gen_ai.evaluation.explanation`` joins the verdict's reason details with this.
EXPLANATION_SEPARATOR = "; "

#: Where OTLP/HTTP receivers take logs, relative to their base URL (the OTLP specification).
LOGS_PATH = "/v1/logs"

#: Record field -> verdictflow attribute, copied when the field is a non-empty string.
_STRING_FIELDS = (
    ("verdict_id", VF_VERDICT_ID),
    ("input_id", VF_INPUT_ID),
    ("config_digest", VF_CONFIG_DIGEST),
    ("model", VF_MODEL),
    ("tenant", VF_TENANT),
    ("group", VF_GROUP),
)

#: Warn for the first few skipped records, then once every this many (a broken producer must
#: not flood the log).
_SKIP_WARN_FIRST = 10
_SKIP_WARN_EVERY = 1000


class OtlpSetupError(VerdictflowError):
    """OpenTelemetry export cannot start: its packages are missing or the endpoint is not an
    http(s) URL."""


def evaluation_event_attributes(verdict: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """The ``gen_ai.evaluation.result`` attributes of one verdict record (a decoded
    ``Verdict`` or ``JudgeVerdict``).

    - ``gen_ai.evaluation.name``: the verdict kind (``groundedness``, ``consistency``, ...); a
      judge verdict is ``judge.<judge>`` (``judge.twin_lock``), since each judge is its own
      evaluator with its own threshold.
    - ``gen_ai.evaluation.score.value``: the score; absent for a DEFER, whose score is None
      (the input could not be scored, and 0 would read as a real, failing score).
    - ``gen_ai.evaluation.score.label``: the decision in lower case, ``pass``, ``fail`` or
      ``defer`` (the conventions' examples are lower case and ask for low cardinality).
    - ``gen_ai.evaluation.explanation``: the reasons' details joined with ``"; "``.
    - ``gen_ai.response.id``: the verdict's ``input_id``, the id of the answer or summary that
      was judged (the conventions' link to the evaluated completion when there is no span).
    - ``verdictflow.*``: verdict_id (the deduplication key), input_id, kind, judge, threshold,
      reason_codes, config_digest, model, tenant, group.

    Fields that are missing or None are left out: OpenTelemetry attributes cannot be None.
    """
    attributes: dict[str, AttributeValue] = {}
    kind = verdict.get("kind")
    judge = verdict.get("judge")
    if isinstance(kind, str) and kind:
        attributes[VF_KIND] = kind
        name = f"{kind}.{judge}" if kind == "judge" and isinstance(judge, str) and judge else kind
        attributes[GEN_AI_EVALUATION_NAME] = name
    if isinstance(judge, str) and judge:
        attributes[VF_JUDGE] = judge
    score = _number(verdict.get("score"))
    if score is not None:
        attributes[GEN_AI_EVALUATION_SCORE_VALUE] = score
    decision = verdict.get("decision")
    if isinstance(decision, str) and decision:
        attributes[GEN_AI_EVALUATION_SCORE_LABEL] = decision.lower()
    reasons = verdict.get("reasons")
    if isinstance(reasons, Sequence) and not isinstance(reasons, str):
        reasons = [r for r in reasons if isinstance(r, Mapping)]
        details = [r["detail"] for r in reasons if isinstance(r.get("detail"), str) and r["detail"]]
        if details:
            attributes[GEN_AI_EVALUATION_EXPLANATION] = EXPLANATION_SEPARATOR.join(details)
        codes = [r["code"] for r in reasons if isinstance(r.get("code"), str) and r["code"]]
        if codes:
            attributes[VF_REASON_CODES] = codes
    input_id = verdict.get("input_id")
    if isinstance(input_id, str) and input_id:
        attributes[GEN_AI_RESPONSE_ID] = input_id
    threshold = _number(verdict.get("threshold"))
    if threshold is not None:
        attributes[VF_THRESHOLD] = threshold
    for field, attribute in _STRING_FIELDS:
        value = verdict.get(field)
        if isinstance(value, str) and value:
            attributes[attribute] = value
    return attributes


def _number(value: Any) -> float | None:
    """``value`` as a float when it is a real number (bools are not scores)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def logs_url(endpoint: str) -> str:
    """The OTLP/HTTP logs URL for ``endpoint``: ``<base>/v1/logs``, or the URL itself when it
    already ends in ``/v1/logs``.

    The SDK's exporter takes the full signal URL when given one in code (it appends the path
    only to the ``OTEL_EXPORTER_OTLP_ENDPOINT`` base), while operators know the collector's
    base URL (``http://collector:4318``); accepting both avoids a silent 404 either way.
    """
    try:
        url = http_url(endpoint).rstrip("/")
    except ValueError as exc:
        raise OtlpSetupError(f"the OTLP endpoint {exc}") from None
    return url if url.endswith(LOGS_PATH) else url + LOGS_PATH


class VerdictOtlpExporter:
    """Sends verdicts to an OTLP/HTTP collector as ``gen_ai.evaluation.result`` events.

    ``endpoint`` is the collector's OTLP/HTTP base URL (``http://127.0.0.1:4318``) or its
    logs URL (``.../v1/logs``). ``service_name`` becomes the ``service.name`` resource
    attribute. ``timeout`` bounds one batch's delivery, retries included: after it the batch is
    dropped and counted in :attr:`failed`.

    :meth:`export` only queues (the SDK's batch processor sends from its own thread), so a
    scoring loop never waits on the network. Call :meth:`shutdown` before exiting: it sends what
    is queued (the provider is local and registers no exit hook of its own).

    Standard OTLP variables the SDK exporter reads still apply, e.g.
    ``OTEL_EXPORTER_OTLP_LOGS_HEADERS`` (or ``OTEL_EXPORTER_OTLP_HEADERS``) for an auth header.
    """

    def __init__(
        self, endpoint: str, *, service_name: str = "verdictflow", timeout: float = 10.0
    ) -> None:
        self.endpoint = logs_url(endpoint)
        #: Records refused by :meth:`export` (not a mapping, or without kind or score).
        self.skipped = 0
        try:
            _otlp_sdk = importlib.import_module("verdictflow.monitoring._otlp_sdk")
        except ImportError as exc:
            raise OtlpSetupError(
                f"OpenTelemetry export needs the OpenTelemetry SDK and OTLP/HTTP exporter ({exc}): "
                "pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http"
            ) from exc
        self._exporter: ReportingLogExporter = _otlp_sdk.ReportingLogExporter(
            self.endpoint, timeout
        )
        self._provider: LoggerProvider = _otlp_sdk.local_logger_provider(
            self._exporter, service_name
        )
        self._logger = self._provider.get_logger(__name__, __version__)
        self._closed = False

    @property
    def exported(self) -> int:
        """Events the collector accepted."""
        return self._exporter.exported

    @property
    def failed(self) -> int:
        """Events dropped because their batch could not be delivered."""
        return self._exporter.failed

    def export(self, verdict: Mapping[str, Any]) -> None:
        """Queue one verdict record as a ``gen_ai.evaluation.result`` event; never raises.

        A record that is not a mapping or lacks ``kind`` or ``score`` is not a verdict: it is
        skipped with a warning and counted in :attr:`skipped`. (``score`` may be None: a DEFER.)
        """
        if self._closed:
            logger.debug("OTLP exporter shut down; verdict not exported")
            return
        if not isinstance(verdict, Mapping) or "kind" not in verdict or "score" not in verdict:
            self._skip(verdict)
            return
        try:
            self._logger.emit(
                timestamp=time.time_ns(),
                context=span_context_of(verdict),
                event_name=EVALUATION_RESULT_EVENT,
                attributes=evaluation_event_attributes(verdict),
            )
        except Exception:  # export is best effort: the caller's work must go on
            logger.exception(
                "could not queue verdict %r for OTLP export", verdict.get("verdict_id")
            )

    def _skip(self, record: object) -> None:
        self.skipped += 1
        n = self.skipped
        if n <= _SKIP_WARN_FIRST or n % _SKIP_WARN_EVERY == 0:
            what = (
                f"a record without {', '.join(k for k in ('kind', 'score') if k not in record)}"
                if isinstance(record, Mapping)
                else f"a {type(record).__name__}"
            )
            logger.warning("not a verdict, not exported over OTLP: %s (%d skipped so far)", what, n)

    def force_flush(self, timeout_millis: int = 10000) -> bool:
        """Send everything queued now, blocking; True when every batch sent during the flush was
        accepted by the collector.

        The SDK does not enforce ``timeout_millis`` on a batch already being sent (each batch
        is bounded by the exporter's ``timeout``), so this can take longer when the collector
        is unreachable.
        """
        if self._closed:
            return False
        failed_before = self._exporter.failed
        try:
            flushed = bool(self._provider.force_flush(timeout_millis))
        except Exception:
            logger.exception("OTLP flush to %s failed", self.endpoint)
            return False
        return flushed and self._exporter.failed == failed_before

    def shutdown(self) -> None:
        """Send what is queued, then stop the background thread; later exports are ignored.

        Idempotent. When a batch fails during shutdown (collector down), the batches still
        queued are dropped without trying, so shutting down waits at most about one
        ``timeout``, not one per queued batch.
        """
        if self._closed:
            return
        self._closed = True
        self._exporter.closing = True
        try:
            self._provider.shutdown()
        except Exception:
            logger.exception("OTLP exporter shutdown failed")
        if self._exporter.failed:
            logger.warning(
                "OTLP export to %s: %d verdict events dropped (%d sent)",
                self.endpoint,
                self._exporter.failed,
                self._exporter.exported,
            )


def span_context_of(verdict: Mapping[str, Any]) -> Any:
    """An OpenTelemetry context holding the verdict's trace and span (an answer assembled from
    a trace: ``verdictflow ingest``), so the exported event carries their ids and a backend
    shows it on the span; None when the verdict has none (or malformed ones)."""
    from opentelemetry import trace

    trace_id, span_id = verdict.get("trace_id"), verdict.get("span_id")
    if not isinstance(trace_id, str) or not isinstance(span_id, str):
        return None
    try:
        parent = trace.SpanContext(
            trace_id=int(trace_id, 16),
            span_id=int(span_id, 16),
            is_remote=True,
            trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
        )
    except ValueError:
        return None
    if not parent.is_valid:
        return None
    return trace.set_span_in_context(trace.NonRecordingSpan(parent))
