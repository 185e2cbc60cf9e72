"""One error shape for every HTTP service of verdictflow (the API, the console):
``{"error": code, "detail": message}``, never FastAPI's ``{"detail": [...]}``, and never the
request echoed back (a 10 MB body refused must not come back as a 10 MB reply).

Validation errors name at most three fields, each with the limit it broke ("top_k: at most
100"); Starlette's own errors (404, 405, an unreadable body) keep their status with a code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

#: Shorter messages for the limits, naming the enforced value ("top_k: at most 100").
_LIMIT_MESSAGES = {
    "string_too_long": "at most {max_length} characters",
    "less_than_equal": "at most {le}",
    "greater_than_equal": "at least {ge}",
    "string_pattern_mismatch": "must contain some non-whitespace text",
}
_HTTP_ERRORS = {400: "invalid_json", 404: "not_found", 405: "method_not_allowed"}


def error_response(
    status: int, code: str, detail: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """The shared error shape, for a route's own refusals and for the handlers below."""
    return JSONResponse({"error": code, "detail": detail}, status_code=status, headers=headers)


def json_response(data: Any) -> Response:
    """A route's reply encoded by orjson (faster than FastAPI's encoder; numpy-free here)."""
    return Response(orjson.dumps(data), media_type="application/json")


def describe(errors: Any) -> str:
    """The first three validation errors, one phrase each (their input left out)."""
    parts = []
    for e in list(errors)[:3]:
        loc = ".".join(str(p) for p in e["loc"] if p != "body") or "body"
        template = _LIMIT_MESSAGES.get(e["type"])
        msg = template.format(**e.get("ctx", {})) if template else e["msg"]
        parts.append(f"{loc[:100]}: {msg[:200]}")
    return "; ".join(parts)


#: Called with each refused request (status, and the body when it parsed), e.g. to count it.
OnRefusal = Callable[[Request, int, Any], None]


def install_error_handlers(app: FastAPI, on_refusal: OnRefusal | None = None) -> None:
    """Map validation and HTTP errors of ``app`` to the shared shape."""

    def refused(request: Request, status: int, body: Any = None) -> None:
        if on_refusal is not None:
            on_refusal(request, status, body)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        bad_json = next((e for e in errors if e["type"] == "json_invalid"), None)
        if bad_json is not None:
            refused(request, 400)
            reason = bad_json.get("ctx", {}).get("error", "malformed")
            position = bad_json["loc"][-1]
            detail = f"body is not valid JSON: {reason} (position {position})"
            return error_response(400, "invalid_json", detail)
        refused(request, 422, exc.body)
        return error_response(422, "invalid_request", describe(errors))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        """Starlette's and FastAPI's own errors (404, 405, an unreadable body) in our shape."""
        code = _HTTP_ERRORS.get(exc.status_code, "http_error")
        return error_response(exc.status_code, code, str(exc.detail), exc.headers)
