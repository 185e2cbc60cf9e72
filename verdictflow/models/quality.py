"""Per-document quality rows (topic ``doc-quality``), read by the retriever."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class QualityFeatures(BaseModel):
    """The signals a document's quality is the weighted sum of, each in [0, 1]."""

    model_config = ConfigDict(frozen=True)

    text: float
    graph: float
    dup_penalty: float
    cpesh_margin: float | None = None


class DocQuality(BaseModel):
    """A document's current quality; idempotent through (doc_id, version)."""

    model_config = ConfigDict(frozen=True)

    doc_id: str
    quality: float
    features: QualityFeatures
    version: int
    ts: float | None = None
