"""Offline artifacts the retriever can start from, as the quality-scoring spec writes them.

- vectors NPZ: ``doc_ids`` (str, n), ``concept_texts`` (str, n), optional ``vectors`` (float, n x
  d; when absent the texts are embedded with the configured embedder), optional ``tmd_codes``
  and ``lane_indices``.
- quality: ``id_quality.jsonl`` (one ``{"doc_id", "quality", ...}`` object a line) or
  ``id_quality.npz`` (``doc_ids`` plus ``quality``; ``qualities`` or ``scores`` are accepted).
- index: a FAISS index file over the NPZ's vectors in row order, inner-product metric.

Every problem is a :class:`ArtifactError` naming the file and what is wrong: the service does
not start on a half-read artifact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import numpy.typing as npt
import orjson

from verdictflow.exceptions import VerdictflowError
from verdictflow.rerank_api.retriever import DocMeta

_QUALITY_ARRAYS = ("quality", "qualities", "scores")


class ArtifactError(VerdictflowError):
    """An artifact file that is missing, malformed or inconsistent."""


@dataclass
class Corpus:
    metas: list[DocMeta]
    vectors: npt.NDArray[np.float32] | None


def _opt_str(values: Any, i: int) -> str | None:
    if values is None:
        return None
    v = values[i]
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)


def load_npz(path: Path) -> Corpus:
    """Documents and (optionally) their vectors from a vectors NPZ."""
    if not path.is_file():
        raise ArtifactError(f"{path}: no such file")
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"{path}: not a readable NPZ ({exc})") from None
    with data:
        for name in ("doc_ids", "concept_texts"):
            if name not in data:
                raise ArtifactError(f"{path}: missing array {name!r} (has {sorted(data.files)})")
        ids = [str(x) for x in data["doc_ids"]]
        texts = [str(x) for x in data["concept_texts"]]
        n = len(ids)
        tmd = data.get("tmd_codes")
        lanes = data.get("lane_indices")
        vectors = np.asarray(data["vectors"], dtype=np.float32) if "vectors" in data else None
    for name, arr in (("concept_texts", texts), ("tmd_codes", tmd), ("lane_indices", lanes)):
        if arr is not None and len(arr) != n:
            raise ArtifactError(f"{path}: {name} has {len(arr)} rows, doc_ids has {n}")
    if vectors is not None:
        if vectors.ndim != 2 or len(vectors) != n:
            raise ArtifactError(f"{path}: vectors has shape {vectors.shape}, doc_ids has {n}")
        if not np.isfinite(vectors).all():
            raise ArtifactError(f"{path}: vectors contain NaN or infinite values")
    metas = [
        DocMeta(
            doc_id=ids[i],
            text=texts[i],
            tmd_code=_opt_str(tmd, i),
            lane_index=int(lanes[i]) if lanes is not None else None,
        )
        for i in range(n)
    ]
    return Corpus(metas, vectors)


def _checked(path: Path, where: str, doc_id: object, quality: object) -> tuple[str, float]:
    if not isinstance(doc_id, str) or not doc_id:
        raise ArtifactError(f"{path}{where}: doc_id must be a non-empty string")
    if isinstance(quality, bool) or not isinstance(quality, int | float):
        raise ArtifactError(f"{path}{where}: quality must be a number")
    q = float(quality)
    if not (math.isfinite(q) and 0.0 <= q <= 1.0):
        raise ArtifactError(f"{path}{where}: quality {q!r} is not in [0, 1]")
    return doc_id, q


def load_quality(path: Path) -> list[tuple[str, float]]:
    """``(doc_id, quality)`` pairs from ``id_quality.jsonl`` or ``id_quality.npz``."""
    if not path.is_file():
        raise ArtifactError(f"{path}: no such file")
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as data:
            name = next((a for a in _QUALITY_ARRAYS if a in data), None)
            if "doc_ids" not in data or name is None:
                raise ArtifactError(f"{path}: needs arrays 'doc_ids' and 'quality'")
            ids, qs = data["doc_ids"], data[name]
            if len(ids) != len(qs):
                raise ArtifactError(f"{path}: {len(ids)} doc_ids for {len(qs)} quality values")
            return [
                _checked(path, f"[{i}]", str(d), float(q))
                for i, (d, q) in enumerate(zip(ids, qs, strict=True))
            ]
    rows = []
    for n, line in enumerate(path.read_bytes().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ArtifactError(f"{path}:{n}: not JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise ArtifactError(f"{path}:{n}: expected a JSON object")
        rows.append(_checked(path, f":{n}", obj.get("doc_id"), obj.get("quality")))
    return rows


def load_index(path: Path) -> Any:
    """A FAISS index file (checked against the NPZ by the vector index when loaded)."""
    if not path.is_file():
        raise ArtifactError(f"{path}: no such file")
    try:
        return faiss.read_index(str(path))
    except RuntimeError as exc:
        raise ArtifactError(f"{path}: not a FAISS index ({str(exc).splitlines()[0]})") from None
