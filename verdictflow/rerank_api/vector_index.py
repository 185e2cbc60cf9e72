"""The retriever's mutable vector index: a read-mostly main segment plus a small write buffer.

Why segments: FAISS's HNSW cannot delete, and appending to any FAISS index may reallocate its
whole storage (150 MB at 100k x 384 float32) while a search waits on the lock. So:

- **main**: exact ``IndexFlatIP`` below ``hnsw_threshold`` live documents, ``IndexHNSWFlat``
  (inner product) above it, or an index file given at start-up. Never appended to; a delete or
  an update only clears the row's bit in an ``alive`` bitmap (a tombstone), and searches skip
  dead rows inside FAISS through an ``IDSelectorBitmap``.
- **delta**: a small exact ``IndexFlatIP`` that takes every insert; its reallocations copy a few
  MB at most.
- **compaction** (the periodic rebuild): when the delta outgrows ``max(delta_min, 10 % of
  main)`` or tombstones exceed ``dead_ratio`` of main, the current segments are frozen (a new
  empty delta takes further inserts), a new main is built from their live rows *outside the
  lock*, and swapped in under it; rows killed during the build stay dead after the swap.

Mutations and searches hold one lock, so they never race; the costly parts (FAISS search,
building) release the GIL, and the lock is held only for microseconds by a mutation.
Vectors are L2-normalised on the way in, so inner product is the cosine.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import faiss
import numpy as np
import numpy.typing as npt

logger = logging.getLogger(__name__)

# faiss's bundled type hints miss the search-parameter classes; go through an untyped alias.
_faiss: Any = faiss

FloatMatrix = npt.NDArray[np.float32]
Hit = tuple[str, float]


@dataclass(frozen=True)
class IndexConfig:
    """Index shape and maintenance thresholds (from the API settings)."""

    dim: int = 384
    hnsw_threshold: int = 20_000
    hnsw_m: int = 32
    ef_construction: int = 80
    ef_search: int = 128
    delta_min: int = 1024
    dead_ratio: float = 0.2


def normalise(vectors: npt.ArrayLike, dim: int) -> FloatMatrix:
    """Rows as contiguous float32 of unit length (a zero row stays zero); checks shape.

    Values are checked as float32 (what is stored: a value beyond its range is refused, not
    turned into an infinity) and normalised in float64 (a large finite vector does not
    overflow its norm)."""
    with np.errstate(over="ignore", invalid="ignore"):
        arr = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))
    if arr.ndim != 2 or arr.shape[1] != dim:
        raise ValueError(f"expected vectors of shape (n, {dim}), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError("vectors contain NaN, infinite values or values beyond float32")
    wide = arr.astype(np.float64)
    norms = np.linalg.norm(wide, axis=1, keepdims=True)
    unit = np.divide(wide, norms, out=np.zeros_like(wide), where=norms > 0)
    out: FloatMatrix = np.ascontiguousarray(unit, dtype=np.float32)
    return out


class _Segment:
    """One FAISS index with the doc id and liveness of each row."""

    def __init__(self, index: Any, kind: str, ids: list[str], source: FloatMatrix | None = None):
        self.index = index
        self.kind = kind
        self.ids = ids
        self.alive = np.ones(len(ids), dtype=bool)
        self.n_dead = 0
        self.source = source  # vectors of an index loaded from a file (it may not reconstruct)
        self._bitmap: npt.NDArray[np.uint8] | None = None
        self._selector: Any = None

    def append(self, ids: list[str], vectors: FloatMatrix) -> int:
        start = len(self.ids)
        self.index.add(vectors)
        self.ids.extend(ids)
        self.alive = np.concatenate([self.alive, np.ones(len(ids), dtype=bool)])
        self._bitmap = None
        return start

    def kill(self, pos: int) -> None:
        if self.alive[pos]:
            self.alive[pos] = False
            self.n_dead += 1
            self._bitmap = None

    def vectors(self) -> FloatMatrix:
        if self.source is not None:
            return self.source
        out: FloatMatrix = self.index.reconstruct_n(0, len(self.ids))
        return out

    def _params(self, k: int, ef_search: int) -> Any:
        if self.n_dead == 0:
            if self.kind == "hnsw":
                return _faiss.SearchParametersHNSW(efSearch=max(ef_search, k))
            return None
        if self._bitmap is None:
            self._bitmap = np.packbits(self.alive, bitorder="little")
            self._selector = faiss.IDSelectorBitmap(len(self.alive), faiss.swig_ptr(self._bitmap))
        if self.kind == "hnsw":
            return _faiss.SearchParametersHNSW(sel=self._selector, efSearch=max(ef_search, k))
        return _faiss.SearchParameters(sel=self._selector)

    def search(self, queries: FloatMatrix, k: int, ef_search: int) -> list[list[Hit]]:
        live = len(self.ids) - self.n_dead
        if live == 0 or k <= 0:
            return [[] for _ in range(len(queries))]
        if self.kind == "file":  # arbitrary index type: over-fetch past the tombstones
            fetch = min(len(self.ids), k + self.n_dead)
            scores, rows = self.index.search(queries, fetch)
        else:
            fetch = min(live, k)
            scores, rows = self.index.search(queries, fetch, params=self._params(fetch, ef_search))
        out: list[list[Hit]] = []
        ids = self.ids
        for qs, qr in zip(scores, rows, strict=True):
            # masks and tolist() in numpy: per-element numpy scalars cost ~0.2 ms a query
            keep = qr >= 0
            keep[keep] = self.alive[qr[keep]]
            kept = zip(qr[keep][:k].tolist(), qs[keep][:k].tolist(), strict=True)
            out.append([(ids[r], s) for r, s in kept])
        return out


class VectorIndex:
    """doc_id -> unit vector, searchable by cosine; safe to mutate while searched."""

    def __init__(self, config: IndexConfig) -> None:
        self.config = config
        self._lock = threading.Lock()
        self._main: _Segment | None = None
        self._frozen: list[_Segment] = []
        self._delta = self._new_flat()
        self._where: dict[str, tuple[_Segment, int]] = {}
        self._compacting = False
        self.compactions = 0

    # -- shape -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._where

    @property
    def kind(self) -> str:
        """The main segment's kind: ``flat``, ``hnsw``, ``file`` or ``empty``."""
        return self._main.kind if self._main is not None else "empty"

    def stats(self) -> dict[str, Any]:
        with self._lock:
            main = self._main
            return {
                "kind": self.kind,
                "live": len(self._where),
                "main_rows": len(main.ids) if main else 0,
                "main_dead": main.n_dead if main else 0,
                "delta_rows": len(self._delta.ids),
                "frozen_segments": len(self._frozen),
                "compactions": self.compactions,
            }

    def _new_flat(self) -> _Segment:
        return _Segment(faiss.IndexFlatIP(self.config.dim), "flat", [])

    def _build(self, ids: list[str], vectors: FloatMatrix) -> _Segment:
        """A fresh main segment: exact below the HNSW threshold, HNSW at or above it."""
        cfg = self.config
        if len(ids) >= cfg.hnsw_threshold:
            index: Any = faiss.IndexHNSWFlat(cfg.dim, cfg.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = cfg.ef_construction
            index.hnsw.efSearch = cfg.ef_search
            kind = "hnsw"
        else:
            index = faiss.IndexFlatIP(cfg.dim)
            kind = "flat"
        if len(ids):
            index.add(vectors)
        return _Segment(index, kind, ids)

    # -- bulk load ---------------------------------------------------------------------------
    def load(self, doc_ids: Sequence[str], vectors: npt.ArrayLike, index: Any = None) -> None:
        """Replace everything with ``doc_ids`` and their vectors (artifact start-up).

        ``index``, when given, must hold the same rows in the same order (an index file built
        over the NPZ); otherwise one is built. Duplicate doc ids: the last row wins.
        """
        vecs = normalise(vectors, self.config.dim)
        ids = list(doc_ids)
        if len(ids) != len(vecs):
            raise ValueError(f"{len(ids)} doc ids for {len(vecs)} vectors")
        if index is not None:
            if index.d != self.config.dim or index.ntotal != len(ids):
                raise ValueError(
                    f"index has {index.ntotal} vectors of dimension {index.d}; "
                    f"expected {len(ids)} of dimension {self.config.dim}"
                )
            if index.metric_type != faiss.METRIC_INNER_PRODUCT:
                raise ValueError("index file must use inner product (cosine on unit vectors)")
            seg = _Segment(index, "file", ids, source=vecs)
        else:
            seg = self._build(ids, vecs)
        where: dict[str, tuple[_Segment, int]] = {}
        for pos, doc_id in enumerate(ids):
            old = where.get(doc_id)
            if old is not None:
                seg.kill(old[1])
            where[doc_id] = (seg, pos)
        with self._lock:
            self._main, self._frozen, self._delta = seg, [], self._new_flat()
            self._where = where

    # -- mutations ---------------------------------------------------------------------------
    def upsert(self, doc_ids: Sequence[str], vectors: npt.ArrayLike) -> None:
        """Insert or replace documents (one batch, one short lock hold)."""
        vecs = normalise(vectors, self.config.dim)
        last: dict[str, int] = {d: i for i, d in enumerate(doc_ids)}  # last row of a doc wins
        rows = sorted(last.values())
        ids = [doc_ids[i] for i in rows]
        batch = np.ascontiguousarray(vecs[rows])
        with self._lock:
            for doc_id in ids:
                old = self._where.get(doc_id)
                if old is not None:
                    old[0].kill(old[1])
            start = self._delta.append(ids, batch)
            for offset, doc_id in enumerate(ids):
                self._where[doc_id] = (self._delta, start + offset)

    def delete(self, doc_ids: Sequence[str]) -> int:
        """Tombstone documents; return how many were present."""
        removed = 0
        with self._lock:
            for doc_id in doc_ids:
                old = self._where.pop(doc_id, None)
                if old is not None:
                    old[0].kill(old[1])
                    removed += 1
        return removed

    # -- search ------------------------------------------------------------------------------
    def search(self, queries: npt.ArrayLike, k: int) -> list[list[Hit]]:
        """Top ``k`` live documents per query by cosine, ties by doc_id."""
        q = normalise(np.atleast_2d(np.asarray(queries, dtype=np.float32)), self.config.dim)
        ef = self.config.ef_search
        with self._lock:
            segments = [s for s in (self._main, *self._frozen, self._delta) if s is not None]
            parts = [seg.search(q, k, ef) for seg in segments]
        merged: list[list[Hit]] = []
        for i in range(len(q)):
            hits = [h for part in parts for h in part[i]]
            hits.sort(key=lambda h: (-h[1], h[0]))
            merged.append(hits[:k])
        return merged

    # -- maintenance -------------------------------------------------------------------------
    def needs_compaction(self) -> bool:
        with self._lock:
            if self._compacting:
                return False
            main_rows = len(self._main.ids) if self._main else 0
            delta_limit = max(self.config.delta_min, main_rows // 10)
            if len(self._delta.ids) >= delta_limit:
                return True
            main = self._main
            return main is not None and main.n_dead > self.config.dead_ratio * max(1, main_rows)

    def compact(self) -> bool:
        """Rebuild main from all live rows (run it in a thread); False if nothing to do."""
        if not self.needs_compaction():
            return False
        with self._lock:
            self._compacting = True
            # Segments frozen by a failed earlier build are folded in too.
            frozen = [s for s in (self._main, *self._frozen, self._delta) if s is not None]
            self._frozen, self._main, self._delta = frozen, None, self._new_flat()
            masks = [seg.alive.copy() for seg in frozen]
        try:
            ids: list[str] = []
            chunks: list[FloatMatrix] = []
            sources: list[tuple[_Segment, npt.NDArray[np.intp]]] = []
            for seg, mask in zip(frozen, masks, strict=True):
                rows = np.flatnonzero(mask)
                if len(rows):
                    chunks.append(seg.vectors()[rows])
                    ids.extend(seg.ids[r] for r in rows)
                sources.append((seg, rows))
            vectors = (
                np.ascontiguousarray(np.concatenate(chunks))
                if chunks
                else np.zeros((0, self.config.dim), dtype=np.float32)
            )
            new = self._build(ids, vectors)  # the slow part, outside the lock
            with self._lock:
                new.alive = np.concatenate(
                    [seg.alive[rows] for seg, rows in sources] or [np.zeros(0, dtype=bool)]
                )
                new.n_dead = int(len(new.alive) - new.alive.sum())
                for pos, doc_id in enumerate(ids):
                    if new.alive[pos]:
                        self._where[doc_id] = (new, pos)
                self._main, self._frozen = new, []
                self.compactions += 1
            logger.info("index compacted: %d live rows in a %s main segment", len(ids), new.kind)
            return True
        finally:  # on a failed build the frozen segments keep serving until the next try
            with self._lock:
                self._compacting = False
