"""Stopping a worker without committing offsets, on failures that are not the input's fault.

Faust acknowledges an event whose agent raised, and ``stream.take_events`` acks its batch in a
``finally`` block, so letting an exception escape an agent would commit offsets of records whose
verdicts were never delivered. When delivery or table state fails (broker gone, producer
timeout), the only at-least-once-safe move is the one a SIGKILL makes: stop now, commit
nothing, and let the supervisor (systemd, Kubernetes, ``verdictflow dev``) restart the worker,
which resumes from the last committed offset. Bad *input* never takes this path: it is
dead-lettered.
"""

from __future__ import annotations

import logging
import os
import sys

logger = logging.getLogger(__name__)

#: EX_TEMPFAIL: a temporary failure; restarting the worker is the remedy.
EXIT_RESTART_ME = 75


def stop_without_commit(where: str, exc: BaseException) -> None:
    """Log why, flush the logs, and exit the process immediately (no offset commit)."""
    logger.critical(
        "%s failed (%s: %s); exiting without committing offsets so the records "
        "are processed again after restart",
        where,
        type(exc).__name__,
        exc,
        exc_info=exc,
    )
    logging.shutdown()
    sys.stderr.flush()
    os._exit(EXIT_RESTART_ME)
