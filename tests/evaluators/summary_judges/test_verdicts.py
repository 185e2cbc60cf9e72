"""Both judges end to end on real spaCy parses: caps, penalties, errors, determinism."""

from __future__ import annotations

import orjson
import pytest

from verdictflow.evaluators.summary_judges import judge_lock, qag, rubric, twin_lock
from verdictflow.evaluators.summary_judges.judgements import Judgements
from verdictflow.evaluators.summary_judges.keypoints import extract_key_points, jaccard
from verdictflow.evaluators.summary_judges.text import parse_all
from verdictflow.evaluators.summary_judges.toxicity import (
    MILD_PROFANITY,
    bias_toxicity_judgement,
    profanity_words,
)
from verdictflow.evaluators.summary_judges.verdicts import JudgeConfig, JudgeContext, score_batch
from verdictflow.models.events import SummaryEvent
from verdictflow.nlp import load_pipeline, pipeline_version
from verdictflow.pipelines.summaries import judge_records
from verdictflow.streams.records import Record

ARTICLE = (
    "The city council approved a new budget of 5 million dollars on Monday. "
    "The mayor said the money will fund three new schools and repair old roads in the north. "
    "Critics argued the plan raises taxes for small businesses across the region. "
    "The vote passed by seven to two after a long debate that lasted until midnight. "
    "Construction of the schools is expected to begin in the spring of next year. "
    "Local teachers welcomed the decision and called it a long overdue investment. "
    "The council will review the spending again in six months, officials said."
)
FAITHFUL = (
    "The city council approved a budget of 5 million dollars on Monday. "
    "The money will fund three new schools and repair old roads in the north."
)
INVENTED = "The council approved 9 billion dollars for a football stadium in Paris on Monday."


@pytest.fixture(scope="module")
def nlp():
    return load_pipeline()


@pytest.fixture(scope="module")
def parse(nlp):
    return lambda texts: parse_all(nlp, texts)


def judged(parse, summary, article=ARTICLE):
    s, a = parse([summary, article])
    return twin_lock.judge(s, a), judge_lock.judge(s, a)


def test_key_points_in_range_long_enough_and_distinct(parse):
    (article,) = parse([ARTICLE])
    for lo, hi in (twin_lock.KEY_POINTS, judge_lock.KEY_POINTS):
        points = extract_key_points(article, lo, hi)
        assert lo <= len(points) <= hi
        assert all(article.word_count(*_bounds(article, p.sentence)) >= 6 for p in points)
        for i, p in enumerate(points):
            assert all(jaccard(p.keys, q.keys) <= 0.5 for q in points[i + 1 :])


def _bounds(doc, i):
    s = doc.sentences[i]
    return s.start, s.end


def test_faithful_summary_has_no_caps_for_hallucination(parse):
    twin, judge = judged(parse, FAITHFUL)
    assert twin["hallucination"]["overall_score"] == 10.0
    assert all(c["label"] == "Supported" for c in twin["hallucination"]["claims"])
    assert twin["coverage"]["precision"] == 1.0
    assert not [c for c in twin["coverage"]["caps"] if c["rule"] == "extraneous_claim"]
    assert judge["hallucination"]["severity"] == "minor"


def test_extraneous_claim_caps_coverage_and_relevance(parse):
    twin, judge = judged(parse, INVENTED)
    claim = twin["hallucination"]["claims"][0]
    assert claim["label"] == "Unsupported"
    assert {"9", "Paris"} <= set(claim["missing_anchors"])
    assert twin["coverage"]["overall_score"] <= 4.0
    assert twin["relevance"]["overall_score"] <= 4.0
    assert judge["coverage"]["overall_score"] <= 3.0
    assert judge["relevance"]["overall_score"] <= 3.0
    # uf = 1 with an Unsupported claim: raw = max(0, 4 - round(4)) = 0
    assert judge["hallucination"]["raw_score"] == 0
    assert judge["hallucination"]["severity"] == "severe"
    assert judge["alignment"]["overall_score"] <= 3.0


def test_extraneous_cap_is_recorded_with_its_reason(parse):
    twin, _ = judged(parse, FAITHFUL + " " + INVENTED)
    rules = {c["rule"] for c in twin["coverage"]["caps"]}
    assert "extraneous_claim" in rules
    assert twin["coverage"]["caps"][0]["before"] > 4.0
    assert twin["coverage"]["overall_score"] == 4.0


def bias_toxicity(summary, *, judge_lock: bool) -> dict:
    """The bias-toxicity metric of ``summary`` alone: its judgement through the arithmetic."""
    only = Judgements(
        key_points=None, extraneous_tokens=[], summary_tokens=0, claims=None, segments=[],
        theme="", alignment=None, bias_toxicity=bias_toxicity_judgement(summary),
    )  # fmt: skip
    return rubric.bias_toxicity(only, judge_lock=judge_lock)


def test_strong_slur_penalty(parse):
    singles, _ = profanity_words()
    strong = sorted(w for w in singles if w not in MILD_PROFANITY and w.isalpha())[0]
    (summary,) = parse([f"The council approved the budget, said the {strong} mayor."])
    out = bias_toxicity(summary, judge_lock=True)
    assert out["tone"] == "hostile"
    assert out["tox_score"] <= 2.0
    assert out["overall_score"] <= 3.0
    assert bias_toxicity(summary, judge_lock=False)["overall_score"] == 6.0  # (10 + 2) / 2


def test_mild_profanity_and_stereotype_penalties(parse):
    mild, stereo, clean = parse(
        [
            "The damn council approved the budget on Monday.",
            "The critics said all immigrants are lazy and the budget is wrong.",
            "The council approved the budget on Monday.",
        ]
    )
    assert bias_toxicity(mild, judge_lock=True)["tox_score"] == 5.0
    assert bias_toxicity(stereo, judge_lock=True)["bias_score"] <= 4.0
    clean_out = bias_toxicity(clean, judge_lock=True)
    assert (clean_out["overall_score"], clean_out["tone"]) == (10.0, "neutral")


def test_qag_labels(parse):
    article, good, bad = parse(
        [ARTICLE, FAITHFUL, "A football stadium will be built in Paris next spring."]
    )
    questions = qag.generate(article, [0, 1])
    assert len(questions) == 6
    assert len({q.answer_keys for q in questions}) == 6  # no duplicate spans
    good_scores = [a.score for a in qag.answer_all(questions, good)]
    bad_scores = [a.score for a in qag.answer_all(questions, bad)]
    assert sum(good_scores) > sum(bad_scores)
    assert set(good_scores) <= {0.0, 0.5, 1.0}
    assert 1.0 in good_scores


@pytest.mark.parametrize(
    ("article", "summary", "reason"),
    [
        ("", "A summary.", "empty_article"),
        (ARTICLE, "   ", "empty_summary"),
        (ARTICLE, "?!", "empty_summary"),
    ],
)
def test_unjudgeable_input_gives_error_objects_and_defer(parse, nlp, article, summary, reason):
    ctx = JudgeContext(JudgeConfig(), pipeline_version(nlp))
    event = SummaryEvent(id="bad", article=article, summary=summary)
    verdicts = score_batch([event], parse, ctx)[0]
    assert [v.judge for v in verdicts] == ["twin_lock", "judge_lock"]
    for v in verdicts:
        assert set(v.metrics) == {
            "coverage",
            "alignment",
            "hallucination",
            "relevance",
            "bias_toxicity",
        }
        assert all(
            list(m) == ["error"] and m["error"].startswith(reason) for m in v.metrics.values()
        )
        assert v.decision == "DEFER"
        assert v.score is None


def test_malformed_record_is_dead_lettered_not_raised(parse, nlp):
    ctx = JudgeContext(JudgeConfig(), pipeline_version(nlp))
    good = orjson.dumps(
        {"id": "ok", "article": ARTICLE, "summary": FAITHFUL, "judges": ["twin_lock"]}
    )
    records = [
        Record("summaries", 0, i, None, raw)
        for i, raw in enumerate([b"not json", b'{"id": "x", "summary": 3}', good])
    ]
    outputs = judge_records(records, parse, ctx, max_bytes=1_000_000)
    assert [o[0][0] for o in outputs] == ["dead-letters", "dead-letters", "verdicts.judge"]
    assert len(outputs[2]) == 1
    codes = [orjson.loads(o[0][2])["error_code"] for o in outputs[:2]]
    assert codes == ["not_json", "schema"]


def test_verdicts_are_deterministic_and_distinct_per_judge(parse, nlp):
    ctx = JudgeContext(JudgeConfig(), pipeline_version(nlp))
    event = SummaryEvent(id="s1", article=ARTICLE, summary=FAITHFUL, model="m")
    first = score_batch([event], parse, ctx)[0]
    again = score_batch([event, event], parse, ctx)[1]
    assert [v.model_dump_json() for v in first] == [v.model_dump_json() for v in again]
    assert first[0].verdict_id != first[1].verdict_id
    assert "en_core_web_sm" in first[0].tokenizer_version
    v = first[1]
    assert (v.kind, v.judge, v.model) == ("judge", "judge_lock", "m")
    scores = [m["overall_score"] for m in v.metrics.values()]
    assert v.score == pytest.approx(sum(scores) / 5, abs=0.006)
    assert len(v.metrics["coverage"]["qag"]) == 6
    assert v.metrics["coverage"]["key_points"]
    assert (
        JudgeContext(JudgeConfig(threshold=7), ctx.pipeline_version).config_digest
        != ctx.config_digest
    )
