"""One huge record inside every documented limit does not hold up the NLP tier: it DEFERs
``too_long_for_nlp`` at once, the small answer behind it in the same partition gets its
verdicts within seconds, and the worker's memory stays under 1 GB."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import orjson
import pytest

from tests.support.verdict_collection import collect
from verdictflow.samples.heavy_records import heavy_answer
from verdictflow.streams.replay import replay

pytestmark = pytest.mark.broker


def small(event_id: str) -> bytes:
    return orjson.dumps(
        {"id": event_id, "answer": "Marie Curie won the Nobel Prize in 1903.",
         "contexts": ["Marie Curie won the Nobel Prize in Physics in 1903."]}
    )  # fmt: skip


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_a_heavy_record_defers_and_the_next_answer_does_not_wait(
    settings_factory, worker_factory
) -> None:
    settings = settings_factory(tier="nlp", partitions=1)  # both records in one partition
    worker = worker_factory(settings)
    alive = lambda: worker.proc.poll() is None  # noqa: E731
    asyncio.run(replay([small("warm")], "answers", settings))
    warm, _ = asyncio.run(collect(settings, 2, 0, 180, alive=alive))
    assert len(warm) == 2, worker.log()[-3000:]

    heavy = heavy_answer("heavy", 190_000, 9_800, 64)
    assert 800_000 < len(heavy) < 1_000_000  # inside the 1 MB record limit
    started = time.monotonic()
    asyncio.run(replay([heavy, small("after")], "answers", settings))
    verdicts, _ = asyncio.run(collect(settings, 6, 0, 60, alive=alive))
    elapsed = time.monotonic() - started - 3.0  # collect reads on 3 s past the last verdict
    assert alive(), worker.log()[-3000:]
    by_input: dict[str, dict[str, dict]] = {}
    for values in verdicts.values():
        v = orjson.loads(values[0])
        by_input.setdefault(v["input_id"], {})[v["kind"]] = v
    assert set(by_input["after"]) == {"hallucination", "faithfulness"}
    for kind in ("hallucination", "faithfulness"):
        assert by_input["heavy"][kind]["decision"] == "DEFER"
        assert by_input["heavy"][kind]["reasons"][0]["code"] == "too_long_for_nlp"
    assert elapsed < 30, f"{elapsed:.1f} s for the heavy record and the answer behind it"
    assert rss_bytes(worker.proc.pid) < 1024**3
