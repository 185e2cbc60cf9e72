"""Sliding-window verdict counts per kind, model and tenant, in one-second buckets.

A verdict adds one to its second's bucket for its (series, model, tenant) key: the decision
count and, when it has a score, one of ten score bins on its kind's scale (judges 0-10, the
others 0-1). A window's figures are the sum of its seconds' buckets for the keys a filter keeps;
totals since the console started are kept beside them, so a kind whose traffic stopped still
shows what it did. Seconds older than the longest window are dropped, so memory is bounded by
``max_window`` seconds times the keys seen in them.

Arrival time (the console's clock), not event time, places a verdict: the page answers "what is
failing now", and a replay from the beginning shows up at once instead of at its event times.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

DECISIONS = ("PASS", "FAIL", "DEFER")
BINS = 10
#: Slots of a bucket: the three decision counts, then the score bins.
SLOTS = len(DECISIONS) + BINS
#: A (series, model label, tenant label) key.
Key = tuple[str, str, str]


def score_bin(score: float, scale: float) -> int:
    """The bin of ``score`` on ``[0, scale]``: ten equal bins, the top one closed."""
    unit = score / scale if scale > 0 else 0.0
    return min(max(int(unit * BINS), 0), BINS - 1)


@dataclass
class KindFigures:
    """One series' figures in a window (or since start)."""

    counts: list[int] = field(default_factory=lambda: [0] * SLOTS)

    def add(self, slots: list[int]) -> None:
        for i, n in enumerate(slots):
            self.counts[i] += n

    def as_json(self, seconds: float) -> dict[str, Any]:
        n = sum(self.counts[: len(DECISIONS)])
        return {
            "n": n,
            "rate": n / seconds if seconds > 0 else 0.0,
            "decisions": dict(zip(DECISIONS, self.counts[: len(DECISIONS)], strict=True)),
            "histogram": self.counts[len(DECISIONS) :],
        }


class WindowCounts:
    """Per-second buckets for the last ``max_window`` seconds, plus totals since start."""

    def __init__(self, max_window: int) -> None:
        if max_window < 1:
            raise ValueError(f"max_window must be >= 1, got {max_window}")
        self.max_window = max_window
        self._seconds: deque[tuple[int, dict[Key, list[int]]]] = deque()
        self._totals: dict[Key, list[int]] = {}
        self.started: float | None = None

    def add(self, key: Key, decision: str, bin_index: int | None, now: float) -> None:
        """Count one verdict of ``key`` with ``decision`` (and score bin) at time ``now``."""
        if self.started is None:
            self.started = now
        second = int(now)
        if not self._seconds or self._seconds[-1][0] < second:
            self._seconds.append((second, {}))
            self._prune(second)
        # a clock that stepped back counts in the newest bucket rather than reordering
        bucket = self._seconds[-1][1]
        for slots in (
            bucket.setdefault(key, [0] * SLOTS),
            self._totals.setdefault(key, [0] * SLOTS),
        ):
            slots[DECISIONS.index(decision)] += 1
            if bin_index is not None:
                slots[len(DECISIONS) + bin_index] += 1

    def _prune(self, second: int) -> None:
        while self._seconds and self._seconds[0][0] <= second - self.max_window:
            self._seconds.popleft()

    def figures(
        self, window: int, now: float, keep: Iterable[Key] | None = None
    ) -> tuple[dict[str, KindFigures], dict[str, KindFigures], dict[str, list[int]]]:
        """Per series: the window's figures, the totals since start, and verdicts per second
        over the last 60 seconds (oldest first), for the keys in ``keep`` (all when None)."""
        kept = None if keep is None else set(keep)
        second = int(now)
        in_window: dict[str, KindFigures] = {}
        series: dict[str, list[int]] = {}
        for at, bucket in self._seconds:
            age = second - at
            if age >= window and age >= 60:
                continue
            for key, slots in bucket.items():
                if kept is not None and key not in kept:
                    continue
                if age < window:
                    in_window.setdefault(key[0], KindFigures()).add(slots)
                if 0 <= age < 60:
                    per_second = series.setdefault(key[0], [0] * 60)
                    per_second[59 - age] += sum(slots[: len(DECISIONS)])
        totals: dict[str, KindFigures] = {}
        for key, slots in self._totals.items():
            if kept is None or key in kept:
                totals.setdefault(key[0], KindFigures()).add(slots)
        return in_window, totals, series

    def seen_keys(self) -> list[Key]:
        """Every key seen since start."""
        return list(self._totals)

    def window_seconds(self, window: int, now: float) -> float:
        """The window's length, or the time since the first verdict when that is shorter."""
        if self.started is None:
            return float(window)
        return max(1.0, min(float(window), now - self.started + 1.0))
