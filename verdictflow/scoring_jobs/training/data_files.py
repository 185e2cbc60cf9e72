"""Where training reads its files from: one clear error for a missing data set. Kept free of
the event models so the checker's trainer can run where only PyTorch is installed (a GPU
machine given the pairs file)."""

from __future__ import annotations

from pathlib import Path

from verdictflow.exceptions import VerdictflowError


class TrainingDataError(VerdictflowError):
    """A data set the faithfulness model or the checker needs is missing or malformed."""


def require(path: Path) -> Path:
    if not path.is_file():
        raise TrainingDataError(
            f"{path} not found: point --data at the shared data folder (../shared/data)"
        )
    return path
