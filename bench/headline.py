"""The headline throughput ratios in one run (``make bench``), each against its reference
measured in the same run, with the machine and its load.

1. **lexical tier vs Faust forward** (embedded profile): ``verdictflow worker --tier lexical``
   and a trivial Faust forward (``bench/_faust_forward.py``), each on a fresh embedded broker
   over the same pre-produced ~1 KB answers (``bench/answers_throughput.py``), run in
   alternating pairs; the ratio is the median of the pairs' ratios, so a machine that speeds
   up or slows down between runs (this VM's CPU varies by a third over minutes) moves both
   sides of a pair alike.
2. **NLP tier vs raw ``nlp.pipe``**: ``score_answers`` for the NLP tier (hallucination) in this
   process over RAG-shaped answers (``bench/rag_nlp_tier.py``: SciFact abstracts, three
   ~1.5 KB contexts per answer), against raw ``nlp.pipe`` over the answers alone.
3. **RAG-shaped ``eval answers`` vs raw ``nlp.pipe``**: the command's own code
   (``evaluate_answers``: every kind, consistency, the outputs) in this process, spaCy loaded
   and the context cache fresh, so start-up (imports, spaCy load) is left out as it is from
   raw ``nlp.pipe``. (Until 2026-11-27 this was the marginal of two command runs, first half
   and whole file: it swung 0.29-0.66x between runs.) The process's collector is tuned as the
   command tunes its own (``verdictflow/gc_tuning.py``, since 2026-11-30), for every row.

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

2, 3 and 4 run on contexts that **recur** (drawn from 450 abstracts: each retrieved ~4 times, as
in RAG) and contexts that **rarely** do (drawn from 2,400), each in ``--rounds`` alternating
rounds of raw ``nlp.pipe``, 2, 3, 4 and 5 (the ratios are the medians of the rounds' ratios). The
context cache starts empty in each measurement, so a recurring context is parsed once and a
rare one every time (in 4: read from the store once).

    python bench/headline.py [--n 6000] [--pairs 3] [--rag-n 600] [--rounds 3]
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from answers_throughput import run_system
from harness import machine
from rag_nlp_tier import offline_rate, rag_events, raw_pipe_rate

from verdictflow.evaluators.policy import Policy
from verdictflow.gc_tuning import tune_for_throughput
from verdictflow.models.codec import encode
from verdictflow.models.events import AnswerEvent
from verdictflow.samples.traffic import generate
from verdictflow.scoring_jobs.batch.eval_answers import evaluate_answers
from verdictflow.scoring_setup import load_scoring

ROOT = Path(__file__).resolve().parent.parent
#: Abstracts contexts are drawn from: recurring (each ~4 times in 600 answers) and rare.
RARE_POOL = 2400
POOLS = {"recurring contexts": 450, "rare contexts": RARE_POOL}


def lexical_vs_forward(n: int, pairs: int, tmp: Path) -> tuple[float, float, float]:
    """(median forward answers/s, median lexical answers/s, median of the pairs' ratios)."""
    lines = generate(n, seed=3, pad_to=1000, inline_share=0.2).lines
    forward, lexical, ratios = [], [], []
    for i in range(pairs):
        print(f"  pair {i + 1}/{pairs}: faust forward, lexical tier ...", flush=True)
        f = run_system("faust forward", lines, "embedded", 4, tmp)
        lx = run_system("lexical tier", lines, "embedded", 4, tmp)
        forward.append(f)
        lexical.append(lx)
        ratios.append(lx / f)
        print(f"    forward {f:,.0f}/s, lexical {lx:,.0f}/s, ratio {lx / f:.2f}", flush=True)
    return statistics.median(forward), statistics.median(lexical), statistics.median(ratios)


def eval_answers_rate(
    lines: list[bytes],
    policy: Policy,
    store_dir: Path | None = None,
    warm_lines: list[bytes] | None = None,
) -> tuple[float, str]:
    """Answers/s of ``eval answers``' own code (:func:`evaluate_answers`: every kind,
    consistency, outputs), in this process with spaCy already loaded and a fresh context
    cache: the command's start-up (imports, loading spaCy) is left out, as raw ``nlp.pipe``'s
    load is. (A marginal of two command runs, used before, swung 0.29-0.66x between runs.)
    With ``store_dir``, an untimed run first fills that data dir's context store; with
    ``warm_lines``, the same scoring first runs over those (untimed): a worker that has been
    running, its caches warm, on contexts it has not seen. Also the SHA-256 of the verdicts."""
    warm = load_scoring(policy, "default")
    list(evaluate_answers(lines[:8], warm))  # loads spaCy, NLTK, WordNet
    stored = {"data_dir": store_dir, "store_bytes": 1 << 32} if store_dir else {}
    if store_dir is not None:
        list(evaluate_answers(lines, load_scoring(policy, "default", **stored)))
    scoring = load_scoring(policy, "default", **stored)
    if warm_lines is not None:
        list(evaluate_answers(warm_lines, scoring))
    start = time.perf_counter()
    verdicts = [o.verdict for o in evaluate_answers(lines, scoring) if o.verdict is not None]
    rate = len(lines) / (time.perf_counter() - start)
    assert len(verdicts) >= len(lines), "every answer gives verdicts"
    digest = hashlib.sha256(b"\n".join(v.model_dump_json().encode() for v in verdicts))
    return rate, digest.hexdigest()


def interleaved(
    events: list[AnswerEvent],
    policy: Policy,
    rounds: int,
    tmp: Path,
    warm_events: list[AnswerEvent] | None = None,
) -> dict[str, float]:
    """Answers/s of raw ``nlp.pipe``, the NLP tier, ``eval answers``, ``eval answers``
    after a restart (store filled) and, given ``warm_events`` (other contexts), ``eval
    answers`` after those, medians over ``rounds`` alternating rounds, and the medians of the
    rounds' ratios to raw: the VM's drift hits all alike."""
    lines = [encode(e) for e in events]
    warm_lines = [encode(e) for e in warm_events] if warm_events else None
    keys = ("raw", "nlp", "whole", "restarted", *(("warm",) if warm_lines else ()))
    rates: dict[str, list[float]] = {k: [] for k in keys}
    ratios: dict[str, list[float]] = {k: [] for k in keys if k != "raw"}
    for i in range(rounds):
        r = raw_pipe_rate(events)
        n = offline_rate(events, policy)
        w, cold = eval_answers_rate(lines, policy)
        s, stored = eval_answers_rate(lines, policy, tmp / f"store-{id(events)}-{i}")
        assert stored == cold, "verdicts with a filled context store differ from those without"
        got = [("raw", r), ("nlp", n), ("whole", w), ("restarted", s)]
        if warm_lines is not None:
            h, warm = eval_answers_rate(lines, policy, warm_lines=warm_lines)
            assert warm == cold, "verdicts after other answers differ from those of a fresh run"
            got.append(("warm", h))
        for key, value in got:
            rates[key].append(value)
            if key != "raw":
                ratios[key].append(value / r)
    med = statistics.median
    return {k: med(v) for k, v in rates.items()} | {f"{k} ratio": med(v) for k, v in ratios.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--n", type=int, default=6000, help="answers per lexical/forward run")
    parser.add_argument("--pairs", type=int, default=3, help="forward/lexical pairs")
    parser.add_argument("--rag-n", type=int, default=600, help="RAG-shaped answers")
    parser.add_argument("--rounds", type=int, default=3, help="alternating NLP rounds")
    args = parser.parse_args()
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    tmp = Path(tempfile.mkdtemp(prefix="vf-headline-"))
    started = datetime.now(UTC)
    print(f"machine: {machine()} | load {os.getloadavg()[0]:.2f} at the start")

    print("1. lexical tier vs Faust forward (embedded profile)", flush=True)
    forward, lexical, ratio = lexical_vs_forward(args.n, args.pairs, tmp)
    rows = [
        ("lexical tier vs Faust forward", f"{lexical:,.0f}", f"{forward:,.0f}", ratio),
    ]
    policy = Policy()
    # As ``eval answers`` does (verdictflow/gc_tuning.py): its scoring loaded, the start-up
    # heap frozen and the young generation collected every 10,000 allocations; spaCy and
    # WordNet, loaded on the first answers, are frozen as they load. The references (raw
    # ``nlp.pipe``) run in this process too, under the same collector.
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
        f"(lexical: median of {args.pairs} alternating pairs of {args.n} answers; NLP rows: "
        f"{args.rag_n} RAG-shaped answers, ~4.5 KB of context each, medians of {args.rounds} "
        f"alternating rounds; machine: {machine()})"
    )


if __name__ == "__main__":
    main()
