"""Intelligent Quality Scoring (spec 004): a document's quality from four signals, pure.

quality = w_text*text_health + w_graph*graph_degree + w_dup*(1 - dup_penalty)
          + w_cpesh*cpesh_margin, clamped to [0, 1]

The stream agents (``agents/doc_quality*``) and the batch job (``scoring_jobs/batch/score_quality``)
both call :func:`score_features`, so a document with the same text, degree, duplicate count and
margin gets the same float from either; the agreement test checks it to 1e-9. Duplicate
*counting* (which needs a vector index) lives in :mod:`verdictflow.evaluators.dup_index`.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import asdict, dataclass

import orjson

from verdictflow.evaluators.policy import DocQualityPolicy
from verdictflow.models.quality import QualityFeatures

#: Length band of full length credit (characters), from the spec.
TEXT_MIN, TEXT_MAX = 60, 500
#: C0 control characters except tab, line feed and carriage return (ordinary whitespace).
_CTRL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
DEGREE_SATURATION = 5.0
DUPS_FOR_FULL_PENALTY = 3.0


@dataclass(frozen=True, slots=True)
class QualityConfig:
    """Everything that changes a quality score; its :meth:`digest` goes into artifacts."""

    w_text: float = 0.4
    w_graph: float = 0.3
    w_dup: float = 0.2
    w_cpesh: float = 0.1
    kdup: int = 5
    dup_threshold: float = 0.999
    use_cpesh: bool = False
    #: The version string of the embedder that gave documents without a vector their vector
    #: (and CPESH's answers theirs), when it is not the offline default. None (the hashing
    #: default) leaves it out of the digest, so digests from before it existed still match.
    embedder: str | None = None

    def __post_init__(self) -> None:
        for name in ("w_text", "w_graph", "w_dup", "w_cpesh", "dup_threshold"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value}")
        if self.kdup < 1:
            raise ValueError(f"kdup must be >= 1, got {self.kdup}")

    @classmethod
    def of(cls, policy: DocQualityPolicy) -> QualityConfig:
        """The configuration of a policy's ``doc_quality`` section."""
        return cls(**policy.model_dump())

    def digest(self) -> str:
        """sha256 of the canonical JSON of the configuration (``embedder`` only when set)."""
        fields = asdict(self)
        if fields["embedder"] is None:
            del fields["embedder"]
        return hashlib.sha256(orjson.dumps(fields, option=orjson.OPT_SORT_KEYS)).hexdigest()


def clamp01(x: float) -> float:
    """Clamp to [0, 1]; NaN becomes 0 (fail closed: a broken signal earns no credit)."""
    if x != x:  # NaN
        return 0.0
    return 0.0 if x < 0.0 else 1.0 if x > 1.0 else x


def length_score(n_chars: int) -> float:
    """1 inside [60, 500] characters; a linear ramp n/60 below; a linear decay to 0 at 1000 above.

    The spec says only that 60-500 characters "get optimal scores"; the ramp and the decay
    (500 characters past the band, as the spec's reference tool does) are our reading.
    """
    if n_chars < TEXT_MIN:
        return n_chars / TEXT_MIN
    if n_chars <= TEXT_MAX:
        return 1.0
    return max(0.0, 1.0 - (n_chars - TEXT_MAX) / TEXT_MAX)


def text_health(text: str) -> float:
    """``0.7*len_score + 0.3*alnum_ratio - 0.5*ctrl_pen`` clamped to [0, 1]; empty text is 0.

    ``alnum_ratio`` counts Unicode letters and digits over all characters (spaces and
    punctuation count against it); ``ctrl_pen`` is 1 when any C0 control character other than
    tab/LF/CR, or DEL, occurs (a sign of broken extraction), else 0.
    """
    if not text:
        return 0.0
    n = len(text)
    alnum_ratio = sum(ch.isalnum() for ch in text) / n
    ctrl_pen = 1.0 if _CTRL_RE.search(text) else 0.0
    return clamp01(0.7 * length_score(n) + 0.3 * alnum_ratio - 0.5 * ctrl_pen)


def graph_degree(k: int) -> float:
    """Soft saturation ``k / (k + 5)`` of a node degree: 0, 1/6, ..., 0.5 at 5, -> 1."""
    if k <= 0:
        return 0.0
    return k / (k + DEGREE_SATURATION)


def dup_penalty(dups: int) -> float:
    """``min(1, dups / 3)``: three or more near-duplicates take the whole duplicate credit."""
    if dups <= 0:
        return 0.0
    return min(1.0, dups / DUPS_FOR_FULL_PENALTY)


def cpesh_margin(soft_sim: float, hard_sim: float) -> float:
    """``max(0, 1 - max(soft_sim, hard_sim))``: how far the expected answer stands from the
    negatives. NaN similarities give 0."""
    if soft_sim != soft_sim or hard_sim != hard_sim:
        return 0.0
    return clamp01(1.0 - max(soft_sim, hard_sim))


def quality_from(features: QualityFeatures, cfg: QualityConfig) -> float:
    """The weighted sum, clamped. A missing CPESH margin (disabled, or the LLM deferred)
    contributes 0, as the spec's ``cpesh_margin: 0.00`` rows do."""
    margin = features.cpesh_margin if features.cpesh_margin is not None else 0.0
    raw = (
        cfg.w_text * features.text
        + cfg.w_graph * features.graph
        + cfg.w_dup * (1.0 - features.dup_penalty)
        + cfg.w_cpesh * margin
    )
    return clamp01(raw)


def score_features(
    text_health_value: float,
    degree: int,
    dups: int,
    margin: float | None,
    cfg: QualityConfig,
) -> tuple[float, QualityFeatures]:
    """(quality, features) of one document from its raw signals: the one place both the
    stream and the batch job turn signals into a score."""
    features = QualityFeatures(
        text=clamp01(text_health_value),
        graph=clamp01(graph_degree(degree)),
        dup_penalty=clamp01(dup_penalty(dups)),
        cpesh_margin=None if margin is None else clamp01(margin),
    )
    return quality_from(features, cfg), features


def edge_key(src: str, dst: str) -> tuple[str, str] | None:
    """The identity of a graph edge, or None for a self-loop (ignored: a document linking to
    itself says nothing about its connectivity). Edges are directed: (a, b) and (b, a) are two
    edges, and each adds 1 to the degree of both endpoints (in- plus out-degree)."""
    if src == dst:
        return None
    return (src, dst)
