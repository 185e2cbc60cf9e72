"""Where the repository and the shared human-labelled data sets are, for every test module."""

from __future__ import annotations

from pathlib import Path

#: The repository's root (the folder with pyproject.toml).
ROOT = Path(__file__).resolve().parents[2]
#: ``../shared/data`` beside the repository (SummEval, SummEdits, HaluEval, QAGS, SciFact, ...).
SHARED_DATA = ROOT.parent / "shared" / "data"
