"""``judge_records`` with faithfulness (real spaCy): judge verdicts then the faithfulness
verdict of each summary, the policy's switch, dead letters, and failure isolation."""

from __future__ import annotations

from collections.abc import Sequence

import orjson
import pytest

from tests.support.summary_texts import ARTICLE, FABRICATED, FAITHFUL
from verdictflow.evaluators.policy import Policy
from verdictflow.evaluators.summary_judges.verdicts import JudgeContext, Parser
from verdictflow.models.events import SummaryEvent
from verdictflow.models.verdicts import Verdict
from verdictflow.pipelines import Output, summaries
from verdictflow.pipelines.summaries import judge_records, spacy_parser
from verdictflow.scoring_setup import Scoring, load_scoring, new_analyzer
from verdictflow.streams.records import Record


@pytest.fixture(scope="module")
def parser() -> tuple[Parser, str]:
    return spacy_parser()


@pytest.fixture(scope="module")
def scoring() -> Scoring:
    return load_scoring(Policy())


def records(*values: bytes) -> list[Record]:
    return [Record("summaries", 0, i, None, v) for i, v in enumerate(values)]


def summary(sid: str, text: str, **extra: object) -> bytes:
    return orjson.dumps({"id": sid, "article": ARTICLE, "summary": text, **extra})


def run(
    parser: tuple[Parser, str],
    recs: Sequence[Record],
    faithfulness: Scoring | None,
    override: Sequence[str] | None = None,
) -> list[list[Output]]:
    parse, version = parser
    policy = faithfulness.ctx.policy if faithfulness is not None else Policy()
    return judge_records(
        recs,
        parse,
        JudgeContext(policy.judge, version),
        max_bytes=1_000_000,
        override=override,
        faithfulness=faithfulness,
    )


def test_judge_verdicts_then_faithfulness_keyed_by_summary_id(parser, scoring) -> None:
    fab, ok = run(parser, records(summary("fab", FABRICATED), summary("ok", FAITHFUL)), scoring)
    assert [(t, k) for t, k, _ in fab] == [
        ("verdicts.judge", "fab"),
        ("verdicts.judge", "fab"),
        ("verdicts.faithfulness", "fab"),
    ]
    verdict = orjson.loads(fab[2][2])
    assert verdict["decision"] == "FAIL"
    assert "Lyon" in [f["text"] for f in verdict["evidence"]["findings"]]
    assert orjson.loads(ok[2][2])["decision"] == "PASS"


def test_replaying_a_record_gives_the_same_bytes(parser, scoring) -> None:
    recs = records(summary("fab", FABRICATED), summary("ok", FAITHFUL))
    first = run(parser, recs, scoring)
    again = run(parser, recs[::-1], Scoring(scoring.ctx, new_analyzer(Policy())))[::-1]
    assert first == again


def test_the_judge_option_does_not_turn_faithfulness_off(parser, scoring) -> None:
    (outputs,) = run(parser, records(summary("s", FAITHFUL)), scoring, override=["twin_lock"])
    assert [orjson.loads(v).get("judge") for _, _, v in outputs] == ["twin_lock", None]
    (none,) = run(parser, records(summary("s", FAITHFUL)), scoring, override=[])
    assert [t for t, _, _ in none] == ["verdicts.faithfulness"]


def test_the_policy_switch_off_emits_no_faithfulness_and_moves_no_digest(parser, scoring) -> None:
    off_policy = Policy(faithfulness={"summaries": False})
    off = load_scoring(off_policy)
    assert off.ctx.config_digest == scoring.ctx.config_digest
    recs = records(summary("fab", FABRICATED), summary("ok", FAITHFUL, judges=["judge_lock"]))
    with_it = run(parser, recs, scoring)
    without = run(parser, recs, off)
    assert without == [
        [o for o in outputs if o[0] != "verdicts.faithfulness"] for outputs in with_it
    ]
    assert [len(o) for o in without] == [2, 1]


def test_a_bad_record_gives_one_dead_letter_and_no_faithfulness(parser, scoring) -> None:
    bad = [b"{not json", b'{"id": "x", "article": "a"}', orjson.dumps({"id": "", "summary": ""})]
    outputs = run(parser, records(*bad, summary("ok", FAITHFUL)), scoring)
    for one in outputs[:3]:
        assert [t for t, _, _ in one] == ["dead-letters"]
    codes = [orjson.loads(o[0][2])["error_code"] for o in outputs[:3]]
    assert codes == ["not_json", "schema", "schema"]
    assert [t for t, _, _ in outputs[3]] == ["verdicts.judge"] * 2 + ["verdicts.faithfulness"]


def test_a_summary_that_breaks_faithfulness_is_dead_lettered_alone(
    parser, scoring, monkeypatch
) -> None:
    """The failing summary keeps its judge verdicts and gets one internal_error dead letter
    naming faithfulness; the rest of the batch gets every verdict."""
    real = summaries.score_summaries

    def breaks_on_boom(events: Sequence[SummaryEvent], *args: object) -> list[Verdict]:
        if any(e.id == "boom" for e in events):
            raise RuntimeError("scorer bug")
        return real(events, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(summaries, "score_summaries", breaks_on_boom)
    recs = records(summary("a", FAITHFUL), summary("boom", FAITHFUL), summary("c", FABRICATED))
    a, boom, c = run(parser, recs, scoring)
    assert (
        [t for t, _, _ in a]
        == [t for t, _, _ in c]
        == [
            "verdicts.judge",
            "verdicts.judge",
            "verdicts.faithfulness",
        ]
    )
    assert [t for t, _, _ in boom] == ["verdicts.judge", "verdicts.judge", "dead-letters"]
    letter = orjson.loads(boom[2][2])
    assert letter["error_code"] == "internal_error"
    assert letter["error"] == "faithfulness: RuntimeError: scorer bug"
    assert (letter["source_topic"], letter["offset"]) == ("summaries", 1)


CHINESE_ARTICLE = "北京是中华人民共和国的首都，也是全国的政治和文化中心。" * 8
CHINESE_SUMMARY = "北京是中国的首都。"


def test_a_summary_in_another_script_defers_from_every_kind(parser, scoring) -> None:
    raw = orjson.dumps({"id": "zh", "article": CHINESE_ARTICLE, "summary": CHINESE_SUMMARY})
    (outputs,) = run(parser, records(raw), scoring)
    verdicts = [orjson.loads(v) for _, _, v in outputs]
    assert len(verdicts) == 3  # both judges and faithfulness
    for v in verdicts:
        assert v["decision"] == "DEFER"
        assert v["reasons"][0]["code"] == "unsupported_language"


def test_an_empty_judge_list_means_no_judge_and_a_long_article_defers(parser, scoring) -> None:
    none, long = run(
        parser,
        records(
            summary("none", FAITHFUL, judges=[]),
            orjson.dumps({"id": "long", "article": ARTICLE * 210, "summary": FAITHFUL}),
        ),
        scoring,
    )
    assert [t for t, _, _ in none] == ["verdicts.faithfulness"]
    judges = [orjson.loads(v) for t, _, v in long if t == "verdicts.judge"]
    assert len(ARTICLE * 210) > Policy().budget.article_chars
    assert [v["reasons"][0]["code"] for v in judges] == ["too_long_for_nlp"] * 2
    assert "budget.article_chars" in judges[0]["reasons"][0]["detail"]
