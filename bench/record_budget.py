"""What one record costs the NLP tier, by size, next to raw ``nlp.pipe`` over its answer in
the same run; and what a record over the policy's budget costs (it is not parsed).

Two shapes per size (answer characters, context characters in 64 contexts at most):

- ``facts``: the QA probe's shape (``verdictflow.samples.heavy_records``): every sentence a
  person, an organisation, a city, a date and a sum, so every answer sentence shares most of
  its words with every context sentence: the worst case for sentence alignment;
- ``articles``: QAGS CNN/DM articles as contexts and their summaries, repeated, as the answer.

Per row: raw ``nlp.pipe`` of the answer alone (the reference), then ``score_answers`` for the
NLP tier with an empty context cache (contexts indexed) and again with them cached; the ratio
is scoring / raw parse. The budget's defaults (``budget.answer_chars`` 20,000,
``budget.context_chars`` 200,000) are the last in-budget row; the row after it is over.

Then odd shapes within the budget, each scored once with a text never seen before (spaCy's
tokenizer keeps what it split, so a second run would hide its cost): floods of punctuation,
emoji and "'s" (split off one at a time by spaCy's tokenizer: ``verdictflow.nlp.
bounded_runs``), a context that is one long rule of "=", and answers of thousands of numbers,
percentages or one name (anchors by the thousand).

Last, what one escalated answer costs the judge tier's shipped checker (``judge_answer``, cold
pair cache) for prose and for odd shapes under the judge's ``max_prompt_chars`` (48,000): a
flood against a context of one long rule, and an unspaced URL against a longer one (each a
single "word", so chunks and claims do not bound them: ``verdictflow.judge_tier.pair_window``).

    python bench/record_budget.py [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path

import orjson
from harness import machine

from verdictflow.evaluators.answer_analysis import CACHE_BYTES, ContextCache
from verdictflow.evaluators.answer_batch import score_answers
from verdictflow.evaluators.kinds import Tier
from verdictflow.evaluators.policy import Policy
from verdictflow.models.events import AnswerEvent
from verdictflow.nlp import load_pipeline
from verdictflow.samples.heavy_records import heavy_answer
from verdictflow.scoring_setup import Scoring, load_scoring

ROOT = Path(__file__).resolve().parent.parent
SIZES = [
    (2_000, 20_000),
    (5_000, 50_000),
    (10_000, 100_000),
    (19_500, 195_000),  # at the default budget
    (190_000, 630_000),  # the QA probe's record: over it
]


def articles_event(answer_chars: int, context_chars: int) -> AnswerEvent:
    rows = [
        orjson.loads(x) for x in (ROOT.parent / "shared/data/qags/mturk_cnndm.jsonl").open("rb")
    ]
    contexts: list[str] = []
    answer: list[str] = []
    for row in rows:
        room = context_chars - sum(map(len, contexts))
        if room > 0 and len(contexts) < 64:
            contexts.append(row["article"][:room])
        answer.append(" ".join(s["sentence"] for s in row["summary_sentences"]))
    text = " ".join(answer)
    while len(text) < answer_chars:
        text += " " + text
    return AnswerEvent(id="a", answer=text[:answer_chars], contexts=contexts)


def facts_event(answer_chars: int, context_chars: int) -> AnswerEvent:
    contexts = min(64, max(1, context_chars // 3_000))
    raw = heavy_answer("f", answer_chars, context_chars // contexts, contexts)
    return AnswerEvent.model_validate_json(raw)


ODD_SHAPES: dict[str, Callable[[str], AnswerEvent]] = {
    "'!' flood": lambda salt: AnswerEvent(id=salt, answer=salt + "!" * 19_900, contexts=[PROSE]),
    "emoji flood": lambda salt: AnswerEvent(
        id=salt, answer=salt + "\U0001f600" * 19_900, contexts=[PROSE]
    ),
    "'s chain": lambda salt: AnswerEvent(id=salt, answer=salt + "'s" * 9_950, contexts=[PROSE]),
    "'=' rule context": lambda salt: AnswerEvent(
        id=salt, answer="The Nile is a river.", contexts=[salt + "=" * 190_000 + " " + PROSE]
    ),
    "3,500 numbers": lambda salt: AnswerEvent(
        id=salt,
        answer=salt + " " + " ".join(str(i) for i in range(3_500))[:19_900],
        contexts=[PROSE],
    ),
    "6,600 percentages": lambda salt: AnswerEvent(
        id=salt, answer=salt + " " + ("5% " * 6_600)[:19_900], contexts=[PROSE]
    ),
    "3,300 'Paris'": lambda salt: AnswerEvent(
        id=salt, answer=salt + " " + ("Paris " * 3_400)[:19_900], contexts=[PROSE]
    ),
}
PROSE = "The Nile is a river in Africa. It flows north into the Mediterranean Sea. " * 100


def best(fn: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` runs, in seconds."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def cold(scoring: Scoring, event: AnswerEvent) -> None:
    """Score with an empty context cache: the contexts are indexed too."""
    scoring.analyzer.cache = ContextCache(CACHE_BYTES)
    score_answers([event], scoring.ctx, scoring.analyzer, Tier.NLP)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=2, help="best of N timings")
    args = parser.parse_args()
    print(f"machine: {machine()} | load {os.getloadavg()[0]:.2f}")
    scoring = load_scoring(Policy())
    nlp = load_pipeline()
    warm = AnswerEvent(id="w", answer="The cat sat on the mat.", contexts=["The cat sat."])
    score_answers([warm], scoring.ctx, scoring.analyzer, Tier.NLP)
    print(
        f"{'shape':<9} {'answer':>8} {'contexts':>9} {'raw parse s':>11} {'cold s':>8} "
        f"{'cached s':>9} {'cold/raw':>8}  NLP verdicts"
    )
    for shape, make in (("facts", facts_event), ("articles", articles_event)):
        for answer_chars, context_chars in SIZES:
            event = make(answer_chars, context_chars)
            context_total = sum(len(c.text) for c in event.context_passages)

            raw = (
                best(lambda e=event: list(nlp.pipe([e.answer])), args.repeat)
                if answer_chars <= 20_000
                else float("nan")
            )
            cold_s = best(lambda e=event: cold(scoring, e), args.repeat)
            cached_s = best(
                lambda e=event: score_answers([e], scoring.ctx, scoring.analyzer, Tier.NLP),
                args.repeat,
            )
            (verdicts,) = score_answers([event], scoring.ctx, scoring.analyzer, Tier.NLP)
            outcome = ", ".join(f"{v.kind.value} {v.decision.value}" for v in verdicts)
            if verdicts[0].reasons[0].code.value == "too_long_for_nlp":
                outcome += " (too_long_for_nlp)"
            print(
                f"{shape:<9} {len(event.answer):>8,} {context_total:>9,} {raw:>11.3f} "
                f"{cold_s:>8.3f} {cached_s:>9.3f} {cold_s / raw:>8.2f}  {outcome}"
            )
    print(f"\n{'odd shape (scored once)':<24} {'answer':>8} {'contexts':>9} {'s':>7}  NLP verdicts")
    for n, (shape, make_odd) in enumerate(ODD_SHAPES.items()):
        event = make_odd(f"odd{n}")  # a text this process has not tokenized yet
        started = time.perf_counter()
        cold(scoring, event)
        seconds = time.perf_counter() - started
        (verdicts,) = score_answers([event], scoring.ctx, scoring.analyzer, Tier.NLP)
        outcome = ", ".join(f"{v.kind.value} {v.decision.value}" for v in verdicts)
        context_total = sum(len(c.text) for c in event.context_passages)
        print(f"{shape:<24} {len(event.answer):>8,} {context_total:>9,} {seconds:>7.2f}  {outcome}")
    judge_shapes()


JUDGE_SHAPES: dict[str, Callable[[str], AnswerEvent]] = {
    "8 sentences (reference)": lambda salt: AnswerEvent(
        id=salt,
        answer=" ".join(f"Station {salt}{i} is {7 * i} km from the sea." for i in range(8)),
        contexts=[" ".join(f"Station {salt}{i} lies {7 * i} km upstream." for i in range(60))],
    ),
    "'!' claim, '=' chunk": lambda salt: AnswerEvent(
        id=salt, answer=salt + "!" * 15_000, contexts=["=" * 30_000 + " " + PROSE[:1_100]]
    ),
    "unspaced URLs": lambda salt: AnswerEvent(
        id=salt,
        answer="http://x.com/" + salt + "a-b/" * 3_750,
        contexts=["http://x.com/" + "a-b/" * 7_500],
    ),
}


def judge_shapes() -> None:
    from verdictflow.judge_tier.checker_backend import CheckerModel, shipped_dir
    from verdictflow.judge_tier.claim_checks import judge_answer

    model = CheckerModel(shipped_dir())
    judge_answer(model, AnswerEvent(id="w", answer="The Nile is long.", contexts=[PROSE[:500]]))
    print(f"\n{'judge tier, one answer':<24} {'answer':>8} {'contexts':>9} {'s':>7}  claims, pairs")
    for n, (shape, make) in enumerate(JUDGE_SHAPES.items()):
        event = make(f"judge{n}")
        asked = model.misses
        started = time.perf_counter()
        reply = judge_answer(model, event)
        seconds = time.perf_counter() - started
        context_total = sum(len(c.text) for c in event.context_passages)
        pairs = model.misses - asked
        print(
            f"{shape:<24} {len(event.answer):>8,} {context_total:>9,} {seconds:>7.2f}  "
            f"{len(reply['claims'])}, {pairs}"
        )


if __name__ == "__main__":
    main()
