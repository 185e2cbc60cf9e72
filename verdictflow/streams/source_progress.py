"""How far an agent has forwarded each partition of its source topic, as a log-time watermark.

Consistency windows are measured in log time (the Kafka timestamps of the ``answers`` records),
not in the time a worker happens to see them: a group's window is ``[first answer's log time,
+ window_seconds]``, and it closes once every ``answers`` record of its partition up to the end
of the window has been forwarded to the consistency agent. With processing-time windows, a
failover pause (a session timeout, a table recovery) let windows run out while their answers
waited unread in ``answers``: 5 groups of 432 closed short under SIGKILL in one loaded run of
``bench/rebalance_groups.py``, against none without faults.

The watermark of partition *p* is the newest log time the answers agent has forwarded from
*p*, or, when it has forwarded everything the broker holds for *p* (its high-water mark), the
worker's clock less :attr:`idle_lag` (records are stamped by their producer's clock, and the
high-water mark is as old as the last fetch). It is ``None`` (nothing closes) while the
partition is not assigned to this worker or nothing is known of it yet.

Answers and the internal groups topic are keyed by request and co-partitioned, so the worker
that owns a group's internal partition owns its ``answers`` partition too and knows its
watermark. Forwarded messages are delivered before the progress that covers them is recorded,
and a close message carries the watermark it was decided on, so every answer that the
watermark covers is ahead of the close message in the group's partition (see
:mod:`verdictflow.agents.consistency`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from faust.types import TP

from verdictflow.streams.records import Record

logger = logging.getLogger(__name__)


class SourceProgress:
    """Forwarding progress of one source topic, per partition, on this worker."""

    def __init__(self, app: Any, topic: str, *, idle_lag: float) -> None:
        self.app = app
        self.topic = topic
        self.idle_lag = idle_lag
        self._next_offset: dict[int, int] = {}
        self._log_time: dict[int, float] = {}

    def forwarded(self, records: Iterable[Record]) -> None:
        """Record that ``records`` were processed and their outputs delivered."""
        for record in records:
            if record.partition is None or record.offset is None:
                continue
            p = record.partition
            self._next_offset[p] = max(self._next_offset.get(p, 0), record.offset + 1)
            if record.timestamp is not None:
                self._log_time[p] = max(self._log_time.get(p, record.timestamp), record.timestamp)

    def watermark(self, partition: int, now: float) -> float | None:
        """Log time up to which partition ``partition`` has been forwarded, or None."""
        consumer = getattr(self.app, "consumer", None)
        tp = TP(self.topic, partition)
        try:
            if consumer is None or tp not in consumer.assignment():
                return None
            highwater = consumer.highwater(tp)
            committed = getattr(consumer, "committed_offset", lambda tp: None)(tp)
        except Exception:  # no consumer yet (startup, test context): nothing is known
            logger.debug("no consumer state for %s", tp, exc_info=True)
            return None
        done = max(self._next_offset.get(partition, 0), committed or 0)
        if highwater is not None and done >= highwater:
            return now - self.idle_lag
        return self._log_time.get(partition)
