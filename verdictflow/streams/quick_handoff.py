"""Faust's fetch loop hands each record on without four tasks per record, and comes back for a
partition put back on its fetch list within 0.1 s.

Faust 0.15.3's fetch loop (``Consumer._drain_messages``) hands every record to the agents with
``await self.wait_first(callback(message), self.suspend_flow.wait())``, so that a record whose
hand-over blocks (the agent's buffer is full) is abandoned when a rebalance suspends the flow.
mode's ``wait_first`` makes a task of each awaitable and of the service's ``stopped`` and
``crashed`` events, waits for the first to finish and cancels the other three: ~100 us a
record on the 2-core VM (``bench/`` notes in ``docs/benchmarks.md``), about a tenth of the
lexical worker's CPU per answer, to hand over a record that nearly always goes straight into a
buffer with room.

:class:`QuickHandoff` keeps that contract and pays for it only when it is needed: the
hand-over's first step is taken right there, in the fetch loop, and when that step finishes it
(the buffer had room) and the consumer is neither stopped nor crashed, that is the result
``wait_first`` would have given, without a task, a turn of the event loop or the three waits
(4.6 us a record in a bare loop, against 102 us for mode's and 24 us for a first version that
ran the step in a task). Otherwise (the hand-over waits on a full buffer, or the consumer is
stopping) the rest of the hand-over runs in a task (:class:`_Started`, which hands the task
the future the first step waits on and passes every later step and cancellation through), and
that task goes through mode's own ``wait_first`` with the flow event, so a blocked hand-over is
cancelled on a suspension exactly as before. An exception of the hand-over propagates as it
did, and a fetch loop cancelled meanwhile cancels the hand-over, as mode's does. Any other
call (a timeout, other arguments) goes to mode unchanged. The fetch loop now turns the event
loop every 100 records (Faust's own ``sleep(0)``) instead of at every record, so the agent
takes records from its buffer in runs rather than one by one.

**A partition back from flow control at once.** Faust takes a partition off its fetch list
while the agent's buffer is under pressure (at 4/5 of ``stream_buffer_maxsize``) and puts it
back when the buffer drops to 2/5. But the list is read when a fetch-loop call (``getmany``)
starts, and Faust's call waits up to 1 s for records of the partitions it was given, so a
partition put back waited for the call in progress to time out: the lexical tier, reading a
backlog faster than the broker's fetches came back, ran its buffer dry and stalled 250-400 ms
after every ~5,000 answers, idle a quarter of the time (issue 41, 2026-11-30: 74-79 % busy at
4,025-4,051 answers/s). A call waits at most :data:`FETCH_LOOP_WAIT_SECONDS` here: 93-95 %
busy, 4,730-5,088 answers/s. A record that arrives is handed on as soon as before (the call
returns when its partitions have records); an idle worker turns the loop 10 times a second
instead of once (an idle lexical worker: 5.0 % of a core against 4.4 %).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine, Generator
from typing import Any

from mode.services import WaitResults

#: Longest one call of the fetch loop waits for records (Faust's own: 1 s): how late a
#: partition taken off the fetch list for a full buffer is fetched again once it has room.
FETCH_LOOP_WAIT_SECONDS = 0.1


class QuickHandoff:
    """A mixin for a mode ``Service`` (Faust's consumer): ``wait_first`` of a record's hand-over
    and the flow event, without a task when the hand-over finishes at once; and fetch-loop calls
    that wait at most :data:`FETCH_LOOP_WAIT_SECONDS`."""

    def getmany(self, timeout: float) -> AsyncIterator[tuple[Any, Any]]:
        return super().getmany(min(timeout, FETCH_LOOP_WAIT_SECONDS))  # type: ignore[misc,no-any-return]

    async def wait_first(self, *coros: Any, timeout: Any = None) -> WaitResults:
        if timeout is not None or len(coros) != 2 or not all(map(asyncio.iscoroutine, coros)):
            return await super().wait_first(*coros, timeout=timeout)  # type: ignore[misc,no-any-return]
        handing_on, flow_suspended = coros
        try:
            yielded = handing_on.send(None)  # its first step, here: no task, no loop turn
        except StopIteration as finished:
            if not (self._stopped.is_set() or self._crashed.is_set()):  # type: ignore[attr-defined]
                flow_suspended.close()  # never started: closed, no "never awaited" warning
                return WaitResults([handing_on], [finished.value], False)
            handed: Any = asyncio.get_running_loop().create_future()
            handed.set_result(finished.value)
        except BaseException:
            flow_suspended.close()
            raise
        else:  # it waits (a full buffer): the rest of it runs as a task, as before
            handed = asyncio.ensure_future(_Started(handing_on, yielded))
        results: WaitResults = await super().wait_first(handed, flow_suspended)  # type: ignore[misc]
        winners = [handing_on if winner is handed else winner for winner in results.done]
        return WaitResults(winners, results.results, results.stopped)


class _Started(Coroutine[Any, Any, Any]):
    """A coroutine whose first step was taken outside a task, to be run on by one: the task's
    first ``send`` gets what that step yielded (the future the coroutine waits on, or None to be
    run again); every later ``send`` and every ``throw`` (a cancellation, even one before the
    task's first step) goes to the coroutine itself, as if the task had run it all along."""

    def __init__(self, coro: Coroutine[Any, Any, Any], yielded: Any) -> None:
        self._coro = coro
        self._yielded: Any = yielded
        self._first = True

    def send(self, value: Any) -> Any:
        if self._first:
            self._first = False
            return self._yielded
        return self._coro.send(value)

    def throw(self, *exc: Any) -> Any:
        self._first = False
        return self._coro.throw(*exc)

    def close(self) -> None:
        self._coro.close()

    def __await__(self) -> Generator[Any, Any, Any]:
        raise TypeError("a started hand-over is run by a task (send and throw), not awaited")
