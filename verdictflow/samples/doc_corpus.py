"""Synthetic document traffic for the quality agents' tests and benchmarks, with its answer.

:func:`generate` gives ``docs`` and ``doc-edges`` lines (upserts with and without vectors,
planted exact and near duplicates, text updates, deletes, duplicate and removed edges,
self-loops, edges to documents that never arrive) and the final corpus and edge set those
lines leave behind, which is what ``score-quality`` is run on to check the stream.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import orjson

from verdictflow.evaluators.doc_versions import supersedes
from verdictflow.evaluators.embedding import Embedder, default_embedder

WORDS = [
    "ocean",
    "river",
    "mountain",
    "forest",
    "desert",
    "island",
    "glacier",
    "volcano",
    "canyon",
    "valley",
    "planet",
    "star",
    "galaxy",
    "comet",
    "orbit",
    "energy",
    "matter",
    "atom",
    "cell",
    "gene",
    "protein",
    "enzyme",
    "virus",
    "vaccine",
    "market",
    "trade",
    "price",
    "bank",
    "loan",
    "law",
    "court",
    "vote",
    "treaty",
    "empire",
    "war",
    "peace",
    "music",
    "poem",
    "novel",
    "paint",
]


@dataclass
class DocTraffic:
    doc_lines: list[bytes] = field(default_factory=list)
    edge_lines: list[bytes] = field(default_factory=list)
    #: doc_id -> (text, vector or None), after every upsert and delete that applied
    final_docs: dict[str, tuple[str, list[float] | None]] = field(default_factory=dict)
    final_edges: set[tuple[str, str]] = field(default_factory=set)
    #: doc_id -> the version of the last update that applied (the shared version rule)
    versions: dict[str, int | None] = field(default_factory=dict)
    #: updates sent that the rule ignores (older than the document's version)
    stale: int = 0

    def _applies(self, doc_id: str, version: int | None) -> bool:
        if not supersedes(version, self.versions.get(doc_id)):
            self.stale += 1
            return False
        self.versions[doc_id] = version
        return True

    def doc(self, doc_id: str, text: str, vector: list[float] | None = None, v: int = 1) -> None:
        obj: dict[str, object] = {"doc_id": doc_id, "op": "upsert", "text": text, "version": v}
        if vector is not None:
            obj["vector"] = vector
        self.doc_lines.append(orjson.dumps(obj))
        if self._applies(doc_id, v):
            self.final_docs[doc_id] = (text, vector)

    def delete(self, doc_id: str, v: int | None = None) -> None:
        obj: dict[str, object] = {"doc_id": doc_id, "op": "delete"}
        if v is not None:
            obj["version"] = v
        self.doc_lines.append(orjson.dumps(obj))
        if self._applies(doc_id, v):
            self.final_docs.pop(doc_id, None)

    def edge(self, src: str, dst: str, op: str = "add") -> None:
        self.edge_lines.append(orjson.dumps({"src": src, "dst": dst, "op": op, "kind": "cites"}))
        if src != dst:
            if op == "add":
                self.final_edges.add((src, dst))
            else:
                self.final_edges.discard((src, dst))

    def write_batch_inputs(
        self, npz: Path, edges: Path, dim: int = 384, embedder: Embedder | None = None
    ) -> None:
        """The final corpus as the batch tool's NPZ (row order = doc_id order) and edges;
        documents without a vector get ``embedder``'s (the default embedder's when None)."""
        ids = sorted(self.final_docs)
        texts = [self.final_docs[d][0] for d in ids]
        vectors = corpus_vectors(self, ids, dim, embedder)
        np.savez(npz, vectors=vectors, doc_ids=np.array(ids, dtype=str),
                 concept_texts=np.array(texts, dtype=str))  # fmt: skip
        lines = [orjson.dumps({"src": s, "dst": d}) for s, d in sorted(self.final_edges)]
        edges.write_bytes(b"".join(ln + b"\n" for ln in lines))


def corpus_vectors(
    traffic: DocTraffic, ids: list[str], dim: int, embedder: Embedder | None = None
) -> npt.NDArray[np.float32]:
    """Given vectors as float32; the others embedded by ``embedder`` (default: hashing)."""
    out = np.zeros((len(ids), dim), dtype=np.float32)
    missing = [i for i, d in enumerate(ids) if traffic.final_docs[d][1] is None]
    if missing:
        texts = [traffic.final_docs[ids[i]][0] for i in missing]
        out[missing] = (embedder or default_embedder(dim)).embed(texts)
    for i, d in enumerate(ids):
        vec = traffic.final_docs[d][1]
        if vec is not None:
            out[i] = np.asarray(vec, dtype=np.float32)
    return out


def _text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words)).capitalize() + "."


def generate(n_docs: int = 300, seed: int = 5, dim: int = 384) -> DocTraffic:
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    t = DocTraffic()
    ids = [f"doc-{i:05d}" for i in range(n_docs)]
    base_vec = nrng.normal(size=dim)
    for i, doc_id in enumerate(ids):
        if i % 10 == 3:  # carries its own vector
            vec = nrng.normal(size=dim)
            t.doc(doc_id, _text(rng, rng.randint(3, 120)), [round(float(x), 6) for x in vec])
        elif i % 10 == 7:  # a near-duplicate vector of a shared base (cosine ~ 1 - 1e-9)
            vec = base_vec + nrng.normal(scale=1e-5, size=dim)
            t.doc(doc_id, _text(rng, 20), [float(x) for x in vec])
        elif i % 17 == 5:  # an exact duplicate text of an earlier document
            t.doc(doc_id, t.final_docs[ids[i - 5]][0] if ids[i - 5] in t.final_docs else "x")
        elif i % 29 == 0:
            t.doc(doc_id, "\x01broken\x02 extraction " * 4)
        else:
            t.doc(doc_id, _text(rng, rng.randint(1, 200)))
    for i in range(n_docs // 8):  # updates: new text, or a new text equal to another's
        doc_id = ids[rng.randrange(n_docs)]
        other = ids[rng.randrange(n_docs)]
        if i % 3 == 0 and t.final_docs.get(other, (None, 1))[1] is None:
            t.doc(doc_id, t.final_docs[other][0], v=2)
        elif t.final_docs.get(doc_id, ("", None))[1] is None:
            t.doc(doc_id, _text(rng, rng.randint(5, 60)), v=2)
    for _ in range(n_docs // 20):  # out of order: older updates after newer ones (ignored)
        doc_id = ids[rng.randrange(n_docs)]
        if t.versions.get(doc_id) == 2:
            t.doc(doc_id, "A stale text that must not win.", v=1)
        elif doc_id in t.final_docs:
            t.delete(doc_id, v=0)  # a stale delete deletes nothing
    for _ in range(n_docs // 15):
        t.delete(ids[rng.randrange(n_docs)])
    for _ in range(n_docs * 2):
        a, b = ids[rng.randrange(n_docs)], ids[rng.randrange(n_docs)]
        t.edge(a, b)
        if rng.random() < 0.1:
            t.edge(a, b)  # the same edge again
        if rng.random() < 0.1:
            t.edge(a, b, "remove")
    for i in range(5):
        t.edge(ids[i], ids[i])  # self-loops
        t.edge(ids[i], f"ghost-{i}")  # an endpoint that never becomes a document
    t.edge(ids[1], ids[2], "remove")  # removing what may never have been added
    return t
