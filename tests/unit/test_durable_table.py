"""Tables of the worker app keep their changelog writes until an agent awaits them."""

from __future__ import annotations

import asyncio

import faust
import pytest

from verdictflow.evaluators.policy import load_policy
from verdictflow.streams.app import create_app
from verdictflow.streams.durable_table import DurableWritesTable
from verdictflow.streams.settings import Settings


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
