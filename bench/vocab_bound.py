"""What bounding spaCy's vocabulary costs and saves: an NLP-tier scorer over ever-new text.

The NLP tier's answers, RAG-shaped over SciFact abstracts with rarely recurring contexts
(``bench/rag_nlp_tier.py``), are scored in batches of 64 as the NLP agent scores them, each
batch inside ``verdictflow.nlp.parsing_batch``: once with no limit (0, what every worker did
before), once with ``--limit`` lexemes. Each mode runs in a fresh process; every
``--every`` answers it prints the vocabulary's size and the process's resident memory. At the
end: answers/s of each mode (the reloads included), the reloads, the peak and final resident
memory, and whether the verdicts of the two modes are byte-identical (a SHA-256 over every
encoded verdict).

    python bench/vocab_bound.py [--data ../shared/data] [--n 2400] [--limit 20000]

The workers' default limit (``VERDICTFLOW_SPACY_VOCAB_LIMIT``, 250,000 lexemes) is far above
what this bench's 2,400 answers add (~30,000); ``--limit`` is set low so that reloads happen
within a few minutes of text.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

from harness import machine

ROOT = Path(__file__).resolve().parent.parent
BATCH = 64


def resident_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(data: Path, n: int, limit: int, every: int) -> None:
    """Score the answers with ``limit`` and print JSON lines (progress, then the result)."""
    sys.path.insert(0, str(ROOT / "bench"))
    from rag_nlp_tier import abstracts, rag_events

    from verdictflow.evaluators.answer_analysis import COMPONENTS
    from verdictflow.evaluators.answer_batch import score_answers
    from verdictflow.evaluators.kinds import Tier
    from verdictflow.evaluators.policy import Policy
    from verdictflow.models.codec import encode
    from verdictflow.nlp import load_pipeline, parsing_batch, pipeline_renewals
    from verdictflow.scoring_setup import load_scoring

    events = rag_events(data, n, pool_size=len(abstracts(data)))
    scoring = load_scoring(Policy())
    digest = hashlib.sha256()
    peak = 0.0
    started = time.perf_counter()
    for i in range(0, len(events), BATCH):
        with parsing_batch(limit):
            scored = score_answers(events[i : i + BATCH], scoring.ctx, scoring.analyzer, Tier.NLP)
        for verdicts in scored:
            for verdict in verdicts:
                digest.update(encode(verdict))
        done = min(i + BATCH, len(events))
        peak = max(peak, resident_mib())
        if done % every < BATCH or done == len(events):
            vocab = len(load_pipeline(COMPONENTS).vocab)
            print(json.dumps({"done": done, "vocab": vocab, "rss": resident_mib()}), flush=True)
    seconds = time.perf_counter() - started
    print(json.dumps({
        "result": True, "rate": len(events) / seconds, "renewals": pipeline_renewals(),
        "peak": peak, "final": resident_mib(), "digest": digest.hexdigest(),
    }), flush=True)  # fmt: skip


def isolated(words: int) -> None:
    """The vocabulary alone: ``words`` new words (``w<k>x<i>q``) into a loaded pipeline in one
    batch, then the batch's end under a limit below that; resident memory at each step."""
    from verdictflow.evaluators.answer_analysis import COMPONENTS
    from verdictflow.nlp import load_pipeline, parsing_batch

    gc.freeze()  # a worker's start-up heap; its pipeline is loaded after (on its first batch)
    gc.set_threshold(10_000, 10, 10)  # and its collector's thresholds (gc_tuning.py)
    load_pipeline(COMPONENTS)("Warm up.")
    steps = {"loaded": resident_mib()}
    with parsing_batch(words // 2):
        for k in range(0, words, 10_000):
            words_k = " ".join(f"w{k}x{i}q" for i in range(min(10_000, words - k)))
            load_pipeline(COMPONENTS).make_doc(words_k)
        steps["grown"] = resident_mib()
        lexemes = len(load_pipeline(COMPONENTS).vocab)
    steps["dropped"] = resident_mib()  # dropped, and collected, at the batch's end
    load_pipeline(COMPONENTS)("Warm up.")
    steps["reloaded"] = resident_mib()
    print(json.dumps({"lexemes": lexemes, **steps}), flush=True)


def run_mode(data: Path, n: int, limit: int, every: int) -> dict[str, object]:
    cmd = [sys.executable, __file__, "--child", "--data", str(data), "--n", str(n),
           "--limit", str(limit), "--every", str(every)]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    result = rows[-1]
    result["progress"] = rows[:-1]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--n", type=int, default=2400, help="answers (three contexts each)")
    parser.add_argument("--limit", type=int, default=20_000, help="lexemes before a reload")
    parser.add_argument("--every", type=int, default=320, help="answers between progress rows")
    parser.add_argument("--words", type=int, default=200_000, help="new words, isolated part")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--isolated", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.data, args.n, args.limit, args.every)
        return
    if args.isolated:
        isolated(args.words)
        return
    print(f"machine: {machine()}")
    print(f"{args.n} RAG-shaped answers over SciFact abstracts (rare contexts), batches of {BATCH}")
    modes = {}
    for limit in (0, args.limit):
        print(f"  scoring with limit {limit or 'none'} ...", flush=True)
        modes[limit] = run_mode(args.data, args.n, limit, args.every)
    print(f"\n{'answers':>8} | {'no limit: lexemes':>18} {'MiB':>7} | "
          f"{f'limit {args.limit:,}: lexemes':>24} {'MiB':>7}")  # fmt: skip
    for free, bound in zip(modes[0]["progress"], modes[args.limit]["progress"], strict=True):  # type: ignore[call-overload]
        print(f"{free['done']:>8} | {free['vocab']:>18,} {free['rss']:>7.0f} | "
              f"{bound['vocab']:>24,} {bound['rss']:>7.0f}")  # fmt: skip
    print()
    for limit, result in modes.items():
        print(f"limit {limit or 'none':>7}: {result['rate']:.1f} answers/s, "
              f"{result['renewals']} reloads, peak {result['peak']:.0f} MiB, "
              f"final {result['final']:.0f} MiB")  # fmt: skip
    same = modes[0]["digest"] == modes[args.limit]["digest"]
    print(f"verdicts byte-identical across the modes: {same} ({str(modes[0]['digest'])[:16]}...)")
    cmd = [sys.executable, __file__, "--isolated", "--words", str(args.words)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
    steps = json.loads(out.stdout.strip().splitlines()[-1])
    print(
        f"\nthe vocabulary alone ({args.words:,} new words, one process): loaded "
        f"{steps['loaded']:.0f} MiB, grown to {steps['lexemes']:,} lexemes "
        f"{steps['grown']:.0f} MiB, dropped at the batch's end {steps['dropped']:.0f} MiB, "
        f"loaded afresh {steps['reloaded']:.0f} MiB"
    )


if __name__ == "__main__":
    main()
