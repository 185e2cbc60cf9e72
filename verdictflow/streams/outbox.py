"""Everything an agent sends leaves through an :class:`Outbox`, which tests can replace."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping
from typing import Any, Protocol

from pydantic import BaseModel

from verdictflow.models.codec import encode


class Outbox(Protocol):
    async def send(
        self, topic: str, key: str, value: bytes, headers: Mapping[str, bytes] | None = None
    ) -> None:
        """Schedule ``value`` under ``key`` for the registry topic with short name ``topic``."""

    async def drain(self) -> None:
        """Wait until everything scheduled so far is delivered; raise if any delivery failed."""


async def send_model(
    outbox: Outbox,
    topic: str,
    key: str,
    model: BaseModel,
    headers: Mapping[str, bytes] | None = None,
) -> None:
    await outbox.send(topic, key, encode(model), headers)


class FaustOutbox:
    """Sends through the Faust app's producer, so sends join Faust's flush-before-commit.

    It hands raw bytes to ``app.producer.send`` instead of going through ``Topic.send``, whose
    per-message bookkeeping (futures, callbacks, sensors) we do not use: the agents encode
    values themselves. Delivery futures are kept until :meth:`drain`, which agents call once
    per batch, so a failed delivery stops the agent before its offsets are committed.
    """

    def __init__(self, app: Any, topics: Mapping[str, Any]) -> None:
        self._app = app
        self._names = {short: t.get_topic_name() for short, t in topics.items()}
        self._pending: list[Awaitable[Any]] = []

    async def send(
        self, topic: str, key: str, value: bytes, headers: Mapping[str, bytes] | None = None
    ) -> None:
        fut = await self._app.producer.send(
            self._names[topic],
            key.encode(),
            value,
            None,
            None,
            list(headers.items()) if headers else None,
        )
        self._pending.append(fut)

    async def drain(self) -> None:
        pending, self._pending = self._pending, []
        if pending:
            await asyncio.gather(*pending)


class RecordingOutbox:
    """Keeps what was sent, in order: for tests and for offline tools."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, bytes]] = []

    async def send(
        self, topic: str, key: str, value: bytes, headers: Mapping[str, bytes] | None = None
    ) -> None:
        self.sent.append((topic, key, value))

    async def drain(self) -> None:
        return None

    def values(self, topic: str) -> list[bytes]:
        return [v for t, _, v in self.sent if t == topic]
