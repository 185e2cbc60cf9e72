"""Running a Faust worker for the verdictflow app (used by ``verdictflow worker``)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading

import faust

from verdictflow.embedders import make_embedder
from verdictflow.evaluators.policy import load_policy
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.app import create_apps
from verdictflow.streams.broker import wait_for_kafka
from verdictflow.streams.gc_tuning import tune_for_throughput
from verdictflow.streams.kafka_security import aiokafka_security_kwargs
from verdictflow.streams.settings import JudgeSettings, QualitySettings, Settings
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
    if settings.tier == "judge" and not JudgeSettings().configured:
        from verdictflow.judge.factory import make_backend

        make_backend(JudgeSettings())  # raises JudgeNotConfiguredError: one line, exit 2
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


class BoundedShutdownWorker(faust.Worker):  # type: ignore[misc]  # faust is untyped
    """A Faust worker whose shutdown on SIGTERM or SIGINT takes at most ``shutdown_seconds``.

    Faust stops its agents, which wait for the batch in hand (a long spaCy batch, a backlog's
    delivery), and Kubernetes sends SIGKILL 30 s after SIGTERM by default. On the signal, a
    timer is armed: if the worker has not exited when it fires, the process exits at once
    (143), abandoning the batch in hand. Nothing is lost: its offsets were not committed
    (results are delivered, then committed), so the next worker redoes it, with the same
    verdict ids, as after a crash (docs/reliability.md)."""

    shutdown_seconds: float = 10.0

    async def on_first_start(self) -> None:
        await super().on_first_start()
        # ``--tier all`` runs one app per tier. Started one after the other (mode's dependency
        # loop), each waited for its own group join (~3 s on the embedded broker) and table
        # registration (~1 s): ~10 s per worker start, paid again at every restart. Side by
        # side they join together; the dependency loop that follows finds them started.
        if self.services:
            await asyncio.gather(*(app.maybe_start() for app in (*self.services, self.app)))
        tune_for_throughput()  # start-up is over: see streams/gc_tuning.py

    def _schedule_shutdown(self, signal_: signal.Signals) -> None:
        if not self._signal_stop_time:
            arm_exit_timer(self.shutdown_seconds, f"{signal_.name} received")
        super()._schedule_shutdown(signal_)


def arm_exit_timer(seconds: float, why: str) -> threading.Timer:
    """Exit the process (143) in ``seconds`` unless it has exited by then."""

    def expire() -> None:
        logger.warning(
            "%s %.0f s ago and still shutting down: exiting now; the batch in hand is redone "
            "after restart",
            why,
            seconds,
        )
        logging.shutdown()
        os._exit(143)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    return timer


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
