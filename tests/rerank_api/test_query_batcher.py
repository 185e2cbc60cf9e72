"""The query micro-batcher: a lone query runs alone at once, queries that arrive together share
a pass (bounded), a failed pass fails exactly its queries, repeated texts are embedded once."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence

import numpy as np
import pytest

from verdictflow.rerank_api.query_batcher import QueryBatcher


class Encoder:
    """Rows that name their text; records each pass; can hold a pass until released."""

    def __init__(self, seconds: float = 0.0, fail_on: str | None = None) -> None:
        self.passes: list[list[str]] = []
        self.seconds = seconds
        self.fail_on = fail_on
        self.gate = threading.Event()
        self.gate.set()

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        self.gate.wait(10)
        self.passes.append(list(texts))
        time.sleep(self.seconds)
        if self.fail_on in texts:
            raise RuntimeError("the model broke")
        return np.array([[float(len(t)), float(hash(t) % 97)] for t in texts], dtype=np.float32)


async def test_a_lone_query_runs_alone_without_waiting() -> None:
    encoder = Encoder()
    # a batch wait far above any scheduling delay: a lone query that waited for it would take
    # 30 s, so the bound below tells the two apart on any machine (0.25 s against a 0.5 s
    # wait failed on a slow 2-core VM at 0.30 s)
    batcher = QueryBatcher(encoder, max_batch=16, max_wait=30)
    t0 = time.perf_counter()
    vector = await batcher.vector("hello")
    assert time.perf_counter() - t0 < 10  # not the 30 s batch wait
    assert vector.shape == (1, 2)
    assert vector[0, 0] == 5.0
    assert not vector.flags.writeable
    assert encoder.passes == [["hello"]]
    batcher.close()


async def test_queries_arriving_while_the_encoder_is_busy_share_bounded_passes() -> None:
    encoder = Encoder(seconds=0.02)
    encoder.gate.clear()
    batcher = QueryBatcher(encoder, max_batch=4, max_wait=0.001)
    first = asyncio.ensure_future(batcher.vector("q0"))
    await asyncio.sleep(0.05)  # q0's pass is running (held at the gate)
    rest = [asyncio.ensure_future(batcher.vector(f"q{i}")) for i in range(1, 10)]
    await asyncio.sleep(0.01)
    encoder.gate.set()
    vectors = await asyncio.gather(first, *rest)
    assert encoder.passes[0] == ["q0"]
    assert [len(p) for p in encoder.passes[1:]] == [4, 4, 1]
    assert [p for batch in encoder.passes for p in batch] == [f"q{i}" for i in range(10)]
    for i, vector in enumerate(vectors):
        assert vector[0, 0] == len(f"q{i}")
    assert batcher.stats.as_dict()["largest"] == 4
    assert batcher.stats.queries == 10
    batcher.close()


async def test_a_failed_pass_fails_exactly_its_queries() -> None:
    encoder = Encoder(fail_on="bad")
    encoder.gate.clear()
    batcher = QueryBatcher(encoder, max_batch=2, max_wait=0.0)
    first = asyncio.ensure_future(batcher.vector("ok0"))
    await asyncio.sleep(0.05)
    bad = asyncio.ensure_future(batcher.vector("bad"))
    same_pass = asyncio.ensure_future(batcher.vector("ok1"))
    later = asyncio.ensure_future(batcher.vector("ok2"))
    await asyncio.sleep(0.01)
    encoder.gate.set()
    assert (await first)[0, 0] == 3.0
    with pytest.raises(RuntimeError, match="the model broke"):
        await bad
    with pytest.raises(RuntimeError):
        await same_pass
    assert (await later)[0, 0] == 3.0  # the next pass works
    assert (await batcher.vector("ok3"))[0, 0] == 3.0
    batcher.close()


async def test_a_text_asked_twice_in_one_pass_is_embedded_once() -> None:
    encoder = Encoder()
    encoder.gate.clear()
    batcher = QueryBatcher(encoder, max_batch=8, max_wait=0.0)
    first = asyncio.ensure_future(batcher.vector("warm"))
    await asyncio.sleep(0.05)
    twins = [asyncio.ensure_future(batcher.vector("same")) for _ in range(3)]
    await asyncio.sleep(0.01)
    encoder.gate.set()
    await first
    a, b, c = await asyncio.gather(*twins)
    assert encoder.passes[1] == ["same"]
    assert a is b is c
    batcher.close()


def test_bounds_are_checked() -> None:
    with pytest.raises(ValueError, match="max_batch and workers must be >= 1"):
        QueryBatcher(Encoder(), max_batch=0)
