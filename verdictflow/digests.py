"""The SHA-256 of a file's bytes: how a model, a data set or an input file is named in what is
built from it (a model card, a run file, a verdict's provenance). One helper, read in blocks, so a
data set of gigabytes is never held in memory to be named."""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_digest(path: Path) -> str:
    """SHA-256 (hex) of ``path``'s bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
