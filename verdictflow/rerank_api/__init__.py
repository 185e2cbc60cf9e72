"""The async ``/search`` retriever: dense (or BM25, or hybrid) search blended with live quality.

``create_app`` builds the FastAPI app; ``verdictflow api`` serves it with uvicorn. Layout:
``blend`` (pure ranking arithmetic), ``vector_index`` (FAISS segments, tombstones, rebuilds),
``lexical`` (BM25 snapshots), ``retriever`` (state + search pipeline), ``follower`` (topics ->
state), ``artifacts`` (files -> state), ``app`` (lifespan and routes).
"""

from verdictflow.rerank_api.app import create_app
from verdictflow.rerank_api.settings import ApiSettings

__all__ = ["ApiSettings", "create_app"]
