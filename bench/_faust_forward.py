"""Reference for the benchmark: a trivial Faust agent that forwards each event unchanged.

Same Faust settings as the verdictflow worker (``faust_config``), so the ratio isolates the
cost of verdictflow's own work. Run as ``python bench/_faust_forward.py`` with VERDICTFLOW_* env.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import faust

from verdictflow.settings import Settings
from verdictflow.streams.faust_app import faust_config
from verdictflow.streams.worker import disable_spinner


def main() -> None:
    settings = Settings()
    conf = faust_config(settings)
    Path(conf["datadir"]).mkdir(parents=True, exist_ok=True)
    asyncio.set_event_loop(asyncio.new_event_loop())
    app = faust.App(settings.app_id, **conf)
    raw: dict[str, Any] = {
        "key_type": bytes,
        "value_type": bytes,
        "key_serializer": "raw",
        "value_serializer": "raw",
        "partitions": settings.partitions,
    }
    source = app.topic(f"{settings.topic_prefix}answers", **raw)
    sink = app.topic(f"{settings.topic_prefix}verdicts.groundedness", **raw)

    @app.agent(source)
    async def forward(stream: Any) -> None:
        async for event in stream.events():
            await sink.send(key=event.key, value=event.value)

    worker = faust.Worker(app, loglevel="warning", quiet=True, redirect_stdouts=False)
    disable_spinner(worker)  # same logging set-up as the verdictflow worker
    worker.execute_from_commandline()


if __name__ == "__main__":
    main()
