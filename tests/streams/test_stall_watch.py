"""A partition with pending records and no commit progress for the policy's time is counted
and logged once with its offsets (issue 47)."""

from __future__ import annotations

import logging

import pytest
from faust.types import TP

from verdictflow.streams.stall_watch import StallWatch

TP0 = TP("vf.internal.judge-requests", 0)
TP1 = TP("vf.internal.judge-requests", 1)


def test_pending_without_progress_is_stalled_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    watch = StallWatch("vf-judge", stall_seconds=60)
    caplog.set_level(logging.WARNING)
    assert watch.observe([(TP0, 4, 9), (TP1, 7, 7)], now=0) == 0
    assert watch.observe([(TP0, 4, 9), (TP1, 7, 7)], now=59) == 0
    assert watch.observe([(TP0, 4, 9), (TP1, 7, 7)], now=61) == 1  # TP1 has nothing pending
    assert watch.observe([(TP0, 4, 9), (TP1, 7, 7)], now=70) == 1
    assert caplog.text.count("stalled") == 1
    assert "committed 4, log end 9" in caplog.text
    assert watch.observe([(TP0, 5, 9)], now=80) == 0  # progress clears it
    assert watch.observe([(TP0, 5, 9)], now=139) == 0
    assert watch.observe([(TP0, 5, 9)], now=141) == 1
