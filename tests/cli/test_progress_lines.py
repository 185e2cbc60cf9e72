"""Progress as lines where stderr is not a terminal (a long job's log file)."""

from __future__ import annotations

import io

from rich.console import Console

from verdictflow.cli.progress_lines import ProgressLines


def lines_of(*, terminal: bool, updates: list[tuple[float, int]], total: int) -> list[str]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=200)
    now = [0.0]
    progress = ProgressLines(console, "steps", every_seconds=60, clock=lambda: now[0])
    for at, done in updates:
        now[0] = at
        progress.update(done, total, "loss 0.5")
    return out.getvalue().splitlines()


def test_a_line_a_minute_with_the_rate_and_time_left_and_one_at_the_end() -> None:
    got = lines_of(
        terminal=False, updates=[(10, 1), (50, 5), (70, 7), (100, 9), (120, 10)], total=100
    )
    assert got == ["steps: 7/100, loss 0.5, 10.00 s each, ~16 min left"]  # none at 120: 50 s
    done = lines_of(terminal=False, updates=[(30, 1), (7_300, 600), (7_330, 625)], total=625)
    assert done == [
        "steps: 600/625, loss 0.5, 12.17 s each, ~5 min left",
        "steps: 625/625, loss 0.5, 11.73 s each",
    ]


def test_a_resumed_job_times_only_its_own_steps() -> None:
    got = lines_of(terminal=False, updates=[(26, 51), (4_000, 200)], total=625)
    assert got == ["steps: 200/625, loss 0.5, 26.67 s each, ~3 h 9 min left"]


def test_nothing_on_a_terminal_where_the_bar_shows() -> None:
    assert lines_of(terminal=True, updates=[(100, 5), (200, 10)], total=10) == []
