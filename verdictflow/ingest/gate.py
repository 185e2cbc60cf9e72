"""The inline gate behind ``POST /v1/check`` (issue 46; docs/gate.md): an answer's verdicts in
the request path, the stream's own.

- **Same verdicts as the stream.** The gate scores the event decoded from the very bytes it
  produces to ``answers``, with :func:`~verdictflow.evaluators.answer_batch.score_answers` and
  the workers' policy and statistics (:func:`~verdictflow.scoring_setup.load_scoring`): the
  stream's verdicts for the gated kinds have the same ids and bytes.
- **Lexical kinds inline** (a fraction of a millisecond per answer), on the event loop.
- **NLP kinds in one lane**: one thread owns the spaCy analyzer (an analyzer is used by one
  thread at a time); requests that arrive while it is busy are parsed together in its next batch
  (``spacy.pipe`` is cheaper per answer in batches). Each waits until its own deadline; past
  it, its NLP kinds DEFER ``gate_timeout``, and a request whose deadline passed before its turn
  is never parsed.
- **Fail closed**: a scorer that raises gives DEFER ``gate_error`` for the kinds it owed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, cast

from verdictflow.evaluators.answer_batch import score_answers
from verdictflow.evaluators.gate_verdicts import not_scored, provisional
from verdictflow.evaluators.kinds import KindSpec, Need, Tier, answer_kinds
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import ReasonCode, Verdict
from verdictflow.nlp import DEFAULT_VOCAB_LIMIT, parsing_batch
from verdictflow.scoring_setup import Scoring

logger = logging.getLogger(__name__)

#: ``kinds=`` aliases: a tier's kinds, or every per-answer kind the answers tiers score.
KIND_GROUPS: dict[str, tuple[KindSpec, ...]] = {
    "lexical": answer_kinds(Tier.LEXICAL),
    "nlp": answer_kinds(Tier.NLP),
    "all": answer_kinds(None),
}
GATE_KINDS: dict[str, KindSpec] = {spec.name: spec for spec in answer_kinds(None)}
DEFAULT_TIMEOUT_MS = 1000
MAX_TIMEOUT_MS = 60_000
#: Answers parsed together at most in one NLP batch.
NLP_BATCH = 16


@dataclass(frozen=True)
class CheckOptions:
    """What a caller asked of one check (the query string of ``POST /v1/check``)."""

    kinds: tuple[KindSpec, ...] = KIND_GROUPS["lexical"]
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    #: A streamed answer's chunk number; ``final`` False: the answer so far, not the answer.
    seq: int | None = None
    final: bool = True
    #: Produce the event to ``answers`` (final chunks only) so the stream does the rest:
    #: ``ack`` waits for the broker's acknowledgement (within the deadline) and says whether it
    #: came; ``async`` hands the event to the producer and replies without waiting (the reply's
    #: ``queued`` is null; the outcome is counted in ``vf_gate_queued``); ``off`` does not.
    queue: Literal["ack", "async", "off"] = "ack"


def check_options(params: Mapping[str, str]) -> CheckOptions:
    """Parse ``kinds`` (names or ``lexical`` / ``nlp`` / ``all``, comma-separated),
    ``timeout_ms``, ``seq``, ``final`` and ``queue`` (``ack``, ``async``, ``off``; ``true`` and
    ``false`` mean ``ack`` and ``off``); raise ``ValueError`` saying what is wrong."""
    unknown = sorted(set(params) - {"kinds", "timeout_ms", "seq", "final", "queue"})
    if unknown:
        raise ValueError(f"unknown parameter(s) {', '.join(unknown)}")
    kinds = _kinds(params.get("kinds", "lexical"))
    timeout_ms = _integer(params, "timeout_ms", DEFAULT_TIMEOUT_MS, 1, MAX_TIMEOUT_MS)
    assert timeout_ms is not None
    seq = _integer(params, "seq", None, 0, 2**31)
    final = _flag(params, "final", True)
    if not final and seq is None:
        raise ValueError("final=false needs seq: the chunk's number in the streamed answer")
    queue = params.get("queue", "ack").lower()
    if queue in ("true", "1", "yes"):
        queue = "ack"
    elif queue in ("false", "0", "no"):
        queue = "off"
    if queue not in ("ack", "async", "off"):
        raise ValueError(f"queue: {params['queue']!r} is not ack, async or off (or true, false)")
    return CheckOptions(kinds, timeout_ms, seq, final, cast(Literal["ack", "async", "off"], queue))


def _kinds(value: str) -> tuple[KindSpec, ...]:
    chosen: dict[str, KindSpec] = {}
    for name in (part.strip() for part in value.split(",")):
        group = KIND_GROUPS.get(name)
        spec = GATE_KINDS.get(name)
        if group is None and spec is None:
            raise ValueError(
                f"kinds: {name!r} is not a kind the gate scores; "
                f"use {', '.join([*KIND_GROUPS, *GATE_KINDS])}"
            )
        for one in group or (spec,):
            if one is not None:
                chosen[one.name] = one
    order = [spec.name for spec in answer_kinds(None)]  # the stream's emission order
    return tuple(sorted(chosen.values(), key=lambda spec: order.index(spec.name)))


def _integer(
    params: Mapping[str, str], name: str, default: int | None, low: int, high: int
) -> int | None:
    raw = params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}: {raw!r} is not an integer") from None
    if not low <= value <= high:
        raise ValueError(f"{name}: {value} is outside {low}..{high}")
    return value


def _flag(params: Mapping[str, str], name: str, default: bool) -> bool:
    raw = params.get(name)
    if raw is None:
        return default
    if raw.lower() in ("true", "1", "yes"):
        return True
    if raw.lower() in ("false", "0", "no"):
        return False
    raise ValueError(f"{name}: {raw!r} is not true or false")


@dataclass
class _Job:
    event: AnswerEvent
    kinds: tuple[KindSpec, ...]
    deadline: float  # time.monotonic()
    future: asyncio.Future[list[Verdict] | None]  # None: shed, it would not finish in time
    abandoned: bool = False


@dataclass
class NlpLane:
    """The one thread that parses for the gate, fed in batches of whatever is waiting."""

    scoring: Scoring
    batch: int = NLP_BATCH
    #: Lexemes spaCy may gather before it is loaded afresh between batches (``parsing_batch``).
    vocab_limit: int = DEFAULT_VOCAB_LIMIT
    _waiting: asyncio.Queue[_Job] | None = None
    _runner: asyncio.Task[None] | None = None
    #: Seconds an answer took in the last batches (moving average; None before the first):
    #: a job that cannot be done before its deadline at this pace is shed at once (its kinds
    #: DEFER ``gate_timeout`` then, not at the deadline), so an overloaded lane spends its time
    #: on answers it can still finish instead of on ones whose callers have given up.
    seconds_per_answer: float | None = None
    shed: int = 0
    in_flight: int = 0  # answers in the batch being parsed

    async def score(
        self, event: AnswerEvent, kinds: tuple[KindSpec, ...], deadline: float
    ) -> list[Verdict] | None:
        """``kinds``' verdicts of ``event``, or None when its deadline passes first."""
        loop = asyncio.get_running_loop()
        if self._waiting is None:
            self._waiting = asyncio.Queue()
        if self._runner is None or self._runner.done():
            self._runner = loop.create_task(self._run(self._waiting), name="vf-gate-nlp")
        ahead = self._waiting.qsize() + self.in_flight  # answers parsed before this one
        pace = self.seconds_per_answer
        if pace is not None and time.monotonic() + (ahead + 1) * pace >= deadline:
            self.shed += 1  # it would wait past its deadline: say so now, not then
            return None
        job: _Job = _Job(event, kinds, deadline, loop.create_future())
        self._waiting.put_nowait(job)
        try:
            return await asyncio.wait_for(
                asyncio.shield(job.future), max(0.0, deadline - time.monotonic())
            )
        except TimeoutError:
            job.abandoned = True
            return None

    async def _run(self, waiting: asyncio.Queue[_Job]) -> None:
        while True:
            jobs = [await waiting.get()]
            while len(jobs) < self.batch and not waiting.empty():
                jobs.append(waiting.get_nowait())
            live = self._feasible(jobs)
            if not live:
                continue
            started = time.monotonic()
            self.in_flight = len(live)
            try:
                results = await asyncio.to_thread(self._score, live)
            except Exception as exc:  # fail closed per job, never kill the lane
                logger.exception("gate: the NLP batch of %d answers failed", len(live))
                for job in live:
                    if not job.future.done():
                        job.future.set_exception(exc)
                continue
            finally:
                self.in_flight = 0
            pace = (time.monotonic() - started) / len(live)
            last = self.seconds_per_answer
            self.seconds_per_answer = pace if last is None else 0.8 * last + 0.2 * pace
            for job, verdicts in zip(live, results, strict=True):
                if not job.future.done():
                    job.future.set_result(verdicts)

    def _feasible(self, jobs: Sequence[_Job]) -> list[_Job]:
        """The jobs still wanted that this batch can finish in time; the others are answered
        None (their kinds DEFER ``gate_timeout``) now."""
        now = time.monotonic()
        pace = self.seconds_per_answer or 0.0
        live: list[_Job] = []
        for job in jobs:
            if job.abandoned or job.future.done():
                continue
            if job.deadline <= now + pace * (len(live) + 1):
                self.shed += 1
                job.future.set_result(None)
                continue
            live.append(job)
        return live

    def _score(self, jobs: Sequence[_Job]) -> list[list[Verdict]]:
        """Score jobs asking for the same kinds together (one parse per batch)."""
        out: list[list[Verdict] | None] = [None] * len(jobs)
        by_kinds: dict[tuple[str, ...], list[int]] = {}
        for i, job in enumerate(jobs):
            by_kinds.setdefault(tuple(spec.name for spec in job.kinds), []).append(i)
        with parsing_batch(self.vocab_limit):  # spaCy's vocabulary bounded between batches
            for indices in by_kinds.values():
                kinds = jobs[indices[0]].kinds
                events = [jobs[i].event for i in indices]
                scored = score_answers(events, self.scoring.ctx, self.scoring.analyzer, kinds=kinds)
                for i, verdicts in zip(indices, scored, strict=True):
                    out[i] = verdicts
        return [verdicts or [] for verdicts in out]


@dataclass(frozen=True)
class GateResult:
    verdicts: list[Verdict]
    lexical_ms: float
    nlp_ms: float | None


class Gate:
    """Scores one answer event for ``POST /v1/check`` (see the module docstring)."""

    def __init__(self, scoring: Scoring, vocab_limit: int = DEFAULT_VOCAB_LIMIT) -> None:
        self.scoring = scoring
        self.lane = NlpLane(scoring, vocab_limit=vocab_limit)

    async def check(self, event: AnswerEvent, options: CheckOptions, deadline: float) -> GateResult:
        ctx = self.scoring.ctx
        cheap = tuple(k for k in options.kinds if Need.SPACY not in k.needs)
        parsed = tuple(k for k in options.kinds if Need.SPACY in k.needs)
        started = time.perf_counter()
        by_kind: dict[str, Verdict] = {}
        if cheap:
            try:
                scored = score_answers([event], ctx, self.scoring.analyzer, kinds=cheap)[0]
                by_kind.update((v.kind.value, v) for v in scored)
            except Exception as exc:  # fail closed: DEFER, never a 500 or a PASS
                logger.exception("gate: scoring answer %s failed", event.id)
                by_kind.update(self._failed(cheap, event, exc))
        lexical_ms = (time.perf_counter() - started) * 1000
        nlp_ms = None
        if parsed:
            started = time.perf_counter()
            try:
                verdicts = await self.lane.score(event, parsed, deadline)
            except Exception as exc:  # the lane's failure, per job
                by_kind.update(self._failed(parsed, event, exc))
            else:
                if verdicts is None:
                    by_kind.update(
                        (k.kind.value, self._timed_out(k, event, options.timeout_ms))
                        for k in parsed
                    )
                else:
                    by_kind.update((v.kind.value, v) for v in verdicts)
            nlp_ms = (time.perf_counter() - started) * 1000
        ordered = [by_kind[k.kind.value] for k in options.kinds]
        if not options.final:
            assert options.seq is not None
            ordered = provisional(ordered, event, ctx, options.seq)
        return GateResult(ordered, lexical_ms, nlp_ms)

    def _timed_out(self, kind: KindSpec, event: AnswerEvent, timeout_ms: int) -> Verdict:
        return not_scored(
            kind, event, self.scoring.ctx, ReasonCode.GATE_TIMEOUT,
            f"not scored within timeout_ms={timeout_ms} (the NLP lane's queue and the parse "
            "take longer); the stream scores it",
            {"timeout_ms": timeout_ms},
        )  # fmt: skip

    def _failed(
        self, kinds: Sequence[KindSpec], event: AnswerEvent, exc: BaseException
    ) -> list[tuple[str, Verdict]]:
        detail = f"the scorer failed: {type(exc).__name__}"
        ctx = self.scoring.ctx
        code = ReasonCode.GATE_ERROR
        return [(k.kind.value, not_scored(k, event, ctx, code, detail, {})) for k in kinds]
