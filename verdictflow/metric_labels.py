"""Bounded label values for Prometheus metrics.

A label that takes a producer's value (a model name, a tenant, a reason code) would create one
time series per distinct value, and a producer with a bug or a hostile one can send millions:
every metrics module (the worker's, the judge tier's, the console's, the verdict monitor's)
maps such values through a :class:`LabelCap`, which keeps the first ``limit`` distinct values and
maps later ones to ``other`` (and a missing value to ``none``).
"""

from __future__ import annotations

from typing import Any

OTHER = "other"
NONE = "none"


class LabelCap:
    """Keeps the first ``limit`` distinct values; later ones map to ``other``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.known: set[str] = set()

    def __call__(self, value: Any) -> str:
        if value is None or value == "":
            return NONE
        text = str(value)[:100]
        if text in self.known:
            return text
        if len(self.known) < self.limit:
            self.known.add(text)
            return text
        return OTHER
