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
    # Optional, added by the quality agents (issue 5); older readers ignore them.
    #: The DocUpdate.version this row was computed from, when the producer gave one.
    doc_version: int | None = None
    #: True on the row that retires a deleted document (quality 0, features 0).
    deleted: bool = False
    #: DEFER-style reasons a signal is missing, e.g. ``cpesh_unavailable: ...``.
    reasons: tuple[str, ...] = ()
    #: sha256 of the quality configuration (weights, kdup, threshold, CPESH on/off).
    config_digest: str | None = None
