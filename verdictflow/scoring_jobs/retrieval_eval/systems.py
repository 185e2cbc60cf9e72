"""The systems ``rq-eval`` compares: a TREC run file, an in-process retriever, or a ``/search``.

Every source ends as the same :class:`System`: a ranking (doc ids, best first) per query, so
the metrics never know where a ranking came from and a config can face a run file.

- **run** (``--runA``): ranked by score descending, ties by ``lex(id)`` (the spec's rule).
- **config** (``--configA`` without ``url``): the API's own retriever (``Retriever``, FAISS,
  BM25, ``blend``), built from ``--corpus`` with the config's settings, queried in-process for
  the top k. Settings come from the config only, never from the environment, so a run is
  reproducible on another machine. FAISS runs single-threaded (HNSW builds are then
  deterministic).
- **url** (``--configA`` with ``url``): ``POST {url}/search`` for every query with the config's
  mode, lane and weights, eight requests in flight; the server's order is the ranking.

Only judged queries are searched (the others are not evaluated). Each source also keeps the
per-query candidates (score, quality, final score) for ``--emit-traces``; a run file has none.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import faiss
import httpx
import numpy as np
import numpy.typing as npt

from verdictflow.digests import file_digest
from verdictflow.embedders import make_embedder
from verdictflow.evaluators.embedding import Embedder
from verdictflow.evaluators.retrieval_metrics import rank_by_score
from verdictflow.exceptions import VerdictflowError
from verdictflow.rerank_api.artifacts import load_quality
from verdictflow.rerank_api.blend import Weights
from verdictflow.rerank_api.retriever import DocMeta, Retriever, SearchLimits
from verdictflow.rerank_api.vector_index import IndexConfig
from verdictflow.scoring_jobs.retrieval_eval.config import LoadedConfig, RetrieverConfig
from verdictflow.scoring_jobs.retrieval_eval.inputs import Document, RQInputError
from verdictflow.scoring_jobs.retrieval_eval.trec_io import TrecFormatError, read_trec_run

logger = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
#: One traced candidate: rank, doc_id, score (the mode's relevance), quality, final_score.
TraceRow = dict[str, Any]
#: The API's rule: exact search below this many documents, HNSW from it.
API_HNSW_THRESHOLD = 20_000
URL_CONCURRENCY = 8


@dataclass(frozen=True)
class System:
    """One side of the comparison: where it came from and its ranking per query."""

    label: str
    source: str
    path: str
    digest: str
    rankings: Mapping[str, Sequence[str]]
    traces: Mapping[str, Sequence[TraceRow]] | None = None
    trace_enabled: bool = False
    settings: Mapping[str, Any] = field(default_factory=dict)


def run_system(label: str, path: Path) -> System:
    """A system from a TREC run file, ranked by score descending, ties by ``lex(id)``."""
    try:
        run = read_trec_run(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise RQInputError(f"cannot read run {path}: {exc}") from None
    except TrecFormatError as exc:
        raise RQInputError(str(exc)) from None
    rankings = {qid: rank_by_score(pairs) for qid, pairs in run.items()}
    return System(label, "run", str(path), file_digest(path), rankings)


def _index_config(config: RetrieverConfig) -> IndexConfig:
    threshold = {"flat": 2**62, "hnsw": 1, "auto": API_HNSW_THRESHOLD}[config.index]
    return IndexConfig(dim=config.dim, hnsw_threshold=threshold)


def _limits(config: RetrieverConfig) -> SearchLimits:
    """The API's over-fetch rule, or exactly ``candidate_depth`` candidates (at least k)."""
    if config.candidate_depth is None:
        return SearchLimits()
    depth = config.candidate_depth
    return SearchLimits(overfetch=1, min_candidates=depth, max_candidates=depth)


def build_retriever(
    loaded: LoadedConfig, corpus: Sequence[Document], progress: Progress | None = None
) -> Retriever:
    """The API's retriever over ``corpus`` (texts embedded here) plus the config's quality."""
    config = loaded.config
    faiss.omp_set_num_threads(1)
    try:
        embedder = make_embedder(
            config.embedder, config.dim, config.embed_model_dir, threads=os.cpu_count() or 1
        )
        queries = embedder
        if config.embedder != "hashing" and config.query_encoder != "fp32":
            queries = make_embedder(
                config.embedder,
                config.dim,
                config.embed_model_dir,
                threads=1,
                quantize=config.query_encoder,
            )
        retriever = Retriever(
            embedder,
            _index_config(config),
            _limits(config),
            config.fusion,
            query_embedder=queries,
        )
        vectors = corpus_vectors(embedder, corpus, progress)
        retriever.load([DocMeta(d.doc_id, d.text) for d in corpus], vectors)
        if loaded.quality_path is not None:
            retriever.load_quality(load_quality(loaded.quality_path))
    except VerdictflowError as exc:
        raise RQInputError(f"{loaded.path}: {exc}") from None
    return retriever


#: Corpus vectors by (embedder version, corpus digest): systems A and B with the same
#: embedder embed the corpus once (a neural model takes minutes on a few thousand documents).
_VECTORS: dict[tuple[str, str], npt.NDArray[np.float32]] = {}
_EMBED_CHUNK = 64


def corpus_vectors(
    embedder: Embedder, corpus: Sequence[Document], progress: Progress | None = None
) -> npt.NDArray[np.float32]:
    """The corpus texts embedded (in chunks, reporting progress), reused across systems."""
    texts = [d.text for d in corpus]
    digest = hashlib.sha256()
    for doc in corpus:
        digest.update(doc.doc_id.encode() + b"\0" + doc.text.encode() + b"\0")
    key = (embedder.version, digest.hexdigest())
    if key not in _VECTORS:
        out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
        for start in range(0, len(texts), _EMBED_CHUNK):
            chunk = texts[start : start + _EMBED_CHUNK]
            out[start : start + len(chunk)] = embedder.embed(chunk)
            if progress is not None:
                progress(start + len(chunk), len(texts))
        _VECTORS.clear()  # keep one corpus: the vectors of a large one take hundreds of MB
        _VECTORS[key] = out
    return _VECTORS[key]


def config_system(
    label: str,
    loaded: LoadedConfig,
    corpus: Sequence[Document] | None,
    queries: Mapping[str, str],
    qids: Sequence[str],
    k: int,
    progress: Progress | None = None,
    embed_progress: Progress | None = None,
) -> System:
    """A system from a config: in-process retriever, or a running ``/search`` (``url``)."""
    if loaded.config.url is not None:
        results = asyncio.run(search_url(loaded, queries, qids, k, progress))
        return traced_system(label, loaded, "url", results)
    if corpus is None:
        raise RQInputError(f"{loaded.path}: an in-process retriever needs --corpus")
    retriever = build_retriever(loaded, corpus, embed_progress)
    results = search_in_process(loaded, retriever, queries, qids, k, progress)
    return traced_system(label, loaded, "config", results)


def traced_system(
    label: str, loaded: LoadedConfig, source: str, results: Mapping[str, Sequence[TraceRow]]
) -> System:
    """A config's system: rankings from the ranked candidates, which are kept as traces."""
    return System(
        label=label,
        source=source,
        path=str(loaded.path),
        digest=loaded.digest,
        rankings={qid: [row["doc_id"] for row in rows] for qid, rows in results.items()},
        traces=results,
        trace_enabled=loaded.config.trace,
    )


def search_in_process(
    loaded: LoadedConfig,
    retriever: Retriever,
    queries: Mapping[str, str],
    qids: Sequence[str],
    k: int,
    progress: Progress | None = None,
) -> dict[str, list[TraceRow]]:
    """The top ``k`` of every query through ``Retriever.search``, the code behind /search."""
    config = loaded.config
    weights = Weights(config.weights.w_cos, config.weights.w_quality)
    results: dict[str, list[TraceRow]] = {}
    for i, qid in enumerate(qids, start=1):
        outcome = retriever.search(
            queries[qid], k, lane=config.lane, mode=config.mode, weights=weights
        )
        results[qid] = [
            {
                "rank": rank,
                "doc_id": b.doc_id,
                "score": b.score,
                "quality": b.quality,
                "final_score": b.final_score,
            }
            for rank, (b, _) in enumerate(outcome.hits, start=1)
        ]
        if progress is not None:
            progress(i, len(qids))
    return results


async def search_url(
    loaded: LoadedConfig,
    queries: Mapping[str, str],
    qids: Sequence[str],
    k: int,
    progress: Progress | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> dict[str, list[TraceRow]]:
    """``POST /search`` for every query (eight in flight); any failure is one clear error."""
    config = loaded.config
    assert config.url is not None
    url = config.url.rstrip("/") + "/search"
    body: dict[str, Any] = {
        "top_k": k,
        "mode": config.mode,
        "w_cos": config.weights.w_cos,
        "w_quality": config.weights.w_quality,
    }
    if config.lane is not None:
        body["lane"] = config.lane
    results: dict[str, list[TraceRow]] = {}
    gate = asyncio.Semaphore(URL_CONCURRENCY)

    async def one(client: httpx.AsyncClient, qid: str) -> None:
        async with gate:
            try:
                response = await client.post(url, json={"q": queries[qid], **body})
            except httpx.HTTPError as exc:
                problem = f"{url} failed for query {qid}: {exc!r}"
                raise RQInputError(f"{loaded.path}: {problem}") from None
        if response.status_code != 200:
            detail = response.text.replace("\n", " ")[:200]
            raise RQInputError(
                f"{loaded.path}: {url} answered {response.status_code} for query {qid}: {detail}"
            )
        results[qid] = _items(loaded, qid, response)
        if progress is not None:
            progress(len(results), len(qids))

    async with httpx.AsyncClient(transport=transport, timeout=config.timeout_s) as client:
        await asyncio.gather(*(one(client, qid) for qid in qids))
    return {qid: results[qid] for qid in qids}


def _items(loaded: LoadedConfig, qid: str, response: httpx.Response) -> list[TraceRow]:
    """The ranked items of a /search response, checked (a malformed answer is an error)."""
    try:
        items = response.json()["items"]
        return [
            {
                "rank": rank,
                "doc_id": str(item["doc_id"]),
                "score": float(item["score"]),
                "quality": float(item["quality"]),
                "final_score": float(item["final_score"]),
            }
            for rank, item in enumerate(items, start=1)
        ]
    except (ValueError, KeyError, TypeError) as exc:
        raise RQInputError(
            f"{loaded.path}: malformed /search response for query {qid}: {exc!r}"
        ) from None
