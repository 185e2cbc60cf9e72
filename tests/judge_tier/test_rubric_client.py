"""The rubric by a judge model (issue 45) through the judge client, against the local
OpenAI-compatible stand-in: failures retried, a malformed reply asked once more, a reply
malformed twice giving the spec's error object in every metric, a backend that cannot run the
rubric saying so; each gives both frameworks' ``judge_llm`` verdicts, built by the same
arithmetic as the deterministic judges."""

from __future__ import annotations

import asyncio

from tests.support.openai_standin import ALWAYS_MALFORMED, StandIn, serve
from verdictflow.evaluators.escalation import Priority
from verdictflow.evaluators.judge_tier_policy import JudgeTierPolicy
from verdictflow.evaluators.policy import JudgePolicy
from verdictflow.evaluators.summary_judges.rubric_verdicts import RubricContext, rubric_verdicts
from verdictflow.judge_tier.backends import OpenAIBackend, Reply
from verdictflow.judge_tier.client import JudgeClient
from verdictflow.models.events import AnswerEvent
from verdictflow.models.judge import Judgement, JudgeRequest, ReviewedVerdict
from verdictflow.models.verdicts import Decision, ReasonCode, VerdictKind
from verdictflow.pipelines.summaries import spacy_parser

ARTICLE = (
    "The city council approved the new library budget on Monday after a long debate. "
    "The library will open two new branches in the northern districts next spring. "
    "The mayor said the plan would serve more than twenty thousand residents."
)


def request(summary: str) -> JudgeRequest:
    return JudgeRequest(
        task="rubric",
        scope="summary",
        priority="band",
        reviews=ReviewedVerdict(
            verdict_id="v-s1", kind=VerdictKind.JUDGE, score=5.0, decision=Decision.FAIL,
            threshold=6.0, config_digest="d",
        ),
        event=AnswerEvent(id="s1", answer=summary, contexts=[ARTICLE]),
    )  # fmt: skip


CTX = RubricContext("openai", "standin-judge", JudgePolicy(), "en_core_web_sm-test")


def judged(pattern: tuple[str, ...], summary: str) -> tuple[Judgement | tuple, list[str]]:
    standin = StandIn(pattern=pattern, retry_after=0.1)
    with serve(standin) as url:
        client = JudgeClient(OpenAIBackend(url, "standin-judge", "k", 10), JudgeTierPolicy())

        async def go() -> Judgement | tuple:
            try:
                return await client.judge(request(summary), Priority.BAND)
            finally:
                await client.close()

        outcome = asyncio.run(go())
    return outcome, [o for _, o in standin.seen]


def test_failures_are_retried_and_both_frameworks_get_a_verdict_from_the_judgements() -> None:
    summary = (
        "The city council approved the new library budget on Monday after a long debate. "
        "The library will open two new branches in the northern districts next spring."
    )
    judgement, seen = judged(("500", "429", "ok"), summary)
    assert isinstance(judgement, Judgement)
    assert (judgement.attempts, seen) == (3, ["500", "429", "ok"])
    assert judgement.prompt_version == "rubric_llm/1"
    verdicts = rubric_verdicts(request(summary), CTX, judgement, spacy_parser()[0])
    assert [(v.kind, v.judge) for v in verdicts] == [
        (VerdictKind.JUDGE_LLM, "twin_lock"), (VerdictKind.JUDGE_LLM, "judge_lock"),
    ]  # fmt: skip
    twin, strict = verdicts
    # 2 of 3 key points Fully: recall 2/3, precision 1 -> F1 0.8 -> 8.0
    assert twin.metrics["coverage"]["overall_score"] == 8.0
    assert twin.metrics["hallucination"]["overall_score"] == 10.0  # both claims Supported
    assert strict.metrics["coverage"]["caps"][0]["rule"] == "qag_not_all_correct"
    assert twin.evidence["judge_model"]["prompt_version"] == "rubric_llm/1"
    assert twin.evidence["response"] == judgement.content
    assert twin.evidence["reviews"]["verdict_id"] == "v-s1"
    assert twin.verdict_id != strict.verdict_id
    assert twin.threshold == 6.0
    assert twin.score is not None


def test_a_reply_malformed_twice_gives_the_specs_error_object_in_every_metric() -> None:
    summary = f"The council approved the budget. {ALWAYS_MALFORMED}"
    judgement, seen = judged(("ok",), summary)
    assert isinstance(judgement, Judgement)
    assert seen == ["ok", "ok"]  # asked once more after the first malformed reply
    assert judgement.first_invalid == "this is not json"
    for verdict in rubric_verdicts(request(summary), CTX, judgement, spacy_parser()[0]):
        assert verdict.decision is Decision.DEFER
        assert verdict.reasons[0].code is ReasonCode.JUDGE_OUTPUT_INVALID
        assert set(verdict.metrics) == {
            "coverage", "alignment", "hallucination", "relevance", "bias_toxicity",
        }  # fmt: skip
        assert all(
            m["error"].startswith("judge_output_invalid: ") for m in verdict.metrics.values()
        )
        assert verdict.evidence["first_response"] == "this is not json"


class NoRubric:
    """A backend like the local cross-encoder: it judges claims, not the rubric."""

    name, model, prompt_version, runs_rubric = "cross-encoder", "ce@1", "ce/1", False

    async def ask(self, event, max_tokens, messages=None) -> Reply:  # pragma: no cover
        raise AssertionError("a backend without the rubric must not be asked for it")

    async def close(self) -> None:
        return None


def test_a_backend_that_cannot_run_the_rubric_says_so_and_is_not_asked() -> None:
    client = JudgeClient(NoRubric(), JudgeTierPolicy())  # type: ignore[arg-type]
    outcome = asyncio.run(client.judge(request("The council approved it."), Priority.BAND))
    assert isinstance(outcome, tuple)
    assert outcome[0] is ReasonCode.JUDGE_REFUSED
    assert "VERDICTFLOW_JUDGE_URL" in outcome[1]
    verdicts = rubric_verdicts(request("x"), CTX, None, spacy_parser()[0], outcome)
    assert {v.reasons[0].code for v in verdicts} == {ReasonCode.JUDGE_REFUSED}
    assert all(v.decision is Decision.DEFER and v.score is None for v in verdicts)
