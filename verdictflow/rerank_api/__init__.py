"""The async ``/search`` retriever: dense (or BM25, or hybrid) search blended with live quality.

``create_app`` builds the FastAPI app; ``verdictflow api`` serves it with uvicorn. Layout:
``blend`` (pure ranking arithmetic), ``vector_index`` (FAISS segments, tombstones, rebuilds),
``lexical`` (BM25 snapshots), ``retriever`` (state + search pipeline), ``follower`` (topics ->
state), ``artifacts`` (files -> state), ``app`` (lifespan and routes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from verdictflow.rerank_api.app import create_app
    from verdictflow.rerank_api.settings import ApiSettings

__all__ = ["ApiSettings", "create_app"]


def __getattr__(name: str) -> Any:
    """``create_app`` and ``ApiSettings`` on first use: importing a submodule (``blend``,
    ``artifacts``) from an offline job must not import FastAPI and the whole app."""
    if name == "create_app":
        from verdictflow.rerank_api.app import create_app

        return create_app
    if name == "ApiSettings":
        from verdictflow.rerank_api.settings import ApiSettings

        return ApiSettings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
