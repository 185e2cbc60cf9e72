"""An httpx client on the /search app with its lifespan running (shared by the API tests)."""

from __future__ import annotations

import httpx
from asgi_lifespan import LifespanManager

from verdictflow.rerank_api import ApiSettings, create_app


async def open_client(settings: ApiSettings, managers: list[LifespanManager]) -> httpx.AsyncClient:
    """Start the app's lifespan (kept in ``managers`` for :func:`close_all`) and a client."""
    manager = LifespanManager(create_app(settings), startup_timeout=60)  # a model loads in ~7 s
    await manager.__aenter__()
    managers.append(manager)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://t")


async def close_all(managers: list[LifespanManager]) -> None:
    for manager in managers:
        await manager.__aexit__(None, None, None)
