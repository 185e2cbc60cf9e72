"""NLTK imported without the SciPy and scikit-learn it imports only to offer them.

Why: verdictflow uses two things of NLTK, the Treebank word tokenizer's rules (completeness
keywords, a lexical kind) and the WordNet corpus reader (the NLP tier's lexicon). But
``import nltk`` imports every subpackage, and several of those import SciPy's ``stats`` and
scikit-learn (and through it pandas) for features verdictflow never calls: association measures,
``SklearnClassifier``, the transition parser. That was 2.4 s of the 3.0 s ``import nltk`` takes
on the 2-core VM, a quarter of a lexical worker's start, paid again by every process that scores
(measured 2026-11-30: ``python -X importtime``; 0.6 s with them left out).

NLTK imports each of them in a ``try: ... except ImportError`` and goes on without the feature.
So for the one import of NLTK, :func:`import_nltk` marks those packages as not importable, the
way Python documents for it (``None`` in ``sys.modules``), and takes the marks away at once:
only names not imported yet are marked, so a process that already holds SciPy gives it to NLTK
as before, and one that imports scikit-learn later (calibration's ROC curves) gets it as usual.
The NLTK features that lose their optional dependency are none that verdictflow calls; the
tokenizer's rules and the WordNet reader are the same objects either way
(``tests/evaluators/test_completeness.py`` compares the tokens with NLTK's own tokenizer).

A lock makes the import happen once; another thread importing SciPy during that import (none
does: scoring imports NLTK while it sets up) would get an ImportError, so the marks are held no
longer than NLTK's import.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from types import ModuleType

logger = logging.getLogger(__name__)

#: Packages NLTK imports only for optional features verdictflow does not use.
LEFT_OUT = ("scipy", "sklearn")

_lock = threading.Lock()


def import_nltk() -> ModuleType:
    """The ``nltk`` package, imported (once) without :data:`LEFT_OUT` where those are not
    imported yet."""
    with _lock:
        if "nltk" in sys.modules:
            return sys.modules["nltk"]
        marked = [name for name in LEFT_OUT if name not in sys.modules]
        for name in marked:
            sys.modules[name] = None  # type: ignore[assignment]
        try:
            nltk = importlib.import_module("nltk")
        finally:
            for name in marked:
                if sys.modules.get(name, 0) is None:
                    del sys.modules[name]
        logger.debug("NLTK %s imported without %s", nltk.__version__, ", ".join(marked) or "-")
        return nltk
