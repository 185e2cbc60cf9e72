"""Serve the app with uvicorn (``verdictflow api``): one process, one event loop.

Scale out with more replicas behind a load balancer; each replica materialises the topics on
its own. uvicorn's access log is off: at hundreds of requests per second it costs more than the
search itself; ``/metrics`` counts requests instead.
"""

from __future__ import annotations

import uvicorn

from verdictflow.rerank_api.app import create_app
from verdictflow.rerank_api.settings import ApiSettings
from verdictflow.settings import Settings
from verdictflow.web.listeners import host_checked


def serve(api: ApiSettings, streams: Settings | None, log_level: str = "info") -> None:
    app = create_app(api, streams)
    uvicorn.run(
        host_checked(app, api.host),
        host=api.host,
        port=api.port,
        log_level=log_level,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
    )
