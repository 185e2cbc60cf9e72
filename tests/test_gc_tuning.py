"""A scoring process's collector settings: start-up heap frozen, young generation collected less
often, a pipeline loaded later frozen too and thawed before it is dropped."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from verdictflow.evaluators.answer_analysis import COMPONENTS
from verdictflow.gc_tuning import YOUNG_THRESHOLD, is_tuned, tune_for_throughput, untune
from verdictflow.nlp import load_pipeline, parsing_batch


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    untune()
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


@pytest.mark.usefixtures("restored_gc")
def test_a_pipeline_loaded_after_tuning_is_frozen_and_still_freed_when_dropped() -> None:
    """The worker and ``eval answers`` load spaCy on their first batch, after tuning: its
    objects are frozen then (so full collections skip them), and thawed when the
    pipeline is dropped for its grown vocabulary (or it would never be freed)."""
    tune_for_throughput()
    with parsing_batch(1):  # a limit of 1 lexeme: any pipeline loaded before is dropped now
        pass
    before = gc.get_freeze_count()
    with parsing_batch(1):
        nlp = load_pipeline(COMPONENTS)  # loaded afresh, in the tuned process
        assert gc.get_freeze_count() > before + 20_000  # the pipeline's own objects
        assert all(o is not nlp for o in gc.get_objects())  # out of every generation
        loaded = weakref.ref(nlp)
        del nlp
    # the batch's end dropped it (over the limit): thawed and collected at once. Its reference
    # cycles (~14,500 objects) stay frozen, never freed, without the thaw.
    assert loaded() is None
    assert is_tuned()
    gc.unfreeze()
    assert gc.collect() < 2_000


@pytest.mark.usefixtures("restored_gc")
def test_an_untuned_process_freezes_nothing_on_load() -> None:
    untune()
    with parsing_batch(1):
        load_pipeline(COMPONENTS)
        assert gc.get_freeze_count() == 0
