"""The neural embedder's tests run for real where the ``[st]`` extra is installed (CI installs
it) and skip cleanly elsewhere."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from verdictflow.embedders import neural_installed

F = TypeVar("F", bound=Callable[..., Any])

#: Marks a test that loads the real all-MiniLM-L6-v2 weights.
requires_neural = [
    pytest.mark.neural,
    pytest.mark.skipif(
        not neural_installed(),
        reason="the [st] extra is not installed (see docs/retriever.md, Embedders)",
    ),
]


def needs_neural(test: F) -> F:
    """Decorate one test with :data:`requires_neural`."""
    for mark in requires_neural:
        test = mark(test)
    return test
