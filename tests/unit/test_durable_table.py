"""Tables of the worker app keep their changelog writes until an agent awaits them."""

from __future__ import annotations

import asyncio

import faust
import pytest

from verdictflow.evaluators.policy import load_policy
from verdictflow.streams.app import create_app
from verdictflow.streams.durable_table import DurableWritesTable, durable_table, versioned
from verdictflow.streams.settings import Settings
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
