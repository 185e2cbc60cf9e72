"""Whether a document's vector can be indexed: the one check the worker (which dead-letters
what fails it), its duplicate index reader and the API's follower (which skip it) all apply.

Vectors are stored as float32 (FAISS), so they are checked in float32: ``3.5e38`` and ``1e300``
are finite as JSON numbers and as Python floats, but infinite once cast, and an index fed one
raised on every later batch (issue 33: one document froze ``/search`` for good). Norms are
then taken in float64, so a large but representable vector normalises without overflow.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Why a vector was refused: the code (a metric label) and the detail.
VectorProblem = tuple[str, str]


def vector_problem(vector: Sequence[float] | None, dim: int) -> VectorProblem | None:
    """``("vector_dimension" | "vector_not_finite", detail)``, or None when it can be indexed
    (or there is no vector: the text is embedded instead)."""
    if vector is None:
        return None
    if len(vector) != dim:
        return "vector_dimension", f"vector has {len(vector)} dimensions, expected {dim}"
    with np.errstate(over="ignore", invalid="ignore"):
        stored = np.asarray(vector, dtype=np.float32)
    if not np.isfinite(stored).all():
        return (
            "vector_not_finite",
            "vector contains NaN, an infinity or a value beyond float32's range (3.4e38)",
        )
    return None
