"""Tables of the worker app keep their changelog writes until an agent awaits them."""

from __future__ import annotations

import asyncio

import faust
import pytest
from faust.streams import _current_event

from verdictflow.agents.worker_app import create_app
from verdictflow.evaluators.policy import load_policy
from verdictflow.settings import Settings
from verdictflow.streams.durable_table import (
    DurableWritesTable,
    StagedWrites,
    durable_table,
    versioned,
    writes_for,
)
from verdictflow.streams.topics import TABLE_SOURCES


async def test_worker_tables_keep_and_await_their_changelog_writes(tmp_path, monkeypatch) -> None:
    app = create_app(Settings(data_dir=tmp_path, topic_prefix="t."), load_policy(None))
    tables = list(app.tables.values())
    assert tables
    assert all(isinstance(t, DurableWritesTable) for t in tables)
    loop = asyncio.get_running_loop()
    sent: list[asyncio.Future[str]] = []

    def send_changelog(self: faust.Table, *args: object, **kwargs: object) -> asyncio.Future[str]:
        sent.append(loop.create_future())
        return sent[-1]

    monkeypatch.setattr(faust.Table, "send_changelog", send_changelog)
    table = tables[0]
    table.send_changelog(0, "k", "v")
    table.send_changelog(1, "k2", "v")
    flushing = asyncio.ensure_future(table.flush_writes())
    await asyncio.sleep(0.01)
    assert not flushing.done(), "returned before the writes were delivered"
    sent[0].set_result("ok")
    sent[1].set_result("ok")
    await asyncio.wait_for(flushing, 1)
    table.send_changelog(0, "k3", "v")
    sent[-1].set_exception(RuntimeError("broker said no"))
    with pytest.raises(RuntimeError, match="broker said no"):
        await table.flush_writes()
    await table.flush_writes()  # nothing left


def test_every_table_declares_its_sources_and_stores_raw_keys(tmp_path) -> None:
    """A later table must name the topics that write it (the rebalance test reads them to
    check co-partitioning), and its changelog keys must be the source records' key bytes."""
    app = create_app(Settings(data_dir=tmp_path, topic_prefix="t."), load_policy(None))
    assert {t.name for t in app.tables.values()} == {versioned(n) for n in TABLE_SOURCES}
    for table in app.tables.values():
        assert table.changelog_topic.key_serializer == "raw"
        assert table.use_partitioner is False  # the partition comes from writes_for(event)


def test_use_partitioner_is_refused(tmp_path) -> None:
    app = create_app(Settings(data_dir=tmp_path, topic_prefix="t."), load_policy(None))
    with pytest.raises(ValueError, match="co-partitioning"):
        durable_table(app, "other", key_type=str, use_partitioner=True)


class _RecordingTable(dict[str, object]):
    """A table stand-in that records the event current at each write, as Faust's does."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[tuple[str, object, object]] = []
        self.flushed = 0

    def __setitem__(self, key: str, value: object) -> None:
        self.writes.append((key, value, _current_event.get()()))
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.writes.append((key, None, _current_event.get()()))
        super().__delitem__(key)

    async def flush_writes(self) -> None:
        self.flushed += 1


class _Event:
    def __init__(self, partition: int) -> None:
        self.partition = partition


async def test_staged_writes_reach_the_table_only_on_commit_in_their_events_partition() -> None:
    table = _RecordingTable()
    dict.__setitem__(table, "gone", "old")
    staged = StagedWrites(table)  # type: ignore[arg-type]
    e1, e2 = _Event(1), _Event(2)
    async with staged.batch():
        with writes_for(e1):
            staged["a"] = 1
        with writes_for(e2):
            staged["a"] = 2  # the last write wins, in the partition of its event
            staged["b"] = 3
            del staged["gone"]
        assert staged["a"] == 2
        assert "b" in staged
        assert "gone" not in staged
        assert sorted(staged) == ["a", "b"]
        assert len(staged) == 2
        assert table == {"gone": "old"}
        assert not table.writes, "written before the outputs"
        await staged.commit()
    assert table == {"a": 2, "b": 3}
    assert [(k, v, e.partition) for k, v, e in table.writes] == [
        ("a", 2, 2),
        ("b", 3, 2),
        ("gone", None, 2),
    ]
    assert table.flushed == 1


async def test_a_failed_batch_leaves_the_table_as_it_was_and_batches_take_turns() -> None:
    table = _RecordingTable()
    staged = StagedWrites(table)  # type: ignore[arg-type]

    async def failing_batch() -> None:
        async with staged.batch():
            with writes_for(_Event(0)):
                staged["a"] = 1
            raise RuntimeError("producer down")

    with pytest.raises(RuntimeError, match="producer down"):
        await failing_batch()
    assert "a" not in staged
    assert table == {}
    with pytest.raises(RuntimeError, match="outside writes_for"):
        staged["a"] = 1
    order: list[str] = []

    async def one(name: str) -> None:
        async with staged.batch():
            order.append(f"{name} in")
            await asyncio.sleep(0.01)
            order.append(f"{name} out")

    await asyncio.gather(one("x"), one("y"))
    assert order == ["x in", "x out", "y in", "y out"]
