"""The Faust app factory: one app, its topics and tables, and the agents registered on it."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

import faust

from verdictflow.evaluators.doc_quality import QualityConfig
from verdictflow.evaluators.kinds import Tier
from verdictflow.evaluators.policy import Policy
from verdictflow.scoring_setup import Scoring, load_scoring
from verdictflow.streams import topic_guard
from verdictflow.streams.durable_table import DurableWritesTable
from verdictflow.streams.embedded_fetch import EmbeddedBrokerApp
from verdictflow.streams.kafka_security import aiokafka_security_kwargs, faust_credentials
from verdictflow.streams.otlp_export import OtlpExportService, OtlpOutbox
from verdictflow.streams.outbox import FaustOutbox, Outbox, OutputProducer
from verdictflow.streams.safe_commit import SafeCommitApp, SafeCommitConsumer
from verdictflow.streams.settings import CpeshSettings, JudgeSettings, QualitySettings, Settings
from verdictflow.streams.source_progress import SourceProgress
from verdictflow.streams.stall_watch import StallWatch
from verdictflow.streams.topic_plan import topic_plan
from verdictflow.streams.topics import ALL_TOPICS, DEAD_LETTERS, full_name
from verdictflow.streams.worker_metrics import MeteredOutbox, WorkerMetrics

logger = logging.getLogger(__name__)


def faust_config(settings: Settings) -> dict[str, Any]:
    """Faust settings. The embedded-broker profile adds the Tansu workarounds (see
    docs/embedded-broker.md)."""
    conf: dict[str, Any] = {
        "broker": settings.broker,
        "store": settings.store,
        "datadir": str(settings.data_dir / settings.app_id),
        "topic_partitions": settings.partitions,
        "topic_replication_factor": settings.replication_factor,
        "processing_guarantee": "at_least_once",
        "consumer_auto_offset_reset": "earliest",
        "web_enabled": settings.web_enabled,
        "web_port": settings.web_port,
        "autodiscover": False,
        "table_standby_replicas": 0 if settings.embedded else 1,
        "Table": DurableWritesTable,  # agents await table writes before acking (durable_table)
    }
    credentials = faust_credentials(settings)
    if credentials is not None:
        conf["broker_credentials"] = credentials
    if settings.embedded:
        # Tansu reports a wrong end offset when a partition's last batch holds several records,
        # which breaks table recovery; one record per batch avoids it. Short session timeouts
        # make a worker ready in ~4 s instead of ~30 s on a single-node dev broker.
        conf.update(
            producer_max_batch_size=1, broker_session_timeout=6, broker_heartbeat_interval=1
        )
    return conf


def declare_topics(app: faust.App, settings: Settings) -> dict[str, Any]:
    """Faust topic objects for every registry topic, raw bytes in and out (we decode ourselves,
    so a malformed record reaches our dead-letter path instead of Faust's codec errors)."""
    return {
        short: app.topic(
            full_name(short, settings.topic_prefix),
            key_type=bytes,
            value_type=bytes,
            key_serializer="raw",
            value_serializer="raw",
            partitions=settings.partitions,
        )
        for short in ALL_TOPICS
    }


def tier_app_id(settings: Settings, tier: Tier) -> str:
    """The app id, hence consumer group, of a tier: the lexical tier keeps the worker's own
    (it holds the tables, the summaries and document-quality agents, as before tiers), the NLP
    tier is ``<app id>-nlp``, the judge tier ``<app id>-judge``."""
    return settings.app_id if tier is Tier.LEXICAL else f"{settings.app_id}-{tier.value}"


def create_app(
    settings: Settings,
    policy: Policy,
    outbox_factory: Callable[[faust.App, Mapping[str, Any]], Outbox] | None = None,
    scoring: Scoring | None = None,
    metrics: WorkerMetrics | None = None,
    tier: Tier = Tier.LEXICAL,
    guard_topics: bool = True,
    quality: QualitySettings | None = None,
    cpesh: CpeshSettings | None = None,
    judge: JudgeSettings | None = None,
) -> faust.App:
    """Build one tier's app (one consumer group).

    The lexical tier: the lexical answers agent, the consistency agent and its table, the
    summaries agent and the document-quality agents. The NLP tier: the NLP answers agent. A
    worker runs one or both (:func:`create_apps`). ``outbox_factory`` builds what agents send
    through from the topic objects; tests pass one that records instead of producing.
    ``metrics``: count inputs, outputs, latency and lag (:mod:`verdictflow.streams.worker_metrics`);
    the caller serves its registry. ``guard_topics``: run the topic guard on this app (one per
    process is enough: it checks the broker, not the app). ``quality``, ``cpesh``: how the
    document-quality agents run and reach the LLM (from the environment when not given; what
    they score with is the policy's ``doc_quality``). ``settings.otlp_endpoint``: every
    verdict this app delivers is also exported as an OpenTelemetry event
    (:mod:`verdictflow.streams.otlp_export`), whatever the outbox.
    """
    from verdictflow.agents import answers, consistency, doc_quality, summaries, traces

    app_id = tier_app_id(settings, tier)
    settings = settings.model_copy(update={"app_id": app_id})
    conf = faust_config(settings)
    Path(conf["datadir"]).mkdir(parents=True, exist_ok=True)
    if metrics is not None:
        conf["monitor"] = metrics.new_monitor(app_id)
    app_class = EmbeddedBrokerApp if settings.embedded else SafeCommitApp
    app = app_class(app_id, **conf)
    app.compacted_topics = frozenset(
        spec.name for spec in topic_plan(settings) if spec.config.get("cleanup.policy") == "compact"
    )
    app.dead_letter_topic = full_name(DEAD_LETTERS, settings.topic_prefix)
    app.client_kwargs = {
        "bootstrap_servers": settings.bootstrap_servers,
        **aiokafka_security_kwargs(settings),
    }
    topics = declare_topics(app, settings)
    if scoring is None:
        scoring = load_scoring(policy, settings.idf_stats)
    ctx = scoring.ctx
    otlp = None
    if settings.otlp_endpoint:
        # Added before Faust's own services (agents), so it stops after them and flushes last.
        otlp = OtlpExportService(settings.otlp_endpoint)
        app.add_dependency(otlp)
    if outbox_factory is None:
        output = OutputProducer(settings)
        app.add_dependency(output)  # started and stopped with the app

        def outbox_factory(app: faust.App, topics: Mapping[str, Any]) -> Outbox:
            return FaustOutbox(app, topics, output)

    def new_outbox() -> Outbox:  # one per sender, so each drains only its own deliveries
        outbox = outbox_factory(app, topics)
        if otlp is not None:
            outbox = OtlpOutbox(outbox, otlp.exporter)
        return outbox if metrics is None else MeteredOutbox(outbox, metrics)

    if metrics is not None:
        _register_lag_timer(app, metrics, app_id)

    if tier is Tier.LEXICAL:
        progress = SourceProgress(
            app, topics["answers"].get_topic_name(), idle_lag=settings.consistency_idle_lag_seconds
        )
        answers.register(app, topics, new_outbox, ctx, settings, scoring.analyzer, tier, progress)
        consistency.register(app, topics, new_outbox, ctx, settings, progress)
        summaries.register(app, topics, new_outbox, ctx, settings)
        traces.register(app, topics, new_outbox, settings)
        doc_quality.register(
            app,
            topics,
            new_outbox,
            settings,
            QualityConfig.of(policy.doc_quality),
            quality or QualitySettings(),
            cpesh or CpeshSettings(),
        )
    elif tier is Tier.JUDGE:
        _register_judge(app, topics, new_outbox, settings, policy, judge, metrics)
        _register_stall_watch(app, metrics, app_id, policy.judge_tier.stall_seconds)
    else:
        answers.register(app, topics, new_outbox, ctx, settings, scoring.analyzer, tier)
    if guard_topics:
        topic_guard.register(app, settings)
    logger.info(
        "app %s (%s tier) on %s, policy digest %s",
        app_id,
        tier,
        settings.broker,
        ctx.config_digest[:12],
    )
    return app


def _register_judge(
    app: faust.App,
    topics: Mapping[str, Any],
    new_outbox: Callable[[], Outbox],
    settings: Settings,
    policy: Policy,
    judge: JudgeSettings | None,
    metrics: WorkerMetrics | None,
) -> None:
    from verdictflow.agents import doc_quality
    from verdictflow.agents import judge as judge_agent
    from verdictflow.evaluators.faithfulness_llm import JudgeContext
    from verdictflow.judge.factory import make_client
    from verdictflow.judge.metrics import JudgeMetrics

    judge_metrics = JudgeMetrics(metrics.registry if metrics is not None else None)
    client = make_client(judge or JudgeSettings(), policy.judge_tier, judge_metrics)
    ctx = JudgeContext(client.backend.name, client.backend.model, policy.faithfulness_llm.threshold)
    store = doc_quality.table_store(QualitySettings())
    judge_agent.register(app, topics, new_outbox, settings, client, ctx, store)


def create_apps(
    settings: Settings,
    policy: Policy,
    metrics: WorkerMetrics | None = None,
    judge: JudgeSettings | None = None,
) -> list[faust.App]:
    """The apps of ``settings.tier`` (``all``: lexical, NLP, and the judge tier when a judge
    backend is configured), sharing one scoring setup."""
    judge = judge or JudgeSettings()
    if settings.tier == "all":
        tiers = [Tier.LEXICAL, Tier.NLP] + ([Tier.JUDGE] if judge.configured else [])
    else:
        tiers = [Tier(settings.tier)]
    scoring = load_scoring(policy, settings.idf_stats)
    if metrics is not None and Tier.NLP in tiers:
        metrics.watch_context_cache(scoring.analyzer.cache)
    return [
        create_app(
            settings,
            policy,
            scoring=scoring,
            metrics=metrics,
            tier=t,
            guard_topics=i == 0,
            judge=judge,
        )
        for i, t in enumerate(tiers)
    ]


def _register_stall_watch(
    app: faust.App, metrics: WorkerMetrics | None, group: str, stall_seconds: float
) -> None:
    """Log and count partitions with pending records and no commit progress (issue 47)."""
    watch = StallWatch(group, stall_seconds)

    @app.timer(min(5.0, stall_seconds / 2), name="vf-stall-watch")  # type: ignore[untyped-decorator]
    async def stall_watch() -> None:
        try:
            consumer = cast(SafeCommitConsumer, app.consumer)
            rows = [
                (tp, consumer.committed_offset(tp), consumer.highwater(tp))
                for tp in consumer.assignment()
                if not consumer._is_changelog_tp(tp)
            ]
            stalled = watch.observe(rows, time.monotonic())
            if metrics is not None:
                metrics.stalled_partitions.labels(group).set(stalled)
        except Exception as exc:  # watching must never stop a worker
            logger.debug("stall watch skipped: %s", exc)


def _register_lag_timer(
    app: faust.App, metrics: WorkerMetrics, group: str, interval: float = 5.0
) -> None:
    """Refresh one group's consumer-lag gauges in the event loop (the consumer is not
    thread-safe)."""

    @app.timer(interval, name="vf-metrics-lag")  # type: ignore[untyped-decorator]
    async def update_lag() -> None:
        try:
            metrics.update_lag(group, set(app.consumer.assignment()))
            metrics.update_consumer(group, cast(SafeCommitConsumer, app.consumer))
        except Exception as exc:  # metrics must never stop a worker
            logger.debug("lag metrics not updated: %s", exc)
