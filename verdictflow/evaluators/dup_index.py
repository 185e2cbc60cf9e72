"""Near-duplicate counting over document vectors (spec 004's duplicate penalty), with FAISS.

Definition (shared by stream and batch, so they agree exactly):
``dups(d) = min(kdup, #{other documents e : cos(d, e) >= threshold})``.
That is "the neighbours among the kdup nearest, excluding the document itself, at cosine >=
0.999" with ties resolved: the documents at or above the threshold are a prefix of the ranking,
so *which* of several equally near duplicates FAISS returns first cannot change the count.

FAISS only proposes candidates (the kdup + 1 nearest by float32 inner product, so that the
document itself can be among them); each candidate is then checked with an exact float64
cosine of the stored unit vectors, so the threshold decision does not depend on FAISS's
summation order or on which index (flat, IVF) proposed the candidate. Self is excluded by id,
not by position, because an exact duplicate may outrank the document itself.

Vectors are L2-normalised in float64 and stored as float32 (:func:`unit_rows`); a zero vector
(an empty text embeds to zero) has cosine 0 with everything, so it has no duplicates and is
nobody's duplicate. Exact inner product (``IndexFlatIP``) is used in the stream: an insert or
delete is O(1)/O(n) with no training, and a search over 100k x 384-d vectors costs a few ms,
well inside the per-document budget; past a few million documents the index would need sharding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import faiss
import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
#: FAISS's float32 inner product may fall a few ulps short of the exact cosine: widen the
#: range search by this much, then decide with the exact float64 cosine.
_RANGE_SLACK = 1e-4
#: At most this many duplicates are listed per document (for re-score fan-out).
MAX_DUP_SET = 1000


class VectorError(ValueError):
    """A vector that cannot be indexed (wrong dimension, NaN or infinite values)."""


def unit_rows(vectors: npt.ArrayLike, dim: int | None = None) -> F32:
    """Rows L2-normalised in float64, returned as C-contiguous float32; zero rows stay zero.

    Raises :class:`VectorError` on NaN/infinite values or a dimension other than ``dim``.
    """
    with np.errstate(over="ignore", invalid="ignore"):  # beyond float32: refused below
        arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise VectorError(f"expected a 2-d array of vectors, got shape {arr.shape}")
    if dim is not None and arr.shape[1] != dim:
        raise VectorError(f"vector dimension {arr.shape[1]} differs from the index's {dim}")
    bad = ~np.isfinite(arr).all(axis=1)
    if bad.any():
        raise VectorError(f"{int(bad.sum())} vector(s) contain NaN or infinite values")
    v64 = arr.astype(np.float64)
    norms = np.linalg.norm(v64, axis=1, keepdims=True)
    unit = np.divide(v64, norms, out=np.zeros_like(v64), where=norms > 0)
    return np.ascontiguousarray(unit, dtype=np.float32)


def exact_cosines(unit: F32, candidates: F32) -> npt.NDArray[np.float64]:
    """Cosines of one stored unit vector with candidate rows, in float64, row by row."""
    u = unit.astype(np.float64)
    return np.array([float(np.dot(row.astype(np.float64), u)) for row in candidates])


def count_duplicates(
    self_label: int,
    labels: Sequence[int],
    cosines: Sequence[float],
    kdup: int,
    threshold: float,
) -> int:
    """``min(kdup, #candidates other than self with cosine >= threshold)``; label -1 (FAISS's
    "no result") is skipped."""
    pairs = zip(labels, cosines, strict=True)
    n = sum(1 for lab, c in pairs if lab >= 0 and lab != self_label and c >= threshold)
    return min(kdup, n)


def batch_dup_counts(
    unit: F32,
    kdup: int,
    threshold: float,
    index: faiss.Index | None = None,
    progress: Callable[[int], None] | None = None,
    chunk: int = 4096,
) -> npt.NDArray[np.int64]:
    """Duplicate count of every row of ``unit`` (rows are labels 0..n-1 of ``index``; an exact
    inner-product index is built when none is given)."""
    n = unit.shape[0]
    if index is None:
        index = faiss.IndexFlatIP(unit.shape[1])
        index.add(unit)
    k = min(kdup + 1, n)
    counts = np.zeros(n, dtype=np.int64)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        _, found = index.search(unit[start:stop], k)
        for r in range(stop - start):
            i = start + r
            labels = [int(x) for x in found[r] if x >= 0 and x != i]
            cos = list(exact_cosines(unit[i], unit[labels])) if labels else []
            counts[i] = count_duplicates(i, labels, cos, kdup, threshold)
        if progress is not None:
            progress(stop - start)
    return counts


class DuplicateIndex:
    """A mutable exact index of unit vectors keyed by doc_id (the stream's global view).

    It also keeps every document's duplicate-set size, up to date with each upsert and
    removal (one range search each), so that an update can say which *other* documents'
    counts it moved: :meth:`upsert` and :meth:`remove` return them. A count is capped at
    ``kdup``, so in a cluster of m copies only the first ``kdup`` arrivals move anyone's
    count; re-scoring just those makes a duplicate storm cost O(m * kdup) re-scores instead of
    O(m^2) (issue 33). The relation is symmetric (the float64 cosine of two stored vectors is
    the same either way), so the sizes stay exact.
    """

    def __init__(self, dim: int, kdup: int, threshold: float) -> None:
        self.dim = dim
        self.kdup = kdup
        self.threshold = threshold
        self._index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        self._label: dict[str, int] = {}
        self._doc: dict[int, str] = {}
        self._vec: dict[str, F32] = {}
        self._size: dict[str, int] = {}
        self._next = 0

    def __len__(self) -> int:
        return len(self._label)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._label

    def vector(self, doc_id: str) -> F32 | None:
        return self._vec.get(doc_id)

    def upsert(self, doc_id: str, unit: F32) -> list[str]:
        """Insert or replace ``doc_id``'s vector (already a unit row from :func:`unit_rows`);
        returns the other documents whose capped duplicate count this changed."""
        row = np.ascontiguousarray(unit.reshape(1, self.dim), dtype=np.float32)
        before: dict[str, int] = {}
        label = self._label.get(doc_id)
        if label is None:
            label = self._next
            self._next += 1
            self._label[doc_id] = label
            self._doc[label] = doc_id
        else:
            for other in self._neighbours(doc_id):
                before.setdefault(other, self._size[other])
                self._size[other] -= 1
            self._index.remove_ids(np.array([label], dtype=np.int64))  # type: ignore[arg-type]
        self._index.add_with_ids(row, np.array([label], dtype=np.int64))
        self._vec[doc_id] = row[0]
        found = self._neighbours(doc_id)
        for other in found:
            before.setdefault(other, self._size[other])
            self._size[other] += 1
        self._size[doc_id] = len(found)
        return self._moved(before)

    def remove(self, doc_id: str) -> list[str]:
        """Remove ``doc_id``; returns the other documents whose capped count this changed."""
        if doc_id not in self._label:
            return []
        before: dict[str, int] = {}
        for other in self._neighbours(doc_id):
            before[other] = self._size[other]
            self._size[other] -= 1
        label = self._label.pop(doc_id)
        self._index.remove_ids(np.array([label], dtype=np.int64))  # type: ignore[arg-type]
        del self._doc[label]
        del self._vec[doc_id]
        del self._size[doc_id]
        return self._moved(before)

    def dup_set_size(self, doc_id: str) -> int:
        """How many other documents are duplicates of ``doc_id`` (uncapped); 0 if unknown."""
        return self._size.get(doc_id, 0)

    def _moved(self, before: dict[str, int]) -> list[str]:
        cap = self.kdup
        return sorted(d for d, n in before.items() if min(cap, n) != min(cap, self._size[d]))

    def _neighbours(self, doc_id: str) -> list[str]:
        """Every other document at cosine >= threshold, sorted (uncapped)."""
        unit = self._vec.get(doc_id)
        if unit is None or not unit.any():
            return []
        _, _, found = self._index.range_search(unit[None, :], self.threshold - _RANGE_SLACK)
        others = sorted(self._doc[int(x)] for x in found if int(x) != self._label[doc_id])
        if not others:
            return []
        cos = exact_cosines(unit, np.stack([self._vec[o] for o in others]))
        return [o for o, c in zip(others, cos, strict=True) if c >= self.threshold]

    def dup_count(self, doc_id: str) -> int:
        """``dups(doc_id)`` over the current index; 0 for a document not in it."""
        unit = self._vec.get(doc_id)
        if unit is None:
            return 0
        k = min(self.kdup + 1, len(self._label))
        _, found = self._index.search(unit[None, :], k)
        labels = [int(x) for x in found[0] if x >= 0 and x != self._label[doc_id]]
        cands = np.stack([self._vec[self._doc[x]] for x in labels]) if labels else None
        cos = list(exact_cosines(unit, cands)) if cands is not None else []
        return count_duplicates(self._label[doc_id], labels, cos, self.kdup, self.threshold)

    def dup_set(self, doc_id: str) -> list[str]:
        """Every other document at cosine >= threshold (sorted, at most MAX_DUP_SET): those
        whose duplicate count may change when ``doc_id`` changes."""
        return self.duplicates(doc_id)[1]

    def duplicates(self, doc_id: str) -> tuple[int, list[str]]:
        """``(dups(doc_id), dup_set(doc_id))`` from one range search (the stream's hot path).

        The range search (widened by ``_RANGE_SLACK``, then the exact float64 cosine) finds
        *every* document at cosine >= threshold, so ``min(kdup, len(found))`` is the module's
        definition itself; :meth:`dup_count`'s top-(kdup + 1) search gives the same number,
        and the tests check both against :func:`batch_dup_counts`.
        """
        dups = self._neighbours(doc_id)
        return min(self.kdup, len(dups)), dups[:MAX_DUP_SET]
