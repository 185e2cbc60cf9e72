"""Faust tables whose state lives in the partition of the records that feed it, and whose
changelog writes an agent can await before it acks its batch.

**Co-partitioning.** After a rebalance, the worker that is handed partition *p* of a source
topic recovers partition *p* of the table's changelog, and nothing else. A key's state must
therefore be written to the changelog partition that holds that key's records. Faust does that
per event (``partition_for_key`` reads the current event's partition), but our agents take
events in batches, where Faust's "current event" is whatever the batch iterator saw last; the
old code used ``use_partitioner=True`` instead, which hashed the *JSON-encoded* key
(``"rq-04"``) while the source topic hashed the raw key (``rq-04``): 137 of 200 groups had state
and messages in different partitions, and every rebalance lost their answers (issue 19).

Now every table write must happen inside :func:`writes_for` ``(event)``, which makes that event
Faust's current event: the changelog record goes to the event's partition (and a RocksDB store
writes the same partition's database). A write outside it raises (Faust's "cannot modify table
key from outside of stream iteration"), so no path (timer, batch, callback) can silently put
state elsewhere. Keys are stored raw (the same bytes as the source record's key), so a
changelog reads like its source topic.

**Awaited writes.** Faust sends changelog writes through its producer buffer (``send_soon``)
and keeps no handle on them. Its commit does flush that buffer first, but
``ProducerBuffer.flush`` gives up as soon as no message has left the buffer for 0.1 s, and on
the embedded broker a loaded 2-core machine logged ``producer flush took 0.5-1.0 s`` for 100
writes. So agents await :meth:`DurableWritesTable.flush_writes` with their outputs, before
``take_events`` acks the batch.

**State after outputs.** A table entry records what was emitted (a group marked closed, a
document's last emitted quality), so the entry must not reach the changelog before the output
it records reaches its topic: Faust sends a changelog write at once, and a worker killed after
that write but before its verdict or row was delivered came back to a state that said "emitted"
and emitted nothing (CI: one document's quality row lost under SIGKILL). :class:`StagedWrites`
keeps a batch's writes in memory, where the batch's own reads see them, and writes them to the
table only after the batch's outputs were delivered; one batch at a time per table, so two
agents sharing a table never read each other's undelivered state.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Iterator, MutableMapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import faust
from faust.streams import _current_event

from verdictflow.streams.record_limits import check_table_value

#: Changelog layout version, part of every table's name. Layout 1 (unversioned names, JSON
#: keys, partition from the JSON key's hash) put state in other partitions than its records;
#: ``verdictflow migrate-tables`` moves layout-1 state into layout 2 (docs/operations.md).
TABLE_LAYOUT = 2


def versioned(name: str) -> str:
    """The table name of the current layout: ``consistency-groups`` -> ``consistency-groups-v2``."""
    return f"{name}-v{TABLE_LAYOUT}"


class DurableWritesTable(faust.Table):  # type: ignore[misc,type-arg]
    """``faust.Table`` that keeps the delivery futures of its changelog writes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._unflushed: list[asyncio.Future[Any]] = []

    def _serializer_from_type(self, typ: Any) -> Any:
        """``str`` is stored as its UTF-8 bytes (raw), so a changelog key is the very key of
        the source records; Faust would JSON-quote it. Decided here, in the constructor,
        because Faust builds the changelog topic (and its recovery decoder) right after."""
        return "raw" if typ is str else super()._serializer_from_type(typ)

    def __setitem__(self, key: Any, value: Any) -> None:
        """Refuse, before the store changes, an entry whose changelog record would not fit
        (:mod:`verdictflow.streams.record_limits`)."""
        check_table_value(self.name, str(key), value)
        super().__setitem__(key, value)

    def send_changelog(self, *args: Any, **kwargs: Any) -> Any:
        fut = super().send_changelog(*args, **kwargs)
        self._unflushed.append(fut)
        return fut

    async def flush_writes(self) -> None:
        """Wait until every changelog write made so far is delivered (raise if one failed)."""
        pending, self._unflushed = self._unflushed, []
        if pending:
            await asyncio.gather(*pending)


def current_event() -> Any:
    """The event :func:`writes_for` made current (RuntimeError outside one: no partition)."""
    ref = _current_event.get(None)
    event = ref() if ref is not None else None
    if event is None:
        raise RuntimeError("table write outside writes_for(event): no partition to write to")
    return event


@contextmanager
def writes_for(event: Any) -> Iterator[None]:
    """Table reads and writes inside belong to ``event``'s partition (see the module doc)."""
    token = _current_event.set(weakref.ref(event))
    try:
        yield
    finally:
        _current_event.reset(token)


_DELETED = object()


class StagedWrites(MutableMapping[str, Any]):
    """A table seen through the writes of the batch in progress (see "State after outputs").

    Each staged write remembers the event it was made for, and :meth:`commit` replays it inside
    :func:`writes_for` that event, so the co-partitioning rule holds as for a direct write.
    """

    def __init__(self, table: DurableWritesTable) -> None:
        self.table = table
        self._staged: dict[str, tuple[Any, Any]] = {}
        self._lock = asyncio.Lock()

    @staticmethod
    def _event() -> Any:
        return current_event()

    def __getitem__(self, key: str) -> Any:
        if key in self._staged:
            value = self._staged[key][0]
            if value is _DELETED:
                raise KeyError(key)
            return value
        return self.table[key]

    def __contains__(self, key: object) -> bool:
        if key in self._staged:
            return self._staged[key][0] is not _DELETED  # type: ignore[index]
        return key in self.table

    def __setitem__(self, key: str, value: Any) -> None:
        name = getattr(self.table, "name", "table")
        check_table_value(name, key, value)  # at the write that made it, not later
        self._staged[key] = (value, self._event())

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._staged[key] = (_DELETED, self._event())

    def __iter__(self) -> Iterator[str]:
        for key in list(self.table.keys()):
            if key not in self._staged:
                yield key
        for key, (value, _) in list(self._staged.items()):
            if value is not _DELETED:
                yield key

    def __len__(self) -> int:
        return sum(1 for _ in self)

    @asynccontextmanager
    async def batch(self) -> AsyncIterator[None]:
        """One batch at a time; a batch that raises leaves the table as it was."""
        async with self._lock:
            try:
                yield
            finally:
                self._staged.clear()

    async def commit(self) -> None:
        """Write the staged entries to the table, then wait for their changelog records.
        Call it after the batch's outputs were delivered."""
        staged, self._staged = self._staged, {}
        for key, (value, event) in staged.items():
            with writes_for(event):
                if value is not _DELETED:
                    self.table[key] = value
                elif key in self.table:
                    del self.table[key]
        await self.table.flush_writes()


def durable_table(app: faust.App, name: str, **kwargs: Any) -> DurableWritesTable:
    """``app.Table(versioned(name), ...)`` with the co-partitioning rules of this module.

    It is a :class:`DurableWritesTable` in the worker app (``faust_config`` sets it as the
    app's ``Table`` class); anything else raises rather than losing writes silently.
    """
    if kwargs.get("use_partitioner"):
        raise ValueError("use_partitioner breaks co-partitioning: write inside writes_for(event)")
    table = app.Table(versioned(name), use_partitioner=False, **kwargs)
    if not isinstance(table, DurableWritesTable):
        raise TypeError(f"table {name!r} is not a DurableWritesTable: use create_app's app")
    return table
