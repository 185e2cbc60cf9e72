"""The headline throughput ratios in one run (``make bench``), each against its reference
measured in the same run, with the machine and its load.

1. **lexical tier vs Faust forward** (embedded profile): ``verdictflow worker --tier lexical``
   and a trivial Faust forward (``bench/_faust_forward.py``), each on a fresh embedded broker
   over the same pre-produced ~1 KB answers (``bench/answers_throughput.py``), run in
   pairs, the one that runs first turning each pair; the ratio is the median of the pairs'
   ratios, so a machine that speeds up or slows down between runs (this VM's CPU varies by a
   third over minutes) moves both sides of a pair alike, and a drift within the run favours
   neither. Beside it, **per CPU second**: each process's own CPU time (all its
   threads, ``/proc``) between its first and last output, per answer. The forward waits on
   the broker for a quarter of the time (one produce request per record), so its answers/s
   swing with the broker's latency; the CPU an answer costs is what sizes workers.
2. **NLP tier vs raw ``nlp.pipe``**: ``score_answers`` for the NLP tier (hallucination) in this
   process over RAG-shaped answers (``bench/rag_nlp_tier.py``: SciFact abstracts, three
   ~1.5 KB contexts per answer), against raw ``nlp.pipe`` over the answers alone.
3. **RAG-shaped ``eval answers`` vs raw ``nlp.pipe``**: the command's own code
   (``evaluate_answers``: every kind, consistency, the outputs) in this process, chunk by
   chunk (64 answers, the command's own chunk), spaCy loaded and the context cache fresh, so
   start-up (imports, spaCy load) is left out as it is from raw ``nlp.pipe``. The process's
   collector is tuned as the command tunes its own (``verdictflow/gc_tuning.py``), for every
   row.
4. **``eval answers`` after a restart**: the same as 3 with the data dir's context store
   (``verdictflow/context_store.py``) filled by an earlier, untimed run over the same answers,
   and a fresh memory cache: what a restarted worker or a second ``eval answers`` over the same
   retrieved passages pays (every context read back, none indexed). Its verdicts are checked
   byte-identical to 3's.
5. **``eval answers``, warm** (rare contexts only): the same as 3 after the same scoring
   ran over as many answers whose contexts are other abstracts (none shared): a worker that
   has been running, its vocabulary, lemma, word-form and chunk caches warm
   (``evaluators/chunk_tokens.py``), on contexts it has not seen. Its verdicts are checked
   byte-identical to 3's.

2-5 run on contexts that **recur** (drawn from 450 abstracts: each retrieved ~4 times, as in
RAG) and contexts that **rarely** do (drawn from 2,400), in ``--rounds`` rounds. Within a
round raw ``nlp.pipe`` and 2-5 run in lockstep, 64 answers at a time, each system in turn on
each chunk (:func:`interleaved`): since 2026-11-30 (session 12), when whole runs one after
another gave 0.39x and 0.56x for the same code. The ratios are the medians of the rounds'
ratios. The context cache starts empty in each round, so a recurring context is indexed once and
a rare one every time (in 4: read from the store once).

    python bench/headline.py [--n 6000] [--pairs 3] [--rag-n 600] [--rounds 3]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import logging
import multiprocessing
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from pathlib import Path

from answers_throughput import SystemRun, measure_system
from harness import machine
from rag_nlp_tier import BATCH, nlp_tier_scorer, rag_events, raw_parser

from verdictflow.evaluators.policy import Policy
from verdictflow.gc_tuning import tune_for_throughput
from verdictflow.models.codec import encode
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Verdict
from verdictflow.samples.traffic import generate
from verdictflow.scoring_jobs.batch.eval_answers import evaluate_answers
from verdictflow.scoring_setup import load_scoring

ROOT = Path(__file__).resolve().parent.parent
#: Abstracts contexts are drawn from: recurring (each ~4 times in 600 answers) and rare.
RARE_POOL = 2400
POOLS = {"recurring contexts": 450, "rare contexts": RARE_POOL}


@dataclass(frozen=True)
class LexicalVsForward:
    """Medians over the pairs: answers/s of each, the ratio of the pairs' rates, and the CPU
    each process spent per answer (ms) and how busy it was (share of one core)."""

    forward: float
    lexical: float
    ratio: float
    forward_cpu_ms: float
    lexical_cpu_ms: float
    forward_busy: float
    lexical_busy: float

    @property
    def cpu_ratio(self) -> float:
        """Answers per CPU second of the lexical tier over the forward's."""
        return self.forward_cpu_ms / self.lexical_cpu_ms


def lexical_vs_forward(n: int, pairs: int, tmp: Path) -> LexicalVsForward:
    """Both systems in ``pairs`` pairs over the same answers, the order turning each pair: the
    VM's speed drifts within a run (the forward, run first in every pair, went from 1,056 to
    1,773 answers/s over three pairs of one run), and a fixed order would give the drift to one
    side of every ratio."""
    lines = generate(n, seed=3, pad_to=1000, inline_share=0.2).lines
    runs: dict[str, list[SystemRun]] = {"faust forward": [], "lexical tier": []}
    ratios = []
    for i in range(pairs):
        order = ["faust forward", "lexical tier"][:: 1 if i % 2 == 0 else -1]
        print(f"  pair {i + 1}/{pairs}: {', '.join(order)} ...", flush=True)
        run = {name: measure_system(name, lines, "embedded", 4, tmp) for name in order}
        f, lx = run["faust forward"], run["lexical tier"]
        runs["faust forward"].append(f)
        runs["lexical tier"].append(lx)
        ratios.append(lx.rate / f.rate)
        print(
            f"    forward {f.rate:,.0f}/s ({f.cpu_ms:.3f} ms CPU an answer, {f.busy:.0%} busy; "
            f"broker {f.broker_cpu_ms:.3f} ms), lexical {lx.rate:,.0f}/s ({lx.cpu_ms:.3f} ms, "
            f"{lx.busy:.0%}; broker {lx.broker_cpu_ms:.3f} ms), ratio {lx.rate / f.rate:.2f}",
            flush=True,
        )

    def med(name: str, field: str) -> float:
        return statistics.median(float(getattr(r, field)) for r in runs[name])

    return LexicalVsForward(
        med("faust forward", "rate"),
        med("lexical tier", "rate"),
        statistics.median(ratios),
        med("faust forward", "cpu_ms"),
        med("lexical tier", "cpu_ms"),
        med("faust forward", "busy"),
        med("lexical tier", "busy"),
    )


#: Answers a step of each NLP system: ``eval answers``' chunk, one ``nlp.pipe`` batch.
CHUNK = BATCH


class _Chunked:
    """One NLP system, run chunk by chunk over the same answers (``step(k)``: the answers
    ``k * CHUNK`` on), with a digest of the verdicts it gave (``eval answers``' systems).

    The verdicts are hashed as they come, untimed, and not kept: a worker keeps none, and
    the 3,600 verdicts of 600 RAG-shaped answers, kept, were 51,000 more objects for the
    garbage collector to walk, and one more full pass of it in the timed steps (its time
    1.05-1.09 s a round against 0.76-0.83 s, of ~16 s): a cost raw ``nlp.pipe`` beside them
    did not pay."""

    def __init__(self, step: Callable[[int], list[Verdict]]) -> None:
        self._step = step
        self._hash = hashlib.sha256()
        self.seconds = 0.0

    def run(self, start: int) -> None:
        begun = time.perf_counter()
        verdicts = self._step(start)
        self.seconds += time.perf_counter() - begun
        for verdict in verdicts:
            self._hash.update(verdict.model_dump_json().encode() + b"\n")

    def digest(self) -> str:
        return self._hash.hexdigest()


#: The NLP rows' systems (:func:`_nlp_system`), "warm" on rare contexts only.
NLP_SYSTEMS = ("raw", "nlp", "whole", "restarted", "warm")


def _nlp_system(
    name: str,
    events: list[AnswerEvent],
    policy: Policy,
    store_dir: Path,
    warm_events: list[AnswerEvent] | None,
) -> _Chunked:
    """System ``name`` of the NLP rows, set up (untimed) as its row says, ready to step:

    - ``raw``: raw ``nlp.pipe`` over the answers alone (the pipeline loaded);
    - ``nlp``: ``score_answers`` for the NLP tier (hallucination), a fresh context cache;
    - ``whole``: ``eval answers``' own code (:func:`evaluate_answers`: every kind,
      consistency, the outputs) on each chunk, spaCy, NLTK and WordNet loaded and the context
      cache fresh, so start-up is left out as raw ``nlp.pipe``'s load is;
    - ``restarted``: the same with the data dir's context store filled by an earlier, untimed
      run over the same answers, and a fresh memory cache (every context read back);
    - ``warm``: the same after the same scoring ran over ``warm_events``, whose contexts are
      others: a worker that has been running, on contexts it has not seen.
    """
    if name == "raw":
        parse = raw_parser(events)

        def raw(start: int) -> list[Verdict]:
            parse(start, start + CHUNK, 1)
            return []

        return _Chunked(raw)
    if name == "nlp":
        score = nlp_tier_scorer(events, policy)

        def nlp_tier(start: int) -> list[Verdict]:
            return [v for verdicts in score(start, start + CHUNK) for v in verdicts]

        return _Chunked(nlp_tier)
    lines = [encode(e) for e in events]
    list(evaluate_answers(lines[:8], load_scoring(policy, "default")))  # NLTK, WordNet
    stored = {"data_dir": store_dir, "store_bytes": 1 << 32} if name == "restarted" else {}
    if stored:
        list(evaluate_answers(lines, load_scoring(policy, "default", **stored)))  # fills it
    scoring = load_scoring(policy, "default", **stored)
    if name == "warm":
        assert warm_events is not None
        list(evaluate_answers([encode(e) for e in warm_events], scoring))

    def step(start: int) -> list[Verdict]:
        outputs = evaluate_answers(lines[start : start + CHUNK], scoring)
        return [o.verdict for o in outputs if o.verdict is not None]

    return _Chunked(step)


def _serve(make: Callable[[], _Chunked], conn: Connection) -> None:
    """A system's process: set it up, then run each chunk it is sent (None: done), and send
    back its seconds and its verdicts' digest."""
    system = make()
    conn.send("ready")
    while (start := conn.recv()) is not None:
        system.run(start)
        conn.send("done")
    conn.send((system.seconds, system.digest()))


def interleaved(
    events: list[AnswerEvent],
    policy: Policy,
    rounds: int,
    tmp: Path,
    warm_events: list[AnswerEvent] | None = None,
) -> dict[str, float]:
    """Answers/s of raw ``nlp.pipe``, the NLP tier, ``eval answers``, ``eval answers`` after a
    restart (store filled) and, given ``warm_events`` (other contexts), ``eval answers`` after
    those (:func:`_nlp_system`): medians over ``rounds`` rounds, and the medians of the
    rounds' ratios to raw.

    Within a round the systems run in lockstep over the same 64-answer chunks: chunk k by each
    system in turn, the order rotating from chunk to chunk, each system's time summed over its
    chunks. This VM's speed drifts by a third within a minute (raw ``nlp.pipe`` did 45-68
    answers/s in back-to-back runs of the same 600 answers, 2026-11-30), so whole runs one after
    another measured the drift as much as the code: the same code gave 0.39x and 0.56x in two
    rounds. A chunk takes about a second, so every system meets the same machine.

    Each system runs in a process of its own (forked from this one, spaCy loaded and the
    collector tuned), only one at a time: in one process the collector's full collections,
    paid by whichever system set them off, walked the caches of all five (8 % of ``eval
    answers``' time instead of the 2 % it pays alone). The verdicts of the ``eval answers``
    systems are checked byte-identical."""
    fork = multiprocessing.get_context("fork")
    names = [n for n in NLP_SYSTEMS if n != "warm" or warm_events is not None]
    rates: dict[str, list[float]] = {name: [] for name in names}
    for i in range(rounds):
        store_dir = tmp / f"store-{id(events)}-{i}"
        conns: dict[str, Connection] = {}
        procs = []
        for name in names:
            ours, theirs = fork.Pipe()
            make = functools.partial(_nlp_system, name, events, policy, store_dir, warm_events)
            proc = fork.Process(target=_serve, args=(make, theirs), daemon=True)
            proc.start()
            theirs.close()  # the child's end, so a child that dies is EOFError here, not a hang
            conns[name] = ours
            procs.append(proc)
        for name in names:  # set up side by side, untimed
            assert conns[name].recv() == "ready", name
        for k, start in enumerate(range(0, len(events), CHUNK)):
            for name in names[k % len(names) :] + names[: k % len(names)]:
                conns[name].send(start)
                assert conns[name].recv() == "done", name
        results = {}
        for name in names:
            conns[name].send(None)
            results[name] = conns[name].recv()
        for proc in procs:
            proc.join(60)
        cold = results["whole"][1]
        assert results["restarted"][1] == cold, "a filled store changed verdicts"
        if "warm" in results:
            assert results["warm"][1] == cold, "other answers first changed verdicts"
        for name, (seconds, _) in results.items():
            rates[name].append(len(events) / seconds)
        print(
            f"  round {i + 1}/{rounds}: "
            + ", ".join(f"{name} {r[-1]:.1f}/s" for name, r in rates.items()),
            flush=True,
        )
    med = statistics.median
    ratios = {
        f"{name} ratio": med(r / raw for r, raw in zip(values, rates["raw"], strict=True))
        for name, values in rates.items()
        if name != "raw"
    }
    return {name: med(values) for name, values in rates.items()} | ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--n", type=int, default=6000, help="answers per lexical/forward run")
    parser.add_argument("--pairs", type=int, default=3, help="forward/lexical pairs")
    parser.add_argument("--rag-n", type=int, default=600, help="RAG-shaped answers")
    parser.add_argument("--rounds", type=int, default=3, help="NLP rounds (systems in lockstep)")
    args = parser.parse_args()
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    tmp = Path(tempfile.mkdtemp(prefix="vf-headline-"))
    started = datetime.now(UTC)
    print(f"machine: {machine()} | load {os.getloadavg()[0]:.2f} at the start")

    print("1. lexical tier vs Faust forward (embedded profile)", flush=True)
    lexical = lexical_vs_forward(args.n, args.pairs, tmp)
    rows = [
        (
            "lexical tier vs Faust forward",
            f"{lexical.lexical:,.0f}",
            f"{lexical.forward:,.0f}",
            lexical.ratio,
        ),
        (
            "lexical tier vs Faust forward, per CPU second",
            f"{1000 / lexical.lexical_cpu_ms:,.0f}",
            f"{1000 / lexical.forward_cpu_ms:,.0f}",
            lexical.cpu_ratio,
        ),
    ]
    policy = Policy()
    # As ``eval answers`` does (verdictflow/gc_tuning.py): its scoring loaded, the start-up
    # heap frozen and the young generation collected every 10,000 allocations; spaCy and
    # WordNet, loaded on the first answers, are frozen as they load. Every NLP system, raw
    # ``nlp.pipe`` too, runs in a process forked from this one, under the same collector.
    load_scoring(policy)
    tune_for_throughput()
    for shape, pool in POOLS.items():
        events = rag_events(args.data, args.rag_n, pool)
        distinct = len({c.text for e in events for c in e.context_passages})
        print(f"2/3. {shape}: {len(events)} answers, {distinct} distinct contexts", flush=True)
        warm_events = (
            rag_events(args.data, args.rag_n, pool, besides=True) if pool == RARE_POOL else None
        )
        got = interleaved(events, policy, args.rounds, tmp, warm_events)
        raw = f"{got['raw']:.1f}"
        for key, name in (
            ("nlp", "NLP tier vs raw nlp.pipe"),
            ("whole", "eval answers vs raw nlp.pipe"),
            ("restarted", "eval answers, store filled, vs raw"),
            ("warm", "eval answers, warm, vs raw"),
        ):
            if key in got:
                rows.append((f"{name}, {shape}", f"{got[key]:.1f}", raw, got[f"{key} ratio"]))

    print(f"\nheadline ratios, {started:%Y-%m-%d}, load {os.getloadavg()[0]:.2f} at the end")
    print(f"{'measure':<52}{'answers/s':>11}{'reference/s':>13}{'ratio':>8}")
    for name, rate, reference, value in rows:
        print(f"{name:<52}{rate:>11}{reference:>13}{value:>7.2f}x")
    print(
        f"(lexical: median of {args.pairs} pairs of {args.n} answers, the order turning; per CPU "
        f"second: answers per second of the process's own CPU (all threads) between its first "
        f"and last output, the forward {lexical.forward_cpu_ms:.3f} ms an answer at "
        f"{lexical.forward_busy:.0%} of a core, the lexical tier {lexical.lexical_cpu_ms:.3f} ms "
        f"at {lexical.lexical_busy:.0%}, the broker's CPU not counted; NLP rows: "
        f"{args.rag_n} RAG-shaped answers, ~4.5 KB of context each, medians of {args.rounds} "
        f"rounds, the systems in lockstep over 64-answer chunks; machine: {machine()})"
    )


if __name__ == "__main__":
    main()
