"""Query micro-batching: the queries that arrive together are embedded in one forward pass.

Why: at 200 distinct queries/s on two cores, the query embedding is most of a request's CPU
(docs/scaling.md). A transformer's forward pass over 8 short queries costs far less than 8
passes over one (the matrix products get rows to work with, the per-call overhead is paid once).

How it behaves:

- **A lone query pays no wait.** When the encoder is idle, a query starts at once, alone.
- **Under load, batches form by themselves.** Queries arriving while the encoder is busy wait
  for it (they would have waited for a core anyway); when it frees, it takes up to
  ``max_batch`` of them, in arrival order. If fewer are waiting, it waits at most ``max_wait``
  seconds for more, but only when the batch it just ran was not a lone query (a sign of load).
- **Bounded.** At most ``max_batch`` texts per pass, ``workers`` passes at once (each on its own
  thread; ONNX Runtime releases the GIL). A failure of a pass fails exactly its queries.
- Repeated texts in one batch are embedded once.

fp32 batches give each query the vector it gets alone (measured bit for bit on SciFact's 1,109
claims); int8 batches do not (activations are quantised over the whole batch: cosine >= 0.98 to
the lone vector): see :mod:`verdictflow.embedders` and docs/scaling.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

logger = logging.getLogger(__name__)

Vector = npt.NDArray[np.float32]
EncodeMany = Callable[[Sequence[str]], npt.NDArray[np.float32]]


@dataclass
class BatchStats:
    """What the batcher did (``/healthz``, the bench)."""

    queries: int = 0
    passes: int = 0
    largest: int = 0
    #: passes by size: 1, 2, 3-4, 5-8, 9-16, 17+
    sizes: dict[str, int] = field(default_factory=dict)

    def record(self, size: int) -> None:
        self.queries += size
        self.passes += 1
        self.largest = max(self.largest, size)
        bucket = next((f"{lo}-{hi}" if lo != hi else str(lo) for lo, hi in _BUCKETS
                       if lo <= size <= hi), "17+")  # fmt: skip
        self.sizes[bucket] = self.sizes.get(bucket, 0) + 1

    def as_dict(self) -> dict[str, object]:
        mean = self.queries / self.passes if self.passes else 0.0
        return {"queries": self.queries, "passes": self.passes, "mean_batch": round(mean, 2),
                "largest": self.largest, "sizes": dict(self.sizes)}  # fmt: skip


_BUCKETS = ((1, 1), (2, 2), (3, 4), (5, 8), (9, 16))


class QueryBatcher:
    """Embeds queries for the event loop's requests, batching those that arrive together."""

    def __init__(
        self,
        encode_many: EncodeMany,
        *,
        max_batch: int = 16,
        max_wait: float = 0.002,
        workers: int = 1,
    ) -> None:
        if max_batch < 1 or workers < 1 or max_wait < 0:
            raise ValueError("max_batch and workers must be >= 1, max_wait >= 0")
        self._encode_many = encode_many
        self.max_batch = max_batch
        self.max_wait = max_wait
        self.workers = workers
        self._pending: deque[tuple[str, asyncio.Future[Vector]]] = deque()
        self._busy = 0
        self._drainers: set[asyncio.Task[None]] = set()
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="vf-embed")
        self.stats = BatchStats()

    async def vector(self, text: str) -> Vector:
        """``text``'s query vector, shape (1, dim), read-only, from the next pass that takes it."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Vector] = loop.create_future()
        self._pending.append((text, future))
        if self._busy < self.workers:
            self._busy += 1
            task = loop.create_task(self._drain(lone=True))
            self._drainers.add(task)
            task.add_done_callback(self._drainers.discard)
        return await future

    async def _drain(self, *, lone: bool) -> None:
        """Run passes while queries wait; this worker's slot is released when none do."""
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                if not lone and len(self._pending) < self.max_batch and self.max_wait > 0:
                    await asyncio.sleep(self.max_wait)  # under load: let the batch fill a bit
                batch = [self._pending.popleft()
                         for _ in range(min(self.max_batch, len(self._pending)))]  # fmt: skip
                batch = [(t, f) for t, f in batch if not f.done()]  # cancelled requests
                if not batch:
                    continue
                texts = list(dict.fromkeys(t for t, _ in batch))
                try:
                    rows = await loop.run_in_executor(self._executor, self._encode_many, texts)
                except Exception as exc:  # the pass failed: exactly its queries fail
                    logger.exception("query embedding failed for a batch of %d", len(texts))
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                self.stats.record(len(texts))
                by_text = {}
                for i, text in enumerate(texts):
                    row = rows[i : i + 1]  # (1, dim), as the retriever's query vectors are
                    row.setflags(write=False)
                    by_text[text] = row
                for text, future in batch:
                    if not future.done():
                        future.set_result(by_text[text])
                lone = len(batch) == 1 and not self._pending
        finally:
            self._busy -= 1

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
