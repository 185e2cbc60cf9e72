"""Faust's worker consumer, made never to commit past a record that no agent processed.

At-least-once rests on one rule: a partition's committed offset never passes a record whose
results were not delivered. faust-streaming 0.15.3 breaks it in two ways, both measured in the
SIGKILL test (``tests/integration/test_worker_kill.py``) with a patch that logged Faust's
commit decisions; a worker killed after such a commit lost the records for good (CI: the five
verdicts of one answer missing, every offset of ``answers`` committed).

1. **Off-by-one head check.** Faust keeps the committed offset as Kafka does, the *next* offset
   to process, and commits the first run of consecutive acked offsets unless that run starts
   *more than one* past it (``min(acked) - committed > 1`` in ``Consumer._new_offset``). When
   the record at the committed position was never acked but the next one was, it committed
   past it (logged: ``committed=2150 first_acked=2151 -> 2321``).
2. **Bogus gaps.** When the fetch loop sees an offset jump it counts the skipped offsets as
   acked (a "gap", meant for compaction and transaction markers). After a rebalance or a
   restart a record fetched before the seek to the committed offsets can arrive after it, so the
   jump is not a hole: the skipped records exist, and when they are fetched again Faust drops
   them as already read (logged: gap ``887..908`` right after "Seek stream partitions to
   committed offsets", then ``DROPPED MESSAGE ROFF``).

:class:`SafeCommitConsumer` commits only a run of acked offsets that starts exactly at the
committed position, and records no gaps. The records Faust dropped are still unprocessed and
would now hold the partition's commits back, so when the head record has been missing for a
commit interval (processing is in order, so a missing head is a lost record, not a slow one)
the consumer seeks the partition back to it: the records after it are processed twice, which
verdict ids make harmless. After :data:`MAX_REREADS` re-reads of the same head the offset is
taken to be a real hole (a transactional producer's marker) and skipped, with an error logged.
"""

from __future__ import annotations

import bisect
import logging
import time
from collections.abc import Iterable
from typing import Any

import faust
from faust.transport.drivers import aiokafka as faust_aiokafka
from faust.utils.functional import consecutive_numbers

logger = logging.getLogger(__name__)

#: Re-reads of one missing head record before its offset is taken to be a real hole.
MAX_REREADS = 3


class SafeCommitConsumer(faust_aiokafka.Consumer):  # type: ignore[misc]
    """Faust's aiokafka consumer with a commit rule that cannot skip an unprocessed record."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: tp -> (missing head offset, monotonic time first seen missing, re-reads so far)
        self._missing_heads: dict[Any, tuple[int, float, int]] = {}
        #: Committed offsets of partitions being revoked: Faust forgets them before it waits
        #: for the streams to finish and commits what they ack, which must still be checked.
        self._revoking: dict[Any, int] = {}

    async def on_partitions_revoked(self, revoked: set[Any]) -> None:
        self._revoking = {
            tp: offset for tp in revoked if (offset := self._committed_offset.get(tp)) is not None
        }
        try:
            await super().on_partitions_revoked(revoked)
        finally:
            self._revoking = {}

    def _new_offset(self, tp: Any) -> int | None:
        """The offset to commit for ``tp``: one past the run of acked offsets that starts at
        the committed position, or None when the record at that position is not acked."""
        acked: list[int] = self._acked[tp]
        if not acked:
            return None
        acked.sort()
        committed: int | None = self._committed_offset[tp]
        if committed is None:
            committed = self._revoking.get(tp)
        if committed is not None:
            covered = bisect.bisect_left(acked, committed)  # acked again after a commit
            if covered:
                self._acked_index[tp].difference_update(acked[:covered])
                del acked[:covered]
            if not acked:
                return None
            if acked[0] != committed:
                self._note_missing_head(tp, committed, acked[0])
                return None
        self._missing_heads.pop(tp, None)
        run = list(next(consecutive_numbers(acked)))
        del acked[: len(run)]
        self._acked_index[tp].difference_update(run)
        return run[-1] + 1

    async def _add_gap(self, tp: Any, offset_from: int, offset_to: int) -> None:
        """Count nothing as processed on an offset jump (see the module docstring, 2.)."""
        logger.info(
            "%s: offsets %d..%d skipped by the fetch; they are committed only once processed",
            tp,
            offset_from,
            offset_to - 1,
        )

    def _note_missing_head(self, tp: Any, head: int, first_acked: int) -> None:
        seen = self._missing_heads.get(tp)
        if seen is None or seen[0] != head:
            self._missing_heads[tp] = (head, time.monotonic(), 0)
            logger.info(
                "%s: record %d not processed, %d is: holding commits", tp, head, first_acked
            )

    async def commit(self, *args: Any, **kwargs: Any) -> bool:
        """Commit as Faust does, then re-read partitions whose head record was lost."""
        committed: bool = await super().commit(*args, **kwargs)
        if self._missing_heads and self.flow_active and not self.app.rebalancing:
            await self._reread_missing_heads(self.assignment())
        return committed

    async def _reread_missing_heads(self, assigned: Iterable[Any]) -> None:
        wait = float(self.app.conf.broker_commit_interval)
        now = time.monotonic()
        assigned = set(assigned)
        for tp, (head, since, rereads) in list(self._missing_heads.items()):
            if tp not in assigned:
                self._missing_heads.pop(tp, None)
            elif now - since < wait:
                continue
            elif rereads < MAX_REREADS:
                logger.warning(
                    "%s: record %d was fetched but never processed (lost by the consumer in a "
                    "rebalance); reading the partition again from it",
                    tp,
                    head,
                )
                self._missing_heads[tp] = (head, now, rereads + 1)
                await self.seek(tp, head)
            else:
                self._skip_hole(tp, head)

    def _skip_hole(self, tp: Any, head: int) -> None:
        """Take ``head`` up to the first acked offset as a hole: nothing there was fetched in
        :data:`MAX_REREADS` re-reads, so no record lives there."""
        acked: list[int] = self._acked[tp]
        if not acked:
            return
        hole = list(range(head, min(acked)))
        logger.error(
            "%s: offsets %d..%d never arrived in %d re-reads; taken as a hole (transactional "
            "producers to input topics are not supported)",
            tp,
            hole[0],
            hole[-1],
            MAX_REREADS,
        )
        acked.extend(hole)
        self._acked_index[tp].update(hole)
        self._missing_heads.pop(tp, None)


class SafeCommitApp(faust.App):
    """A Faust app whose transport makes :attr:`worker_consumer_class` consumers."""

    worker_consumer_class: type[SafeCommitConsumer] = SafeCommitConsumer

    def _new_transport(self) -> Any:
        transport = super()._new_transport()
        transport.Consumer = self.worker_consumer_class  # type: ignore[misc]
        return transport
