"""scikit-learn's English stop words, read from the file that defines them without importing
scikit-learn.

Why: the lexical kinds need that one list (the spec tokenizer's optional stop words,
completeness keywords, relevance's analyzer) and nothing else of scikit-learn, but importing
``sklearn.feature_extraction.text`` imports ``sklearn.base`` and with it SciPy's ``stats`` and
pandas: 2.3 s of a lexical worker's 10 s start, measured 2026-11-30 (``-X importtime``), paid
again by every process that scores (``verdictflow eval``, each of ``eval answers --jobs``'
processes, a worker restarted after a crash or a rebalance).

The list is a ``frozenset([...])`` literal in ``sklearn/feature_extraction/_stop_words.py``,
found through the installed package's import spec (nothing is imported) and read with
:func:`ast.literal_eval` (nothing is executed). Where the file is not there or not of that
shape (another scikit-learn layout), the list is imported the usual way, with a debug line:
the words are the same either way (``tests/evaluators/test_relevance.py`` compares them with
``sklearn.feature_extraction.text.ENGLISH_STOP_WORDS``)."""

from __future__ import annotations

import ast
import logging
from functools import lru_cache
from pathlib import Path

from verdictflow.environment import installed_package_dirs

logger = logging.getLogger(__name__)

#: Where scikit-learn defines the list, inside its package directory.
SOURCE = Path("feature_extraction", "_stop_words.py")
NAME = "ENGLISH_STOP_WORDS"


def _source_file() -> Path | None:
    dirs = installed_package_dirs("sklearn")
    return dirs[0] / SOURCE if dirs else None


def read_stop_words(path: Path) -> frozenset[str]:
    """The words of ``NAME = frozenset([...])`` in ``path``; ValueError if it holds no such
    assignment of string literals, OSError if it cannot be read."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if not (
            isinstance(node, ast.Assign)
            and [getattr(target, "id", None) for target in node.targets] == [NAME]
            and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "id", None) == "frozenset"
            and len(node.value.args) == 1
            and not node.value.keywords
        ):
            continue
        words = ast.literal_eval(node.value.args[0])
        if not (isinstance(words, list | tuple | set) and all(isinstance(w, str) for w in words)):
            break
        return frozenset(words)
    raise ValueError(f"{path}: no {NAME} = frozenset([...]) of strings")


@lru_cache(maxsize=1)
def english_stop_words() -> frozenset[str]:
    """scikit-learn's ``ENGLISH_STOP_WORDS`` (318 words), read once per process."""
    path = _source_file()
    if path is not None:
        try:
            return read_stop_words(path)
        except (OSError, SyntaxError, ValueError) as exc:
            logger.debug("stop words not read from %s (%s): importing scikit-learn", path, exc)
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)
