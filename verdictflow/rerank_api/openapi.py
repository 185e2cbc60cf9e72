"""What the OpenAPI document says beyond the routes' own models: error statuses and auth.

The request model and its limits come from :func:`schemas.search_request_model` (the settings
of the app); this module adds, per operation, every status the service can answer with its body
(:class:`schemas.Error` for all errors) and, when a token is configured, the HTTP bearer scheme
on exactly the operations the guard protects (:func:`security.needs_token`).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from verdictflow.rerank_api.guards import configured_token, needs_token
from verdictflow.rerank_api.schemas import Error
from verdictflow.rerank_api.settings import ApiSettings

BEARER = "bearer"
_ERROR_REF = {"$ref": "#/components/schemas/Error"}

_DESCRIPTIONS = {
    400: "The body is not JSON (`invalid_json`): malformed (`NaN` and lone surrogates "
    "included), not UTF-8, or nested over 1,024 levels.",
    401: "The bearer token is missing or wrong (`unauthorized`).",
    413: "The body is larger than the server's `max_body_bytes` (`too_large`).",
    422: "A field is missing, has the wrong type, is out of range or unknown "
    "(`invalid_request`); `detail` names it.",
    503: "The index is still being built (`not_ready`), or more searches are waiting than the "
    "replica takes (`overloaded`, with `Retry-After`); retry shortly.",
}


def error_responses(api: ApiSettings, path: str, *statuses: int) -> dict[int | str, Any]:
    """``responses=`` of a route: ``statuses`` plus 401 (when guarded) and 413 (always).

    The body is given as explicit JSON content rather than ``model=``: FastAPI would otherwise
    give it the route's own media type (``text/plain`` for ``/metrics``).
    """
    codes = {*statuses, 413} | ({401} if needs_token(api, path) else set())
    out: dict[int | str, Any] = {}
    for code in sorted(codes):
        response: dict[str, Any] = {
            "description": _DESCRIPTIONS[code],
            "content": {"application/json": {"schema": _ERROR_REF}},
        }
        if code == 401:
            response["headers"] = {
                "WWW-Authenticate": {
                    "description": 'The scheme to use: `Bearer realm="verdictflow"`.',
                    "schema": {"type": "string"},
                }
            }
        out[code] = response
    return out


def security_requirement(api: ApiSettings, path: str) -> dict[str, Any] | None:
    """``openapi_extra=`` of a route: the bearer requirement when the guard asks for it."""
    return {"security": [{BEARER: []}]} if needs_token(api, path) else None


def install_openapi(app: FastAPI, api: ApiSettings) -> None:
    """Complete FastAPI's generated document: the error model and the security scheme."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()  # FastAPI keeps it in app.openapi_schema
            components = schema.setdefault("components", {})
            components.setdefault("schemas", {})["Error"] = Error.model_json_schema()
            if configured_token(api) is not None:
                components["securitySchemes"] = {
                    BEARER: {
                        "type": "http",
                        "scheme": "bearer",
                        "description": "`Authorization: Bearer <VERDICTFLOW_API_TOKEN>`; "
                        "the scheme name is case-insensitive.",
                    }
                }
            return schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
