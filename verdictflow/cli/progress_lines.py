"""Progress as plain lines where no progress bar can be drawn.

Rich draws its bars only on a terminal. A long job whose stderr goes to a file (``nohup``, a
CI log, a scheduler) showed nothing at all: a CPU run of ``train-checker`` was silent for 23
minutes before its first checkpoint. :class:`ProgressLines` writes one line at most every
``every_seconds`` there, and one at the end, with the rate and the time left.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console


class ProgressLines:
    """``update(done, total, note)``: a line on ``console`` when it is not a terminal and
    ``every_seconds`` passed since the last (or the job is done); nothing on a terminal, where
    the caller's bar shows the same."""

    def __init__(
        self,
        console: Console,
        label: str,
        every_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._console = console
        self._label = label
        self._every = every_seconds
        self._clock = clock
        self._start = clock()
        self._last = self._start
        self._first: int | None = None  # the count before the first update (a resumed job's)

    def update(self, done: int, total: int, note: str = "") -> None:
        if self._console.is_terminal:
            return
        if self._first is None:
            self._first = max(0, done - 1)
        now = self._clock()
        if done < total and now - self._last < self._every:
            return
        self._last = now
        elapsed, worked = now - self._start, done - self._first
        each = elapsed / worked if worked > 0 else 0.0
        rate = f", {each:.2f} s each" if worked > 0 else ""
        left = f", ~{_duration(each * (total - done))} left" if worked > 0 and done < total else ""
        extra = f", {note}" if note else ""
        self._console.print(
            f"{self._label}: {done}/{total}{extra}{rate}{left}", highlight=False, soft_wrap=True
        )


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"
