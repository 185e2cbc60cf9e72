"""Everything an agent sends leaves through an :class:`Outbox`, which tests can replace."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from pydantic import BaseModel

from verdictflow.models.codec import encode


class Outbox(Protocol):
    async def send(
        self, topic: str, key: str, value: bytes, headers: Mapping[str, bytes] | None = None
    ) -> None:
        """Send ``value`` under ``key`` to the registry topic with short name ``topic``."""


async def send_model(
    outbox: Outbox, topic: str, key: str, model: BaseModel,
    headers: Mapping[str, bytes] | None = None,
) -> None:
    await outbox.send(topic, key, encode(model), headers)


class FaustOutbox:
    """Sends through Faust topics, so sends join Faust's flush-before-commit (at-least-once)."""

    def __init__(self, topics: Mapping[str, Any]) -> None:
        self._topics = topics

    async def send(
        self, topic: str, key: str, value: bytes, headers: Mapping[str, bytes] | None = None
    ) -> None:
        await self._topics[topic].send(
            key=key.encode(), value=value, headers=dict(headers) if headers else None
        )


class RecordingOutbox:
    """Keeps what was sent, in order: for tests and for offline tools."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, bytes]] = []

    async def send(
        self, topic: str, key: str, value: bytes, headers: Mapping[str, bytes] | None = None
    ) -> None:
        self.sent.append((topic, key, value))

    def values(self, topic: str) -> list[bytes]:
        return [v for t, _, v in self.sent if t == topic]
