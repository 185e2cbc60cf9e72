"""The worker's collector settings: start-up heap frozen, young generation collected less often."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from verdictflow.streams.gc_tuning import YOUNG_THRESHOLD, tune_for_throughput


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


@pytest.mark.usefixtures("restored_gc")
def test_tuning_freezes_the_heap_and_keeps_finding_cycles() -> None:
    tune_for_throughput()
    assert gc.get_freeze_count() > 10_000  # pytest, the project, its dependencies
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD
    assert gc.isenabled()

    class Node:
        other: object = None

    a, b = Node(), Node()
    a.other, b.other = b, a  # a cycle: only the collector frees it
    del a, b
    assert gc.collect() >= 2
