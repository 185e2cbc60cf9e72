"""Answer tiers are separate consumer groups: a lexical-tier worker alone gives every answer its
lexical verdicts and no hallucination verdict; an NLP-tier worker started later reads the same
answers from the start and emits the hallucination verdicts. Every verdict equals the offline
evaluation byte for byte, and malformed records are dead-lettered once."""

from __future__ import annotations

import asyncio
import sqlite3

import orjson
import pytest

from tests.support.verdict_collection import collect
from verdictflow.context_store import FILE_NAME
from verdictflow.evaluators.kinds import Tier, answer_kinds
from verdictflow.evaluators.policy import load_policy
from verdictflow.samples.traffic import generate
from verdictflow.scoring_jobs.batch.eval_answers import expected_verdicts
from verdictflow.scoring_setup import load_scoring
from verdictflow.streams.replay import replay

pytestmark = pytest.mark.broker


def test_lexical_tier_alone_then_nlp_tier_later(settings_factory, worker_factory, tmp_path):
    policy_path = tmp_path / "policy.yaml"
    policy_path.write_text("consistency:\n  window_seconds: 2\n")
    lexical = settings_factory(tier="lexical")
    nlp = lexical.model_copy(update={"tier": "nlp"})
    traffic = generate(300, seed=3, malformed_every=25, grouped_share=0.1, inline_share=0.1)
    expected = expected_verdicts(traffic.lines, load_scoring(load_policy(policy_path)))
    kind = {vid: orjson.loads(v)["kind"] for vid, v in expected.items()}
    nlp_kinds = {spec.kind.value for spec in answer_kinds(Tier.NLP)}
    lexical_ids = {vid for vid, k in kind.items() if k not in nlp_kinds}
    assert len(lexical_ids) < len(expected)

    first = worker_factory(lexical, policy=policy_path)
    asyncio.run(replay(traffic.lines, "answers", lexical))
    alive = lambda: first.proc.poll() is None  # noqa: E731
    verdicts, dead = asyncio.run(
        collect(lexical, len(lexical_ids), traffic.malformed, 120, alive=alive)
    )
    assert alive(), first.log()[-3000:]
    assert verdicts.keys() == lexical_ids, "the lexical tier alone: exactly the lexical verdicts"
    assert len(dead) == traffic.malformed

    second = worker_factory(nlp, policy=policy_path)
    both = lambda: alive() and second.proc.poll() is None  # noqa: E731
    verdicts, dead = asyncio.run(
        collect(lexical, len(expected), traffic.malformed, 180, alive=both)
    )
    assert both(), second.log()[-3000:]
    assert verdicts.keys() == expected.keys()
    differing = [vid for vid, values in verdicts.items() if values[0] != expected[vid]]
    assert not differing, f"{len(differing)} verdicts differ from the offline evaluation"
    assert len(dead) == traffic.malformed, "the NLP tier dead-letters nothing more"
    with sqlite3.connect(nlp.data_dir / FILE_NAME) as db:
        (stored,) = db.execute("SELECT COUNT(*) FROM evidence_indexes").fetchone()
    assert stored > 0, "the NLP tier keeps its context indexes in its data dir"
