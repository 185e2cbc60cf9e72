"""Faust's fetch loop hands each record on without four tasks per record.

Faust 0.15.3's fetch loop (``Consumer._drain_messages``) hands every record to the agents with
``await self.wait_first(callback(message), self.suspend_flow.wait())``, so that a record whose
hand-over blocks (the agent's buffer is full) is abandoned when a rebalance suspends the flow.
mode's ``wait_first`` makes a task of each awaitable and of the service's ``stopped`` and
``crashed`` events, waits for the first to finish and cancels the other three: ~100 us a
record on the 2-core VM (``bench/`` notes in ``docs/benchmarks.md``), about a tenth of the
lexical worker's CPU per answer, to hand over a record that nearly always goes straight into a
buffer with room.

:class:`QuickHandoff` keeps that contract and pays for it only when it is needed: the hand-over
runs as one task, and when its first step finishes it (the buffer had room) and the consumer
is neither stopped nor crashed, that is the result ``wait_first`` would have given, without
starting the three waits. Otherwise (the hand-over is blocked, or the consumer is stopping) the
task goes through mode's own ``wait_first`` with the flow event, so a blocked hand-over is
cancelled on a suspension exactly as before. An exception of the hand-over propagates as it
did, and a fetch loop cancelled meanwhile cancels the hand-over, as mode's does. Any other
call (a timeout, other arguments) goes to mode unchanged.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mode.services import WaitResults


class QuickHandoff:
    """A mixin for a mode ``Service`` (Faust's consumer): ``wait_first`` of a record's hand-over
    and the flow event, without a task per awaitable when the hand-over finishes at once."""

    async def wait_first(self, *coros: Any, timeout: Any = None) -> WaitResults:
        if timeout is not None or len(coros) != 2 or not all(map(asyncio.iscoroutine, coros)):
            return await super().wait_first(*coros, timeout=timeout)  # type: ignore[misc,no-any-return]
        handing_on, flow_suspended = coros
        task = asyncio.ensure_future(handing_on)
        try:
            await asyncio.sleep(0)  # the task's first step runs before this one resumes
        except BaseException:  # the fetch loop cancelled meanwhile: as mode, leave nothing behind
            task.cancel()
            flow_suspended.close()
            raise
        if task.done() and not (self._stopped.is_set() or self._crashed.is_set()):  # type: ignore[attr-defined]
            flow_suspended.close()  # never started: closed, no "never awaited" warning
            return WaitResults([handing_on], [task.result()], False)
        results: WaitResults = await super().wait_first(task, flow_suspended)  # type: ignore[misc]
        winners = [handing_on if winner is task else winner for winner in results.done]
        return WaitResults(winners, results.results, results.stopped)
