"""Batch scoring that isolates the input that breaks it (shared by the answers and summary
agents).

Scoring is batched (one ``nlp.pipe`` per batch), so one input that trips a bug in the scoring
code would fail the whole batch. The batch is then scored again one input at a time: every
other input still gets its verdicts, and only the one that fails again becomes a dead letter
with reason ``internal_error``. Bad *input* never gets here (it is rejected when decoded).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

from verdictflow.exceptions import InvalidEvent

logger = logging.getLogger(__name__)

Item = TypeVar("Item")
Result = TypeVar("Result")


def score_isolating_failures(
    items: Sequence[Item],
    score: Callable[[Sequence[Item]], Sequence[Result]],
    describe: Callable[[Item], str],
) -> list[Result | InvalidEvent]:
    """``score(items)``, one result per item; when the batch raises, each item alone, with an
    ``internal_error`` :class:`InvalidEvent` in place of each item that still fails."""
    try:
        return list(score(items))
    except Exception:
        logger.exception("scoring a batch of %d failed; scoring one by one", len(items))
    results: list[Result | InvalidEvent] = []
    for item in items:
        try:
            results.extend(score([item]))
        except Exception as exc:
            logger.exception("internal error scoring %s; dead-lettered", describe(item))
            results.append(InvalidEvent.internal(exc))
    return results
