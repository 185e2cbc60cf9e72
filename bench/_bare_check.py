"""The reference of ``bench/gate_latency.py``: a bare FastAPI endpoint at ``POST /v1/check``
that parses the same body as the gate (JSON, validated as an answer event) and answers at once,
served as ``verdictflow ingest`` serves the gate (the same guard, Host check and uvicorn
settings). What the gate adds over it is scoring and producing the event.

    python bench/_bare_check.py --port P
"""

from __future__ import annotations

import argparse

import orjson
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import Response

from verdictflow.models.events import AnswerEvent
from verdictflow.web.errors import install_error_handlers
from verdictflow.web.listeners import host_checked
from verdictflow.web.security import ApiGuard


def create_app() -> FastAPI:
    app = FastAPI(title="bare check", docs_url=None, redoc_url=None)
    install_error_handlers(app)
    app.add_middleware(ApiGuard, token=None, max_body_bytes=16 * 1024 * 1024,
                       open_paths=frozenset({"/healthz"}))  # fmt: skip

    @app.post("/v1/check")
    async def check(request: Request) -> Response:
        event = AnswerEvent.model_validate(orjson.loads(await request.body()))
        return Response(orjson.dumps({"id": event.id, "decision": "PASS", "verdicts": []}),
                        media_type="application/json")  # fmt: skip

    @app.get("/healthz")
    async def healthz() -> Response:
        return Response(b'{"ready":true}', media_type="application/json")

    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    config = uvicorn.Config(
        host_checked(create_app(), "127.0.0.1"), host="127.0.0.1", port=args.port,
        log_level=args.log_level, access_log=False, lifespan="on", timeout_graceful_shutdown=5,
    )  # fmt: skip
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main()
