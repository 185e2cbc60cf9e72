"""Where the repository and the shared human-labelled data sets are, for every test module."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

#: The repository's root (the folder with pyproject.toml).
ROOT = Path(__file__).resolve().parents[2]
#: ``../shared/data`` beside the repository (SummEval, SummEdits, HaluEval, QAGS, SciFact, ...).
SHARED_DATA = ROOT.parent / "shared" / "data"


def load_script(path: Path) -> ModuleType:
    """A bench or script file (not a package module) loaded as a module, so a test can call
    its functions: the figures a bench prints and the suite pins come from the same code."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None, f"cannot load {path}"
    assert spec.loader is not None, f"cannot load {path}"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
