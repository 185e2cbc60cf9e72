"""A batch that fails is scored one input at a time: only the breaking input is dead-lettered."""

from __future__ import annotations

from collections.abc import Sequence

from verdictflow.exceptions import InvalidEvent
from verdictflow.pipelines.isolation import score_isolating_failures


def double_unless_thirteen(items: Sequence[int]) -> list[int]:
    if 13 in items:
        raise ValueError("unlucky")
    return [2 * i for i in items]


def test_a_good_batch_is_scored_in_one_call() -> None:
    calls: list[Sequence[int]] = []

    def score(items: Sequence[int]) -> list[int]:
        calls.append(items)
        return double_unless_thirteen(items)

    assert score_isolating_failures([1, 2, 3], score, str) == [2, 4, 6]
    assert calls == [[1, 2, 3]]


def test_only_the_failing_item_becomes_an_internal_error() -> None:
    results = score_isolating_failures([1, 13, 3], double_unless_thirteen, str)
    assert (results[0], results[2]) == (2, 6)
    error = results[1]
    assert isinstance(error, InvalidEvent)
    assert (error.code, error.detail) == ("internal_error", "ValueError: unlucky")
