"""Garbage-collector settings for a long-running worker.

Measured in the lexical tier (issue 41): scoring an answer took ~825 us of CPU inside the
worker against ~530 us in a bare process, and the difference was the cyclic garbage collector:
a worker holds ~265,000 long-lived objects after start-up (Faust, aiokafka, scikit-learn,
NLTK, the policy), and every scored answer allocates a few hundred short-lived containers
(events, verdicts, evidence dicts), so with CPython's defaults (a collection per 700
allocations) the collector ran every few answers and re-examined the long-lived heap at every
full pass.

So, once start-up is over, the start-up heap is moved out of the collector's sight
(:func:`gc.freeze`, the remedy CPython documents for pre-forked servers and long-lived
processes) and the youngest generation is collected every 10,000 allocations instead of 700.
Nothing is disabled: reference cycles are still found, a little later; the extra garbage held
is bounded by 10,000 young objects. A verdict does not depend on when the collector runs.
"""

from __future__ import annotations

import gc
import logging

logger = logging.getLogger(__name__)

#: Allocations between collections of the youngest generation (CPython's default: 700).
YOUNG_THRESHOLD = 10_000


def tune_for_throughput() -> None:
    """Freeze what start-up allocated and collect the young generation less often."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
    logger.info(
        "garbage collector: %d start-up objects frozen; young generation every %d allocations",
        gc.get_freeze_count(),
        YOUNG_THRESHOLD,
    )
