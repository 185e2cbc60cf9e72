"""Scoring ``eval answers``' chunks, in this process or in worker processes, in input order.

Why processes: scoring is Python and spaCy under one interpreter lock, so one process uses one
core, and a file of RAG answers (~4.5 KB of new context each) scores at ~26 answers/s on one
(``docs/benchmarks.md``). :class:`ChunkScorers` hands chunks to ``jobs`` processes, each with
its own :class:`~verdictflow.scoring_setup.Scoring` built from the same
:class:`~verdictflow.scoring_setup.ScoringRecipe` (so the same config digest), and gives the
results back in the order of the chunks: the caller applies consistency messages and writes
outputs exactly as it does for one process, so the verdicts are byte-identical whatever
``jobs`` is (``tests/cli/test_offline_commands.py``).

- **Spawned**, not forked: a forked child would share the parent's SQLite connection to the
  context store and whatever threads the parent had started. Each child pays its own start-up
  (imports, its scoring, spaCy: a few seconds, before its first chunk) and memory (~700 MiB).
- **Bounded**: at most ``2 * jobs`` chunks are in flight, so a long file neither piles up
  results nor waits on one slow chunk with idle processes.
- **Fail closed**: a child that dies (killed, out of memory) raises
  :class:`ScoringProcessDiedError`; nothing is skipped. Ctrl-C is the parent's alone: it
  stops the processes at once rather than wait for chunks nobody will read.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from types import TracebackType

from verdictflow.evaluators.answer_analysis import COMPONENTS
from verdictflow.exceptions import VerdictflowError
from verdictflow.gc_tuning import tune_for_throughput
from verdictflow.nlp import load_pipeline, parsing_batch
from verdictflow.pipelines import Output
from verdictflow.pipelines.answers import answer_outputs
from verdictflow.scoring_setup import Scoring, ScoringRecipe
from verdictflow.streams.records import Record

logger = logging.getLogger(__name__)

#: Chunks queued per process beyond the one it scores: keeps every process busy while the
#: parent reads results in order.
_AHEAD_PER_JOB = 2


class ScoringProcessDiedError(VerdictflowError):
    """A scoring process ended before its chunk was scored (killed, or out of memory)."""


def score_chunk(
    chunk: list[Record], scoring: Scoring, *, max_bytes: int, vocab_limit: int
) -> list[list[Output]]:
    """Every kind's outputs for each record of ``chunk`` (the answers agents' pipeline), one
    ``parsing_batch``: past ``vocab_limit`` lexemes spaCy is loaded afresh between chunks."""
    with parsing_batch(vocab_limit):
        return answer_outputs(chunk, scoring.ctx, scoring.analyzer, max_bytes=max_bytes, tier=None)


class ChunkScorers:
    """``jobs`` spawned processes scoring chunks with :func:`score_chunk`; use as a context
    manager, then :meth:`map`."""

    def __init__(
        self, recipe: ScoringRecipe, jobs: int, *, max_bytes: int, vocab_limit: int
    ) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, not {jobs}")
        self.jobs = jobs
        self._executor = ProcessPoolExecutor(
            max_workers=jobs,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_child,
            initargs=(recipe, max_bytes, vocab_limit),
        )
        # Start every process now (the executor starts one per task waiting for a free one),
        # so their start-up overlaps whatever the caller does before the first chunk.
        for _ in range(jobs):
            self._executor.submit(_started)

    def __enter__(self) -> ChunkScorers:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None:  # an error or Ctrl-C: nothing more of theirs will be read
            self._terminate()
        self._executor.shutdown(wait=True, cancel_futures=exc_type is not None)

    def _terminate(self) -> None:
        """Stop the processes now rather than let them finish chunks nobody will read
        (``terminate_workers`` from Python 3.14; before it, the executor's process table)."""
        terminate = getattr(self._executor, "terminate_workers", None)
        if terminate is not None:
            terminate()
            return
        processes = getattr(self._executor, "_processes", None) or {}
        for process in list(processes.values()):
            process.terminate()

    def map(self, chunks: Iterable[list[Record]]) -> Iterator[list[list[Output]]]:
        """Each chunk's outputs, in the order of ``chunks``."""
        in_flight: deque[Future[list[list[Output]]]] = deque()
        ahead = self.jobs * _AHEAD_PER_JOB
        try:
            for chunk in chunks:
                in_flight.append(self._executor.submit(_score_in_child, chunk))
                if len(in_flight) > ahead:
                    yield in_flight.popleft().result()
            while in_flight:
                yield in_flight.popleft().result()
        except BrokenProcessPool as exc:
            raise ScoringProcessDiedError(
                "a scoring process ended before its chunk was scored (killed, out of memory: "
                "each takes ~700 MiB, or it failed to start: see its error above); the run "
                "stops here rather than skip answers: run it again, with fewer --jobs"
            ) from exc
        finally:
            for future in in_flight:
                future.cancel()


#: The child's scoring, built once by :func:`_start_child`.
_CHILD: tuple[Scoring, int, int] | None = None


def _start_child(recipe: ScoringRecipe, max_bytes: int, vocab_limit: int) -> None:
    """Build the child's scoring and load spaCy (not on the first chunk: start-up overlaps
    the parent's); Ctrl-C is the parent's to handle (it cancels the rest)."""
    global _CHILD
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _CHILD = (recipe.load(), max_bytes, vocab_limit)
    tune_for_throughput()  # the pipeline loaded next is frozen too (gc_tuning.py)
    with parsing_batch(vocab_limit):
        load_pipeline(COMPONENTS)


def _started() -> None:
    """A task that only makes the executor start a process."""


def _score_in_child(chunk: list[Record]) -> list[list[Output]]:
    if _CHILD is None:  # pragma: no cover - the initializer always ran first
        raise RuntimeError("scoring process started without its recipe")
    scoring, max_bytes, vocab_limit = _CHILD
    return score_chunk(chunk, scoring, max_bytes=max_bytes, vocab_limit=vocab_limit)
