"""The Faust worker a verdictflow process runs (its shutdown bound, no spinner); the apps it
runs are composed in :mod:`verdictflow.agents.worker_app`."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading

import faust

from verdictflow.gc_tuning import tune_for_throughput

logger = logging.getLogger(__name__)


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
        tune_for_throughput()  # start-up is over: see gc_tuning.py

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
