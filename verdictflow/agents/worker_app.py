"""The worker's composition root: one Faust app per tier, its topics and tables, and each
tier's agents registered on it (:func:`create_apps`), and the worker that runs them
(:func:`run_worker`). Nothing below ``agents/`` imports it: ``streams/`` is the Kafka and
Faust plumbing these apps are built from."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, cast

import faust

from verdictflow import compiled_scorers
from verdictflow.embedders import make_embedder
from verdictflow.evaluators.doc_quality import QualityConfig
from verdictflow.evaluators.kinds import Tier
from verdictflow.evaluators.policy import Policy, load_policy
from verdictflow.monitoring.otlp_export import OtlpExportService, OtlpOutbox
from verdictflow.scoring_setup import Scoring, load_scoring
from verdictflow.settings import CpeshSettings, JudgeSettings, QualitySettings, Settings
from verdictflow.streams import topic_guard
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.broker import wait_for_kafka
from verdictflow.streams.embedded_fetch import EmbeddedBrokerApp
from verdictflow.streams.faust_app import declare_topics, faust_config
from verdictflow.streams.kafka_security import aiokafka_security_kwargs
from verdictflow.streams.outbox import FaustOutbox, Outbox, OutputProducer
from verdictflow.streams.safe_commit import SafeCommitApp, SafeCommitConsumer
from verdictflow.streams.source_progress import SourceProgress
from verdictflow.streams.stall_watch import StallWatch
from verdictflow.streams.table_migration import check_table_layout
from verdictflow.streams.topic_plan import topic_plan
from verdictflow.streams.topics import DEAD_LETTERS, full_name
from verdictflow.streams.worker import BoundedShutdownWorker, disable_spinner
from verdictflow.streams.worker_metrics import MeteredOutbox, WorkerMetrics

logger = logging.getLogger(__name__)


def tier_app_id(settings: Settings, tier: Tier) -> str:
    """The app id, hence consumer group, of a tier: the lexical tier keeps the worker's own
    (it holds the tables, the summaries and document-quality agents, as before tiers), the NLP
    tier is ``<app id>-nlp``, the judge tier ``<app id>-judge``."""
    return settings.app_id if tier is Tier.LEXICAL else f"{settings.app_id}-{tier.value}"


def _worker_scoring(policy: Policy, settings: Settings) -> Scoring:
    """The worker's scoring setup: its IDF statistics, and context indexes kept in its data
    dir's store (``VERDICTFLOW_CONTEXT_STORE_BYTES``)."""
    return load_scoring(
        policy, settings.idf_stats, data_dir=settings.data_dir,
        store_bytes=settings.context_store_bytes,
    )  # fmt: skip


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
    (:mod:`verdictflow.monitoring.otlp_export`), whatever the outbox.
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
        scoring = _worker_scoring(policy, settings)
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
        summaries.register(
            app, topics, new_outbox, ctx, settings,
            analyzer=partial(summaries.summary_analyzer, store=scoring.analyzer.store),
        )  # fmt: skip
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
        "app %s (%s tier) on %s, policy digest %s, lexical scorers %s",
        app_id,
        tier,
        settings.broker,
        ctx.config_digest[:12],
        compiled_scorers.status().describe(),
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
    from verdictflow.agents import judge_tier as judge_agent
    from verdictflow.evaluators.summary_judges.rubric_verdicts import RubricContext
    from verdictflow.judge_tier.factory import judge_context, make_client
    from verdictflow.judge_tier.metrics import JudgeMetrics
    from verdictflow.nlp import installed_pipeline_version

    judge_metrics = JudgeMetrics(metrics.registry if metrics is not None else None)
    client = make_client(judge or JudgeSettings(), policy.judge_tier, judge_metrics)
    ctx = judge_context(client.backend, policy.faithfulness_llm.threshold)
    rubric = RubricContext(
        client.backend.name, client.backend.model, policy.judge, installed_pipeline_version()
    )
    store = doc_quality.table_store(QualitySettings())
    judge_agent.register(app, topics, new_outbox, settings, client, ctx, store, rubric)


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
    scoring = _worker_scoring(policy, settings)
    if metrics is not None and Tier.NLP in tiers:
        metrics.watch_context_cache(scoring.analyzer.cache, scoring.analyzer.store)
    if metrics is not None:  # the NLP tier, and the summaries agent of the lexical tier, parse
        metrics.watch_spacy()
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


def run_worker(settings: Settings) -> None:
    """Validate the policy, declare topics, then run the worker until it is stopped.

    A malformed policy raises :class:`~verdictflow.exceptions.PolicyError` before anything
    connects, so a bad rollout fails at start instead of gating traffic with wrong thresholds;
    table state of an older changelog layout raises
    :class:`~verdictflow.streams.table_migration.TableLayoutError` until it is migrated.
    """
    policy = load_policy(settings.policy)
    if settings.tier == "judge" and not JudgeSettings().configured:
        from verdictflow.judge_tier.factory import make_backend

        make_backend(JudgeSettings())  # the shipped checker; with none, one line and exit 2
    if settings.tier in ("lexical", "all"):  # the docs agent's embedder fails before connecting
        quality = QualitySettings()
        make_embedder(quality.embedder, quality.dim, quality.embed_model_dir)
    asyncio.run(_prepare(settings))
    asyncio.set_event_loop(asyncio.new_event_loop())
    metrics = None
    if settings.metrics_port:
        metrics = WorkerMetrics(settings.topic_prefix)
        metrics.serve(settings.metrics_port, settings.metrics_host, settings.metrics_secret)
    # One app per tier (its own consumer group); the first runs the worker, the others are
    # started and stopped with it, in the same event loop.
    first, *others = create_apps(settings, policy, metrics=metrics)
    worker = BoundedShutdownWorker(
        first, *others, loglevel=settings.log_level, quiet=True, redirect_stdouts=False
    )
    worker.shutdown_seconds = settings.shutdown_seconds
    disable_spinner(worker)
    worker.execute_from_commandline()


async def _prepare(settings: Settings) -> None:
    await wait_for_kafka(
        settings.bootstrap_servers, timeout=60, security=aiokafka_security_kwargs(settings)
    )
    await check_table_layout(settings)  # before Faust creates empty layout-2 changelogs
    await ensure_topics(settings)
