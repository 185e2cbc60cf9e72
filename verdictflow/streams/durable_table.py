"""A Faust table whose changelog writes an agent can await before it acks its batch.

Faust sends a table's changelog writes through its producer buffer (``send_soon``) and keeps
no handle on them. Its commit does flush that buffer first, but ``ProducerBuffer.flush`` gives
up as soon as no message has left the buffer for 0.1 s, and on the embedded broker (one record
per produce request) a loaded 2-core machine logged ``producer flush took 0.5-1.0 s`` for 100
writes. So a commit could cover an input whose table write had not reached the broker; a worker
killed then recovers a table without that write (the kill test's "request group without its
consistency verdict"). Agents that write a table therefore await :meth:`flush_writes` with
their outputs, before ``take_events`` acks the batch.
"""

from __future__ import annotations

import asyncio
from typing import Any

import faust


class DurableWritesTable(faust.Table):  # type: ignore[misc,type-arg]
    """``faust.Table`` that keeps the delivery futures of its changelog writes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._unflushed: list[asyncio.Future[Any]] = []

    def send_changelog(self, *args: Any, **kwargs: Any) -> Any:
        fut = super().send_changelog(*args, **kwargs)
        self._unflushed.append(fut)
        return fut

    async def flush_writes(self) -> None:
        """Wait until every changelog write made so far is delivered (raise if one failed)."""
        pending, self._unflushed = self._unflushed, []
        if pending:
            await asyncio.gather(*pending)


def durable_table(app: faust.App, name: str, **kwargs: Any) -> DurableWritesTable:
    """``app.Table(name, ...)``, which is a :class:`DurableWritesTable` in the worker app
    (``faust_config`` sets it as the app's ``Table`` class)."""
    table = app.Table(name, **kwargs)
    if not isinstance(table, DurableWritesTable):
        raise TypeError(f"table {name!r} is not a DurableWritesTable: use create_app's app")
    return table
