"""The default offline text embedder, shared by the quality agents and the retriever.

Why feature hashing: the default must work with no model download, be deterministic across
processes and machines, and embed one text without corpus state (a stream agent sees documents
one at a time; a fitted vocabulary or IDF would change every stored vector whenever it is
refitted). scikit-learn's ``HashingVectorizer`` with signed hashing (murmurhash3, fixed seed) is
a sparse Johnson-Lindenstrauss projection of the bag of words, so cosines between hashed
vectors estimate cosines between the term-frequency vectors. Term frequencies are dampened with
``log1p`` (sublinear tf) and English stop words are dropped. The result is L2-normalised float32.

The vectors are ``HashingVectorizer``'s, computed here from its three parts: its analyzer
(:func:`~verdictflow.evaluators.tokenize.english_words`), MurmurHash3 x86-32 of each word's
UTF-8 bytes with seed 0 (the ``murmurhash`` package spaCy is built on, the same function as
scikit-learn's ``murmurhash3_32``), and its rule for a feature's column and sign. Building the
vectorizer imported scikit-learn's estimator base, SciPy's ``stats`` and pandas: 2.0 s of every
worker's start, for the docs agent's embedder (2026-11-30). ``tests/evaluators/
test_embedding.py`` holds the vectors equal to ``HashingVectorizer``'s, bit for bit, on the
data's texts.

It is a lexical embedder: near-duplicates land at cosine ~1 (what the duplicate penalty needs),
but retrieval quality is well below BM25 at 384 dimensions (SciFact nDCG@10 ~0.41 measured on
this corpus); the retriever therefore also offers lexical and hybrid modes. ``version`` names
every choice that changes a vector and goes into artifacts and verdict evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol

import numpy as np
import numpy.typing as npt
from murmurhash.mrmr import hash as murmur_hash

from verdictflow.evaluators.tokenize import english_words

DEFAULT_DIM = 384

FloatMatrix = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Anything that turns texts into L2-normalised float32 rows of a fixed dimension."""

    dim: int
    version: str

    def embed(self, texts: Sequence[str]) -> FloatMatrix: ...


class HashingEmbedder:
    """Signed feature hashing of word unigrams, sublinear tf, stop words removed, L2 norm."""

    def __init__(self, dim: int = DEFAULT_DIM) -> None:
        if dim < 8:
            raise ValueError(f"embedding dimension must be >= 8, got {dim}")
        self.dim = dim
        self.version = f"vf-hash/1:sklearn-hashing:dim={dim}:uni:stop=english:log1p:l2"

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embed ``texts``; an empty or stop-word-only text gives the zero vector."""
        counts = np.zeros((len(texts), self.dim), dtype=np.float64)
        for row, text in enumerate(texts):
            words = english_words(text)
            if words:
                hashes = np.fromiter(map(murmur_hash, words), dtype=np.int64, count=len(words))
                # HashingVectorizer's column and sign (``alternate_sign``): |hash| modulo the
                # dimension (|-2**31| is 2**31 in int64, which is what scikit-learn's special
                # case for it works out to), + for a hash >= 0; a column's words summed.
                np.add.at(counts[row], np.abs(hashes) % self.dim, np.where(hashes >= 0, 1.0, -1.0))
        dense = np.sign(counts) * np.log1p(np.abs(counts))
        norms = np.linalg.norm(dense, axis=1, keepdims=True)
        dense = np.divide(dense, norms, out=np.zeros_like(dense), where=norms > 0)
        result: FloatMatrix = dense.astype(np.float32)
        return result


@lru_cache(maxsize=4)
def default_embedder(dim: int = DEFAULT_DIM) -> HashingEmbedder:
    """The process-wide default embedder (stateless, so sharing one instance is safe)."""
    return HashingEmbedder(dim)


def embed_texts(texts: Sequence[str], dim: int = DEFAULT_DIM) -> FloatMatrix:
    """Embed with the default embedder: the one call the agents and the retriever share."""
    return default_embedder(dim).embed(texts)
