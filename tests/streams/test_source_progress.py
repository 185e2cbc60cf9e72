"""The answers agent's forwarding watermark, which closes consistency windows."""

from __future__ import annotations

from types import SimpleNamespace

from faust.types import TP

from verdictflow.streams.records import Record
from verdictflow.streams.source_progress import SourceProgress


class _Consumer:
    def __init__(self) -> None:
        self.assigned: set[TP] = set()
        self.highwaters: dict[TP, int | None] = {}
        self.committed: dict[TP, int] = {}

    def assignment(self) -> set[TP]:
        return self.assigned

    def highwater(self, tp: TP) -> int | None:
        return self.highwaters.get(tp)

    def committed_offset(self, tp: TP) -> int | None:
        return self.committed.get(tp)


def _record(partition: int, offset: int, ts: float) -> Record:
    return Record("answers", partition, offset, b"k", b"{}", ts)


def test_watermark_follows_what_was_forwarded_and_the_clock_once_read_to_the_end() -> None:
    consumer = _Consumer()
    progress = SourceProgress(SimpleNamespace(consumer=consumer), "answers", idle_lag=2.0)
    tp = TP("answers", 0)
    assert progress.watermark(0, now=500.0) is None  # not assigned here
    consumer.assigned.add(tp)
    assert progress.watermark(0, now=500.0) is None  # nothing known yet (no fetch)
    consumer.highwaters[tp] = 10
    consumer.committed[tp] = 4
    assert progress.watermark(0, now=500.0) is None  # records 4..9 unread, no log time yet
    progress.forwarded([_record(0, 4, 100.0), _record(0, 5, 103.0), _record(0, 6, 101.0)])
    assert progress.watermark(0, now=500.0) == 103.0  # behind: the newest log time forwarded
    progress.forwarded([_record(0, 9, 104.0), _record(1, 3, 900.0)])
    assert progress.watermark(0, now=500.0) == 498.0  # read to the end: the clock, less the lag
    consumer.highwaters[tp] = 12  # new records appended
    assert progress.watermark(0, now=500.0) == 104.0


def test_a_partition_read_to_its_end_by_an_earlier_owner_is_caught_up_from_the_start() -> None:
    consumer = _Consumer()
    progress = SourceProgress(SimpleNamespace(consumer=consumer), "answers", idle_lag=2.0)
    tp = TP("answers", 3)
    consumer.assigned.add(tp)
    consumer.highwaters[tp] = 7
    consumer.committed[tp] = 7
    assert progress.watermark(3, now=50.0) == 48.0
    assert SourceProgress(SimpleNamespace(), "answers", idle_lag=2.0).watermark(3, 50.0) is None
