"""Running a Faust worker for the verdictflow app (used by ``verdictflow worker``)."""

from __future__ import annotations

import asyncio
import logging

import faust

from verdictflow.embedders import make_embedder
from verdictflow.evaluators.policy import load_policy
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.app import create_apps
from verdictflow.streams.broker import wait_for_kafka
from verdictflow.streams.kafka_security import aiokafka_security_kwargs
from verdictflow.streams.settings import QualitySettings, Settings
from verdictflow.streams.table_migration import check_table_layout
from verdictflow.streams.worker_metrics import WorkerMetrics

logger = logging.getLogger(__name__)


def run_worker(settings: Settings) -> None:
    """Validate the policy, declare topics, then run the worker until it is stopped.

    A malformed policy raises :class:`~verdictflow.exceptions.PolicyError` before anything
    connects, so a bad rollout fails at start instead of gating traffic with wrong thresholds;
    table state of an older changelog layout raises
    :class:`~verdictflow.streams.table_migration.TableLayoutError` until it is migrated.
    """
    policy = load_policy(settings.policy)
    if settings.tier != "nlp":  # the docs agent's embedder, too, fails before anything connects
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
    worker = faust.Worker(
        first, *others, loglevel=settings.log_level, quiet=True, redirect_stdouts=False
    )
    disable_spinner(worker)
    worker.execute_from_commandline()


def disable_spinner(worker: faust.Worker) -> None:
    """Turn off Faust's terminal spinner.

    At log level WARNING or above, Faust installs a spinner handler and sets the root logger to
    DEBUG so that the spinner turns on every record: every aiokafka and Faust debug call then
    builds a LogRecord, which cost ~0.9 s of CPU per 20 s of traffic in a profile. A worker
    does not need a spinner.
    """
    worker.spinner = None


async def _prepare(settings: Settings) -> None:
    await wait_for_kafka(
        settings.bootstrap_servers, timeout=60, security=aiokafka_security_kwargs(settings)
    )
    await check_table_layout(settings)  # before Faust creates empty layout-2 changelogs
    await ensure_topics(settings)
