"""Runtime settings, read once at the entry point (env prefix ``VERDICTFLOW_``) and passed in.

Nothing below the entry point reads ``os.environ``: every environment variable name lives here.
Settings here change *how* the pipeline runs; everything that can change a verdict lives in the
policy file instead, whose digest goes into each verdict.
"""

from __future__ import annotations

import os
from ipaddress import ip_address
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from verdictflow.nlp import DEFAULT_VOCAB_LIMIT

DEFAULT_BROKER = "kafka://127.0.0.1:9092"


def http_url(endpoint: str) -> str:
    """``endpoint`` stripped, when it is an ``http(s)://host`` URL; ValueError otherwise. The
    one check of a collector URL: settings run it at start, :func:`logs_url` before sending."""
    url = endpoint.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"must be an http(s) URL such as http://127.0.0.1:4318, not {endpoint!r}")
    return url


class Settings(BaseSettings):
    """All knobs of workers and tools. Frozen: build a new one with ``model_copy(update=...)``."""

    model_config = SettingsConfigDict(env_prefix="VERDICTFLOW_", frozen=True, extra="ignore")

    broker: str = DEFAULT_BROKER
    broker_profile: Literal["auto", "embedded", "kafka"] = "auto"
    topic_prefix: str = "vf."
    app_id: str = "verdictflow"
    partitions: Annotated[int, Field(ge=1, le=10_000)] = 4
    replication_factor: Annotated[int, Field(ge=1)] = 1
    store: str = "memory://"
    data_dir: Path = Path(".verdictflow")
    #: Bytes of context evidence indexes kept in ``data_dir/context-indexes.sqlite3`` across
    #: restarts (NLP tier and ``eval answers``; oldest out first); 0 keeps them in memory only.
    context_store_bytes: Annotated[int, Field(ge=0)] = 512 * 1024 * 1024
    policy: Path | None = None
    #: Background term statistics for relevance: a file from ``verdictflow build-idf``,
    #: ``default`` (the shipped file) or ``none`` (every term weighs 1).
    idf_stats: str = "default"
    max_event_bytes: Annotated[int, Field(ge=1024)] = 1_000_000
    #: Bytes of one record batch of verdicts (``streams/outbox.py``): at most the output
    #: topics' ``max.message.bytes`` (Kafka's default 1,048,588); lower it for a cluster set
    #: lower. 16 KiB, aiokafka's default, cost the lexical tier a broker round trip per ~20
    #: verdicts.
    output_batch_bytes: Annotated[int, Field(ge=16 * 1024, le=1024 * 1024)] = 256 * 1024
    #: Lexemes the spaCy pipeline may gather before it is loaded afresh between batches
    #: (``verdictflow.nlp.parsing_batch``: memory bounded on ever-new text); 0: no limit.
    spacy_vocab_limit: Annotated[int, Field(ge=0)] = DEFAULT_VOCAB_LIMIT
    batch_size: Annotated[int, Field(ge=1, le=10_000)] = 256
    batch_window_seconds: Annotated[float, Field(gt=0, le=10)] = 0.05
    #: Which tiers this worker runs, each in its own consumer group: ``lexical``
    #: (groundedness, relevance, completeness, consistency; plus summaries and document
    #: quality), ``nlp`` (hallucination and faithfulness, spaCy), ``judge`` (the judge tier,
    #: with a backend: JudgeSettings), or ``all`` (the first two, and the judge tier when a
    #: backend is configured, in one process).
    tier: Literal["lexical", "nlp", "judge", "all"] = "all"
    consistency_tick_seconds: Annotated[float, Field(gt=0, le=3600)] = 1.0
    #: Trace assembly (docs/getting-traffic-in.md): a trace is assembled once its root span
    #: ended and this long passed without a new span ...
    trace_quiet_seconds: Annotated[float, Field(gt=0, le=3600)] = 2.0
    #: ... or this long after its first span; its entry is then kept (spans dropped) this long.
    trace_max_age_seconds: Annotated[float, Field(gt=0, le=86_400)] = 60.0
    trace_retention_seconds: Annotated[float, Field(gt=0, le=86_400 * 7)] = 600.0
    #: The span, root-span or resource attribute that names an answer's tenant.
    trace_tenant_attribute: str | None = "tenant.id"
    consistency_forget_seconds: Annotated[float, Field(gt=0)] = 600.0
    #: When the answers agent has read everything the broker holds for a partition, that
    #: partition's window watermark is the clock less this: allowance for producer clocks
    #: and for records appended since the last fetch (streams/source_progress.py).
    consistency_idle_lag_seconds: Annotated[float, Field(ge=0, le=3600)] = 2.0
    #: How often a worker checks that the broker still has every registry topic (and declares
    #: the missing ones: a broker restarted with empty storage comes back without them).
    topic_check_seconds: Annotated[float, Field(gt=0, le=3600)] = 5.0
    #: At most this long from SIGTERM to exit: a worker then abandons the batch in hand (it
    #: is redone after restart). ``VERDICTFLOW_SHUTDOWN_SECONDS``.
    shutdown_seconds: Annotated[float, Field(gt=0, le=600)] = 10.0
    web_enabled: bool = False
    web_port: int = 6066
    log_level: str = "info"
    #: Worker Prometheus metrics on this port (0: off). ``verdictflow worker --metrics-port``.
    metrics_port: Annotated[int, Field(ge=0, le=65535)] = 0
    metrics_host: str = "127.0.0.1"
    #: Bearer token of the metrics servers (worker ``/metrics``, ``verdictflow monitor``):
    #: ``VERDICTFLOW_METRICS_TOKEN``. Needed to bind beyond loopback (verdictflow/web/listeners.py).
    metrics_token: SecretStr | None = None
    #: The retriever's token (``VERDICTFLOW_API_TOKEN``), which the console's search proxy
    #: sends upstream, and the console's own when ``console_token`` is unset.
    api_token: SecretStr | None = None
    #: The console's token (``VERDICTFLOW_CONSOLE_TOKEN``; default: ``api_token``).
    console_token: SecretStr | None = None
    #: How long a console login lasts (``VERDICTFLOW_CONSOLE_SESSION_SECONDS``), and whether
    #: its cookie is ``Secure`` over plain HTTP, behind a TLS-terminating proxy
    #: (``VERDICTFLOW_CONSOLE_SECURE_COOKIE``).
    console_session_seconds: Annotated[int, Field(ge=60, le=30 * 86_400)] = 12 * 3600
    console_secure_cookie: bool = False
    #: The console's named users and roles (``VERDICTFLOW_CONSOLE_USERS``: a users file of
    #: hashed tokens, docs/review-loop.md); when set, each user logs in with their own token.
    console_users: Path | None = None
    #: ``verdictflow ingest``'s token (``VERDICTFLOW_INGEST_TOKEN``; default: ``api_token``).
    ingest_token: SecretStr | None = None
    #: ``verdictflow notify``'s webhooks (``VERDICTFLOW_ALERT_WEBHOOKS``: ``shape=url`` items,
    #: comma-separated; docs/alerts-out.md) and the bearer token its ``json`` webhooks get
    #: (``VERDICTFLOW_ALERT_WEBHOOK_TOKEN``). Secret: webhook URLs are credentials.
    alert_webhooks: SecretStr | None = None
    alert_webhook_token: SecretStr | None = None
    #: OTLP/HTTP collector (``http://host:4318``, or its ``.../v1/logs`` URL) that receives
    #: every verdict as a ``gen_ai.evaluation.result`` event; None (or empty): off.
    #: ``verdictflow worker --otlp-endpoint``, see docs/operations.md.
    otlp_endpoint: str | None = None
    # Kafka client security, passed to Faust and to every raw aiokafka client alike
    # (see verdictflow/streams/kafka_security.py and deploy/README.md).
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = "PLAIN"
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    #: CA bundle to verify the brokers (default: the system's trust store).
    ssl_cafile: Path | None = None
    #: Client certificate and key, for clusters that authenticate clients by mTLS.
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None

    @field_validator("otlp_endpoint")
    @classmethod
    def _otlp_endpoint_is_http(cls, value: str | None) -> str | None:
        """Refuse a malformed collector URL when settings are built, before the worker
        connects to anything, rather than failing every export later."""
        if value is None or not value.strip():
            return None
        return http_url(value)

    @property
    def console_secret(self) -> str | None:
        """The token the console asks for: its own, else the API's; None when neither is set
        (an empty value counts as unset)."""
        for secret in (self.console_token, self.api_token):
            if secret is not None and secret.get_secret_value():
                return secret.get_secret_value()
        return None

    @property
    def ingest_secret(self) -> str | None:
        """The token ``ingest`` asks for: its own, else the API's; None when neither is set."""
        for secret in (self.ingest_token, self.api_token):
            if secret is not None and secret.get_secret_value():
                return secret.get_secret_value()
        return None

    @property
    def metrics_secret(self) -> str | None:
        """The metrics servers' token, None when unset or empty."""
        if self.metrics_token is None:
            return None
        return self.metrics_token.get_secret_value() or None

    @property
    def bootstrap_servers(self) -> str:
        """``host:port[,host:port]`` for aiokafka, from a ``kafka://`` URL or a bare list."""
        return ",".join(part.split("://", 1)[-1] for part in self.broker.split(",") if part.strip())

    @property
    def embedded(self) -> bool:
        """Whether to apply the embedded-broker (Tansu) workarounds.

        ``auto`` means: yes when every broker address is on loopback, where the embedded broker
        runs; a production cluster never is. The workarounds (one record per producer batch,
        short session timeout) are correct on Kafka too, only slower.
        """
        if self.broker_profile != "auto":
            return self.broker_profile == "embedded"
        return all(_is_loopback(h) for h in self.bootstrap_servers.split(","))


def _is_loopback(hostport: str) -> bool:
    host = urlsplit("//" + hostport).hostname or ""
    if host == "localhost":
        return True
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False


#: Score-changing document-quality knobs that were environment variables before they moved to
#: the policy's ``doc_quality`` section: setting one now is refused, not silently ignored.
MOVED_TO_POLICY = ("W_TEXT", "W_GRAPH", "W_DUP", "W_CPESH", "KDUP", "DUP_THRESHOLD", "USE_CPESH")


class QualitySettings(BaseSettings):
    """How the document-quality agents run (env prefix ``VERDICTFLOW_QUALITY_``). What changes
    a score (weights, ``kdup``, the duplicate threshold, CPESH on or off) is the policy's
    ``doc_quality`` section instead, under its digest."""

    model_config = SettingsConfigDict(
        env_prefix="VERDICTFLOW_QUALITY_", frozen=True, extra="ignore"
    )
    #: Dimension of document vectors; documents without one are embedded at this dimension.
    dim: Annotated[int, Field(ge=8)] = 384
    #: ``auto``: RocksDB (rocksdict) when importable, else memory; or any Faust store URL.
    store: str = "auto"
    #: How long an agent waits for its duplicate index to catch up with ``docs`` before it
    #: scores with what it has (and logs a warning).
    sync_timeout_seconds: Annotated[float, Field(gt=0)] = 30.0
    #: FAISS OpenMP threads in the worker. The stream searches one vector at a time, where
    #: OpenMP only adds start-up and spin-wait costs: with 2 threads on a busy 2-core machine a
    #: 5k-vector search took 9.4 ms instead of 0.37 ms (measured, see docs/benchmarks.md).
    faiss_threads: Annotated[int, Field(ge=1, le=256)] = 1
    #: Embedder of documents that arrive without a vector (and of CPESH's answers):
    #: ``hashing`` (offline default) or ``sentence-transformers`` (extra ``[st]``: the packaged
    #: all-MiniLM-L6-v2, or the model directory in ``LNSP_EMBED_MODEL_DIR``). Its identity
    #: goes into every DocQuality row's ``config_digest``.
    embedder: Literal["hashing", "sentence-transformers"] = "hashing"
    embed_model_dir: str | None = Field(
        None, validation_alias=AliasChoices("LNSP_EMBED_MODEL_DIR", "embed_model_dir")
    )

    @model_validator(mode="after")
    def _refuse_moved_knobs(self) -> QualitySettings:
        moved = sorted(
            f"VERDICTFLOW_QUALITY_{name}"
            for name in MOVED_TO_POLICY
            if f"VERDICTFLOW_QUALITY_{name}" in os.environ
        )
        if moved:
            raise ValueError(
                f"{', '.join(moved)} moved to the policy file: set doc_quality."
                f"{moved[0].removeprefix('VERDICTFLOW_QUALITY_').lower()} (and the others) "
                "there, so the policy's digest covers them (docs/document-quality.md)"
            )
        return self


class CpeshSettings(BaseSettings):
    """The local LLM endpoint for the CPESH margin; names from spec 004 (``LNSP_``)."""

    model_config = SettingsConfigDict(env_prefix="LNSP_", frozen=True, extra="ignore")

    llm_endpoint: str = "http://127.0.0.1:11434"
    llm_model: str = "llama3.1:8b"
    llm_timeout_seconds: Annotated[float, Field(gt=0)] = 20.0
    llm_concurrency: Annotated[int, Field(ge=1, le=256)] = 4
    llm_retries: Annotated[int, Field(ge=0, le=10)] = 2


class JudgeSettings(BaseSettings):
    """The judge tier's backend (env prefix ``VERDICTFLOW_JUDGE_``; issue 29): an
    OpenAI-compatible endpoint (``url``, ``model``, ``api_key``) or a local cross-encoder
    directory (``model_dir``). What escalates and the budget are the policy's ``judge_tier``.
    The API key is a secret: never logged, never in a verdict."""

    model_config = SettingsConfigDict(env_prefix="VERDICTFLOW_JUDGE_", frozen=True, extra="ignore")

    url: str | None = None
    model: str | None = None
    api_key: SecretStr | None = None
    model_dir: str | None = None
    timeout_seconds: Annotated[float, Field(gt=0, le=600)] = 60.0
    max_attempts: Annotated[int, Field(ge=1, le=20)] = 5
    breaker_failures: Annotated[int, Field(ge=1, le=1000)] = 5
    breaker_reset_seconds: Annotated[float, Field(gt=0, le=3600)] = 30.0
    #: Threads of the cross-encoder (one worker process; more workers for more throughput).
    threads: Annotated[int, Field(ge=1, le=64)] = 1

    @model_validator(mode="after")
    def _one_backend(self) -> JudgeSettings:
        if self.url and self.model_dir:
            raise ValueError("give VERDICTFLOW_JUDGE_URL or VERDICTFLOW_JUDGE_MODEL_DIR, not both")
        if self.url and not self.model:
            raise ValueError("VERDICTFLOW_JUDGE_URL needs VERDICTFLOW_JUDGE_MODEL")
        return self

    @property
    def configured(self) -> bool:
        return bool(self.url or self.model_dir)
