"""The retriever's state and its search pipeline (synchronous; the API runs it in a thread).

State: document metadata (text, lane, tmd_code, lane_index, version), the quality map, the
vector index and the BM25 snapshot. It is filled either by the topic follower (one batch of
decoded records at a time) or from artifacts, through the same two methods, so both sources
give the same state for the same documents.

Versions make replays idempotent and reorderings harmless, by the rule the worker applies too
(:mod:`verdictflow.evaluators.doc_versions`): a document update or quality row older than the
one held (by ``version``) is ignored; an equal version replaces (the later record wins, which
is what a producer correcting a row without bumping the version expects); a delete leaves a
tombstone with its version, so an older upsert does not bring the document back.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from verdictflow.evaluators.doc_versions import supersedes
from verdictflow.evaluators.embedding import Embedder
from verdictflow.evaluators.vectors import vector_problem
from verdictflow.models import DocQuality, DocUpdate
from verdictflow.rerank_api.blend import (
    Blended,
    Fusion,
    Weights,
    blend,
    candidate_count,
    fuse,
    normalise_by_max,
)
from verdictflow.rerank_api.lexical import LexicalIndex
from verdictflow.rerank_api.vector_index import IndexConfig, VectorIndex

logger = logging.getLogger(__name__)

Mode = Literal["dense", "lexical", "hybrid"]
_ID_NAMESPACE = uuid.UUID("5b0e3f0c-6a39-4d55-9a7e-1f0c2d7b9e61")


@dataclass(frozen=True, slots=True)
class DocMeta:
    """What a search result shows about a document besides its scores."""

    doc_id: str
    text: str
    lane: str | None = None
    tmd_code: str | None = None
    lane_index: int | None = None
    version: int | None = None


@dataclass(frozen=True, slots=True)
class SearchLimits:
    overfetch: int = 5
    min_candidates: int = 100
    max_candidates: int = 2000


@dataclass
class SearchOutcome:
    """Ranked results plus where the time went (seconds), for metrics and the benchmark."""

    hits: list[tuple[Blended, DocMeta]]
    timings: dict[str, float] = field(default_factory=dict)


@dataclass
class ApplyCounts:
    applied: int = 0
    stale: int = 0
    rejected: int = 0
    reasons: list[str] = field(default_factory=list)


@functools.lru_cache(maxsize=65536)
def result_id(doc_id: str) -> str:
    """The item ``id``: a UUID derived from the doc_id (stable across replicas and restarts).

    Cached: uuid5 (SHA-1 and the UUID object) was 9 % of the event loop's time at 160 req/s,
    ten per request, and the same popular documents come back query after query."""
    return str(uuid.uuid5(_ID_NAMESPACE, doc_id))


class QueryVectorCache:
    """Query vectors by exact query text, least recently used out first (thread-safe)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, query: str) -> npt.NDArray[np.float32] | None:
        if not self.capacity:
            return None
        with self._lock:
            vector = self._entries.get(query)
            if vector is None:
                self.misses += 1
                return None
            self._entries.move_to_end(query)
            self.hits += 1
            return vector

    def put(self, query: str, vector: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Keep ``vector`` for ``query`` unless one is kept already; the one kept."""
        if not self.capacity:
            return vector
        with self._lock:
            kept = self._entries.setdefault(query, vector)  # the first stays (see Retriever)
            self._entries.move_to_end(query)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
            return kept

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "entries": len(self._entries),
                    "capacity": self.capacity}  # fmt: skip


class Retriever:
    """Documents, quality and indexes, with one search entry point."""

    def __init__(
        self,
        embedder: Embedder,
        index_config: IndexConfig,
        limits: SearchLimits | None = None,
        fusion: Fusion = "rrf",
        query_cache: int = 0,
        query_embedder: Embedder | None = None,
    ) -> None:
        """``query_embedder``: what embeds queries when it is not ``embedder`` (the int8 query
        encoder; documents keep ``embedder``'s vectors)."""
        if embedder.dim != index_config.dim:
            raise ValueError(
                f"embedder gives {embedder.dim}-d vectors, index is {index_config.dim}"
            )
        self.embedder = embedder
        self.query_embedder = query_embedder or embedder
        if self.query_embedder.dim != embedder.dim:
            raise ValueError("the query embedder's dimension differs from the documents'")
        self.index = VectorIndex(index_config)
        self.lexical = LexicalIndex()
        self.limits = limits or SearchLimits()
        self.fusion: Fusion = fusion
        # Query vectors by exact query text. An embedder is deterministic (one text, one
        # vector), so a cached vector is the vector: rankings are identical with or without
        # the cache. It matters for a neural embedder, whose ~10 ms per query would otherwise
        # cap a 2-core replica near 100 req/s (docs/retriever.md, Embedders). With the int8
        # encoder and micro-batching a vector may depend on its batch-mates (query_batcher.py):
        # the cache then keeps the first one computed, so a repeated query ranks the same.
        self.query_cache = QueryVectorCache(query_cache)
        self.docs: dict[str, DocMeta] = {}
        self.quality: dict[str, float] = {}
        self._quality_versions: dict[str, int | None] = {}
        #: The version of each deleted document's delete (tombstones; see the module doc).
        self._deleted: dict[str, int | None] = {}
        self._docs_changed = threading.Event()
        self._docs_lock = threading.Lock()  # doc map writes vs the BM25 rebuild's snapshot

    # -- loading -----------------------------------------------------------------------------
    def load(
        self,
        metas: Sequence[DocMeta],
        vectors: npt.ArrayLike | None,
        index: object = None,
    ) -> None:
        """Replace all documents (artifact start-up); vectors None: embed the texts."""
        if vectors is None:
            vectors = self.embedder.embed([m.text for m in metas])
        self.index.load([m.doc_id for m in metas], vectors, index)
        self.docs = {m.doc_id: m for m in metas}
        self.rebuild_lexical()

    def load_quality(self, rows: Iterable[tuple[str, float]]) -> int:
        """Set quality values from an artifact (no versions); returns how many were loaded."""
        n = 0
        for doc_id, q in rows:
            self.quality[doc_id] = q
            self._quality_versions[doc_id] = None
            n += 1
        return n

    # -- streaming updates -------------------------------------------------------------------
    def apply_docs(self, updates: Sequence[DocUpdate]) -> ApplyCounts:
        """Apply decoded ``docs`` records in order; bad vectors are rejected, not fatal."""
        counts = ApplyCounts()
        final: dict[str, DocUpdate] = {}
        for upd in updates:
            held = final.get(upd.doc_id)
            held_version = held.version if held else self._held_version(upd.doc_id)
            if not supersedes(upd.version, held_version):
                counts.stale += 1
                continue
            if upd.op == "upsert" and upd.vector is not None:
                problem = vector_problem(upd.vector, self.index.config.dim)
                if problem:
                    counts.rejected += 1
                    counts.reasons.append(f"{problem[0]}: {problem[1]}")
                    logger.warning("docs record %s rejected: %s", upd.doc_id, problem[1])
                    continue
            final[upd.doc_id] = upd
            counts.applied += 1
        deletes = [d for d, u in final.items() if u.op == "delete"]
        upserts = [u for u in final.values() if u.op == "upsert"]
        if deletes:
            self.index.delete(deletes)
            with self._docs_lock:
                for doc_id in deletes:
                    self.docs.pop(doc_id, None)
                    self._deleted[doc_id] = final[doc_id].version
        if upserts:
            given = [u for u in upserts if u.vector is not None]
            to_embed = [u for u in upserts if u.vector is None]
            if given:
                self.index.upsert([u.doc_id for u in given], [u.vector or [] for u in given])
            if to_embed:
                vectors = self.embedder.embed([u.text for u in to_embed])
                self.index.upsert([u.doc_id for u in to_embed], vectors)
            with self._docs_lock:
                for u in upserts:
                    self.docs[u.doc_id] = DocMeta(u.doc_id, u.text, u.lane, version=u.version)
                    self._deleted.pop(u.doc_id, None)
        if final:
            self._docs_changed.set()
        return counts

    def _held_version(self, doc_id: str) -> int | None:
        meta = self.docs.get(doc_id)
        return meta.version if meta else self._deleted.get(doc_id)

    def apply_quality(self, rows: Sequence[DocQuality]) -> ApplyCounts:
        """Apply decoded ``doc-quality`` rows; a value outside [0, 1] or NaN is rejected."""
        counts = ApplyCounts()
        for row in rows:
            if not (math.isfinite(row.quality) and 0.0 <= row.quality <= 1.0):
                counts.rejected += 1
                counts.reasons.append("quality_out_of_range")
                logger.warning("doc-quality row %s rejected: %r", row.doc_id, row.quality)
                continue
            if row.doc_id in self._quality_versions and not supersedes(
                row.version, self._quality_versions[row.doc_id]
            ):
                counts.stale += 1
                continue
            self.quality[row.doc_id] = row.quality
            self._quality_versions[row.doc_id] = row.version
            counts.applied += 1
        return counts

    def rebuild_lexical(self) -> None:
        """Rebuild the BM25 snapshot over the current documents (call from a thread)."""
        with self._docs_lock:
            self._docs_changed.clear()
            snapshot = list(self.docs.values())
        self.lexical.rebuild([m.doc_id for m in snapshot], [m.text for m in snapshot])

    @property
    def lexical_stale(self) -> bool:
        return self._docs_changed.is_set()

    # -- search ------------------------------------------------------------------------------
    def query_vector(self, query: str) -> npt.NDArray[np.float32]:
        """``query``'s vector, from the cache or embedded alone (and cached)."""
        vector = self.query_cache.get(query)
        if vector is None:
            vector = self.query_cache.put(query, self._embed_query(query))
        return vector

    def search(
        self,
        query: str,
        top_k: int,
        *,
        lane: str | None,
        mode: Mode,
        weights: Weights,
        qvec: npt.NDArray[np.float32] | None = None,
    ) -> SearchOutcome:
        """Retrieve, filter by lane, blend with quality, rank (ties by doc_id). ``qvec``: the
        query's vector when the caller has it (the API's micro-batcher)."""
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        if qvec is None and mode != "lexical":
            qvec = self.query_vector(query)
        timings["embed"] = time.perf_counter() - t0
        lim = self.limits
        n = candidate_count(top_k, lim.overfetch, lim.min_candidates, lim.max_candidates)
        corpus = max(len(self.docs), 1)
        while True:
            t1 = time.perf_counter()
            candidates = self._candidates(query, qvec, n, mode)
            timings["retrieve"] = timings.get("retrieve", 0.0) + time.perf_counter() - t1
            matching = [(d, s) for d, s in candidates if self._in_lane(d, lane)]
            # A lane filter may leave too few: widen the net (up to the whole corpus).
            if lane is None or len(matching) >= top_k or n >= corpus or len(candidates) < n:
                break
            n = min(n * 4, corpus)
        t2 = time.perf_counter()
        ranked = blend(matching, self.quality, weights, top_k)
        timings["blend"] = time.perf_counter() - t2
        hits = [(b, meta) for b in ranked if (meta := self.docs.get(b.doc_id)) is not None]
        timings["total"] = time.perf_counter() - t0
        return SearchOutcome(hits, timings)

    def _embed_query(self, query: str) -> npt.NDArray[np.float32]:
        vector: npt.NDArray[np.float32] = self.query_embedder.embed([query])
        vector.setflags(write=False)  # shared by every search of this text
        return vector

    def query_cache_stats(self) -> dict[str, int]:
        """Hits, misses and entries of the query-vector cache (zeros when it is off)."""
        return self.query_cache.stats()

    def _candidates(
        self, query: str, qvec: npt.NDArray[np.float32] | None, n: int, mode: Mode
    ) -> list[tuple[str, float]]:
        if mode == "dense":
            assert qvec is not None
            return self.index.search(qvec, n)[0]
        lexical = [(d, s) for d, s in self.lexical.search(query, n) if d in self.docs]
        if mode == "lexical":
            return normalise_by_max(lexical)
        assert qvec is not None
        dense = self.index.search(qvec, n)[0]
        return fuse(self.fusion, [dense, lexical])[:n]

    def _in_lane(self, doc_id: str, lane: str | None) -> bool:
        """A document without a lane belongs to every lane (see docs/retriever.md, decisions)."""
        if lane is None:
            return True
        meta = self.docs.get(doc_id)
        return meta is not None and (meta.lane is None or meta.lane == lane)
