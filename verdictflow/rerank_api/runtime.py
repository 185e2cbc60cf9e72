"""Interpreter tuning for the API's tail latency: the GIL switch interval and a frozen heap.

Two CPython defaults put milliseconds into ``/search``'s p99, measured at 100k documents
(``bench/search_latency.py --variants``):

* **GIL hand-offs.** A search runs on a worker thread; FAISS releases the GIL while it searches
  and must get it back afterwards. While the event-loop thread runs Python code, a waiting thread
  gets the GIL only after ``sys.getswitchinterval()`` (5 ms by default), so every hand-off can
  add up to 5 ms. The service sets a shorter interval (``gil_switch_interval_ms``, 0.5 ms).
* **Full garbage collections.** The retriever holds several hundred thousand long-lived objects
  (document metadata, quality map, BM25 vocabulary). A generation-2 collection walks them all:
  tens of milliseconds, during which no request moves. ``gc.freeze()`` after loading moves them
  to the permanent generation, which collections skip; new objects are still collected. The
  topic follower keeps adding documents, so the heap is frozen again after each BM25 snapshot
  rebuild (at most once per ``lexical_refresh_seconds``, and only when documents changed).

Both are process-wide; the service restores the switch interval and unfreezes the heap when its
lifespan ends (tests and ``verdictflow dev`` run it inside a longer-lived process).
"""

from __future__ import annotations

import gc
import logging
import sys

logger = logging.getLogger(__name__)


def set_gil_switch_interval(milliseconds: float) -> float:
    """Set the GIL switch interval; returns the previous one in milliseconds (to restore)."""
    previous = sys.getswitchinterval() * 1000.0
    sys.setswitchinterval(milliseconds / 1000.0)
    return previous


def freeze_heap(collect: bool) -> None:
    """Move every tracked object to the permanent generation (cheap: a list splice).

    ``collect`` first frees current cyclic garbage (one full collection, so do it before the
    service is ready or when a pause is acceptable); without it, cyclic garbage that exists at
    this moment is frozen too and never freed, which is why refreezes stay rare.
    """
    if collect:
        gc.collect()
    gc.freeze()
    logger.debug("heap frozen: %d objects in the permanent generation", gc.get_freeze_count())


def unfreeze_heap() -> None:
    """Give frozen objects back to the collector (lifespan end: the app may share a process)."""
    gc.unfreeze()
