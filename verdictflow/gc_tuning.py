"""Garbage-collector settings for a long-running scoring process (a worker, ``eval answers``).

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

A spaCy pipeline is loaded later, on the first batch that parses (a lexical-tier worker never
loads one), and it is ~50,000 more long-lived objects: in a tuned process
:func:`freeze_loaded` freezes it too once loaded. On RAG-shaped ``eval answers`` (issue 41) the
collector took 4.6-5.2 % of the time untuned and 1.7-1.9 % tuned as the command tunes (1.3 %
with WordNet's ~450,000 objects, loaded on the first answer, frozen too: no difference within
a 600-answer run, so they are left to the collector). A frozen
pipeline, full of reference cycles, could never be freed, so before one is dropped for its
grown vocabulary (``verdictflow.nlp.parsing_batch``) :func:`thaw` gives the frozen heap back to
the collector; the next pipeline's load freezes everything again.
"""

from __future__ import annotations

import gc
import logging
import time

logger = logging.getLogger(__name__)

#: Allocations between collections of the youngest generation (CPython's default: 700).
YOUNG_THRESHOLD = 10_000


class _Tuning:
    """Whether this process tuned its collector (loads after start-up are frozen too)."""

    tuned = False


def tune_for_throughput() -> None:
    """Freeze what start-up allocated and collect the young generation less often; what is
    loaded later through :func:`freeze_loaded` is frozen too."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
    _Tuning.tuned = True
    logger.info(
        "garbage collector: %d start-up objects frozen; young generation every %d allocations",
        gc.get_freeze_count(),
        YOUNG_THRESHOLD,
    )


def is_tuned() -> bool:
    """Whether :func:`tune_for_throughput` ran in this process (and no :func:`untune` since)."""
    return _Tuning.tuned


def freeze_loaded(what: str) -> None:
    """In a tuned process, freeze ``what`` was just loaded (a spaCy pipeline) with the rest of
    the long-lived heap: one full collection first (~0.2 s after a pipeline's load), so no
    cyclic garbage of the load is frozen for good. Untuned, nothing happens."""
    if not _Tuning.tuned:
        return
    started = time.perf_counter()
    gc.collect()
    before = gc.get_freeze_count()
    gc.freeze()
    logger.info(
        "garbage collector: %s frozen (%d objects) in %.2f s",
        what,
        gc.get_freeze_count() - before,
        time.perf_counter() - started,
    )


def thaw() -> None:
    """Give the frozen heap back to the collector, so a long-lived object about to be dropped
    (a grown pipeline) can be freed by the next collection; the next :func:`freeze_loaded`
    freezes what is still alive again."""
    if _Tuning.tuned:
        gc.unfreeze()


def untune() -> None:
    """CPython's defaults back, nothing frozen (tests, benchmarks that compare both)."""
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    _Tuning.tuned = False
