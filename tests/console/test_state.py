"""The console's memory, fed the sample's real records with explicit arrival times."""

from __future__ import annotations

from collections import Counter

import orjson

from tests.console.conftest import find
from verdictflow.console.state import ConsoleLimits, ConsoleState
from verdictflow.console.window import WindowCounts, score_bin
from verdictflow.evaluators.policy import load_policy
from verdictflow.evaluators.summary_faithfulness import score_summaries
from verdictflow.models.codec import encode
from verdictflow.models.events import SummaryEvent
from verdictflow.scoring_setup import load_scoring

T0 = 1_800_000_000.0


def fed(
    lines: list[bytes], verdicts: list[bytes], limits: ConsoleLimits | None = None
) -> ConsoleState:
    state = ConsoleState("vf.", limits)
    for line in lines:
        state.ingest("vf.answers", line, T0)
    for raw in verdicts:
        v = orjson.loads(raw)
        state.ingest(f"vf.verdicts.{v['kind']}", raw, T0 + 1)
    return state


def test_counts_per_kind_equal_the_verdicts_by_kind_and_decision(
    sample_lines: list[bytes], sample_verdicts: list[bytes]
) -> None:
    state = fed(sample_lines, sample_verdicts)
    expected = Counter((v["kind"], v["decision"]) for v in map(orjson.loads, sample_verdicts))
    stats = state.stats(300, "*", "*", T0 + 2)
    got = Counter()
    for k in stats["kinds"]:
        assert k["window"] == k["total"]
        for decision, n in k["window"]["decisions"].items():
            if n:
                got[(k["kind"], decision)] = n
        scored = sum(k["window"]["histogram"])
        assert scored <= k["window"]["n"]
    assert got == expected
    assert stats["records"]["answers"] == len(sample_lines)
    # the two malformed sample lines are not answers the console can join
    assert stats["bad_records"] == {"answers": 2}


def test_a_redelivered_verdict_is_counted_once(sample_verdicts: list[bytes]) -> None:
    state = fed([], sample_verdicts + sample_verdicts[:5])
    assert state.duplicates == 5
    total = sum(k["total"]["n"] for k in state.stats(300, "*", "*", T0 + 2)["kinds"])
    assert total == len(sample_verdicts)


def test_a_failure_carries_its_answer_and_the_lyon_span(
    sample_lines: list[bytes], sample_verdicts: list[bytes]
) -> None:
    state = fed(sample_lines, sample_verdicts)
    lyon = [f for f in state.failures_since(0, "*", "*", 500) if f["input_id"] == "capital-3"]
    hallucination = next(f for f in lyon if f["kind"] == "hallucination")
    assert hallucination["text"] == "It is Lyon, the capital of France."
    assert hallucination["query"] == "What is the capital of France?"
    assert (hallucination["model"], hallucination["tenant"]) == ("m-small", "acme")
    seg = next(s for s in hallucination["segments"] if s["text"] == "Lyon")
    assert seg["status"] == "unsupported"
    raw = state.verdict(hallucination["verdict_id"])
    assert raw is not None
    assert orjson.loads(raw)["evidence"]["unsupported_count"] == 2
    assert all(f["decision"] != "PASS" for f in state.failures_since(0, "*", "*", 500))


def test_a_summary_faithfulness_failure_carries_the_summary_and_the_lyon_span() -> None:
    """Summaries get faithfulness verdicts too (the summaries agent): the failure is joined to
    the summary's text from ``summaries`` and its fabricated name is marked."""
    article = "The council of Paris approved a budget of 5 million euros on Monday."
    text = "The council of Lyon approved a budget of 5 million euros on Monday."
    event = SummaryEvent(id="sum-lyon", article=article, summary=text)
    scoring = load_scoring(load_policy(None))
    (verdict,) = score_summaries([event], scoring.analyzer, scoring.ctx)
    state = ConsoleState("vf.")
    state.ingest("vf.summaries", encode(event), T0)
    state.ingest("vf.verdicts.faithfulness", encode(verdict), T0 + 1)
    (failure,) = state.failures_since(0, "*", "*", 10)
    assert (failure["kind"], failure["input_id"], failure["decision"]) == (
        "faithfulness",
        "sum-lyon",
        "FAIL",
    )
    assert (failure["text"], failure["text_source"]) == (text, "summary")
    lyon = next(seg for seg in failure["segments"] if seg["text"] == "Lyon")
    assert lyon["status"] == "unsupported"


def test_a_verdict_read_before_its_answer_waits_for_it_then_gives_up(
    sample_lines: list[bytes], sample_verdicts: list[bytes]
) -> None:
    state = ConsoleState("vf.", ConsoleLimits(hold_seconds=2.0))
    raw = orjson.dumps(find(sample_verdicts, "hallucination", "capital-3"))
    state.ingest("vf.verdicts.hallucination", raw, T0)
    assert state.failures_since(0, "*", "*", 10) == []  # held: the answer may be on its way
    answer = next(line for line in sample_lines if b'"capital-3"' in line)
    state.ingest("vf.answers", answer, T0 + 0.5)
    (item,) = state.failures_since(0, "*", "*", 10)
    assert item["text"].startswith("It is Lyon")

    other = orjson.dumps(find(sample_verdicts, "groundedness", "moon-1"))
    state.ingest("vf.verdicts.groundedness", other, T0 + 1)
    state.tick(T0 + 2.9)
    assert len(state.failures_since(0, "*", "*", 10)) == 1
    state.tick(T0 + 3.1)  # its answer never came: published without text
    last = state.failures_since(1, "*", "*", 10)
    assert [(f["input_id"], f["text"], f["segments"]) for f in last] == [("moon-1", None, [])]


def test_filters_by_model_tenant_decision_and_kind(
    sample_lines: list[bytes], sample_verdicts: list[bytes]
) -> None:
    state = fed(sample_lines, sample_verdicts)
    verdicts = [orjson.loads(r) for r in sample_verdicts]
    acme = state.stats(300, "*", "acme", T0 + 2)
    assert sum(k["window"]["n"] for k in acme["kinds"]) == sum(
        1 for v in verdicts if v["tenant"] == "acme"
    )
    assert "acme" in acme["tenants"]
    assert "m-small" in acme["models"]
    fails = state.failures_since(0, "m-small", "*", 500, decision="FAIL", kind="hallucination")
    assert {f["input_id"] for f in fails} == {
        v["input_id"]
        for v in verdicts
        if (v["model"], v["decision"], v["kind"]) == ("m-small", "FAIL", "hallucination")
    }
    assert fails


def test_the_window_forgets_old_seconds_but_totals_remain(sample_verdicts: list[bytes]) -> None:
    state = fed([], sample_verdicts)
    late = state.stats(60, "*", "*", T0 + 200)
    assert all(k["window"]["n"] == 0 for k in late["kinds"])
    assert sum(k["total"]["n"] for k in late["kinds"]) == len(sample_verdicts)
    assert all(sum(k["per_second"]) == 0 for k in late["kinds"])
    recent = state.stats(60, "*", "*", T0 + 30)
    assert sum(sum(k["per_second"]) for k in recent["kinds"]) == len(sample_verdicts)


def test_bad_records_are_counted_never_raised() -> None:
    state = ConsoleState("vf.")
    for topic, value in [
        ("vf.verdicts.groundedness", b"not json"),
        ("vf.verdicts.groundedness", b"[1, 2]"),
        ("vf.verdicts.groundedness", b'{"verdict_id": "x", "kind": "k", "decision": "MAYBE"}'),
        ("vf.verdicts.groundedness", None),
        ("vf.doc-quality", b'{"quality": 1}'),
        ("vf.answers", b'{"id": 3, "answer": "x"}'),
        ("vf.unknown", b"{}"),
    ]:
        state.ingest(topic, value, T0)
    assert sum(state.bad_records.values()) == 7
    assert state.stats(60, "*", "*", T0)["kinds"] == []


def test_alerts_dead_letters_and_quality_rows_are_published_in_order() -> None:
    state = ConsoleState("vf.")
    alert = {"alert_id": "a1", "kind": "groundedness", "value": 0.4}
    state.ingest("vf.alerts", orjson.dumps(alert), T0)
    dead = {"error_code": "schema", "error": "bad", "source_topic": "vf.answers", "partition": 1,
            "offset": 7, "raw": "x" * 5000, "raw_size": 5000}  # fmt: skip
    state.ingest("vf.dead-letters", orjson.dumps(dead), T0)
    state.ingest("vf.dead-letters", orjson.dumps({**dead, "error_code": "not_json"}), T0)
    for i in range(3):
        row = {"doc_id": f"d{i}", "quality": 0.5, "features": {"text": 1}, "version": i}
        state.ingest("vf.doc-quality", orjson.dumps(row), T0 + i)
    assert state.alerts.since(0, 10)[0]["alert"] == alert
    dl = state.dead_letters.since(0, 10)
    assert [d["error_code"] for d in dl] == ["schema", "not_json"]
    assert dl[0]["source"] == "vf.answers[1]@7"
    assert len(dl[0]["raw"]) == 600
    assert state.dead_letters.since(1, 10) == dl[1:]
    stats = state.stats(60, "*", "*", T0 + 5)
    assert stats["dead_letter_codes"] == {"schema": 1, "not_json": 1}
    assert stats["quality"]["documents"] == 3
    assert stats["quality"]["last_age"] == 3.0
    assert [r["doc_id"] for r in state.quality.since(0, 2)] == ["d1", "d2"]


def test_memory_is_bounded(sample_lines: list[bytes], sample_verdicts: list[bytes]) -> None:
    limits = ConsoleLimits(failures=5, evidence=3, texts=4, label_values=1)
    state = fed(sample_lines, sample_verdicts, limits)
    state.tick(T0 + 10)  # failures whose answers were forgotten stop waiting
    assert len(state.failures.items) == 5
    assert len(state._evidence) == 3
    assert len(state._texts) == 4
    assert set(state.labels()["models"]) <= {"m-small", "other", "none", "toy"}
    assert len(set(state.labels()["models"]) - {"other", "none"}) == 1


def test_score_bins_and_window_validation() -> None:
    assert [score_bin(s, 1.0) for s in (0.0, 0.05, 0.1, 0.99, 1.0, 1.5, -1)] == [
        0,
        0,
        1,
        9,
        9,
        9,
        0,
    ]
    assert score_bin(7.5, 10.0) == 7
    counts = WindowCounts(10)
    counts.add(("g", "m", "t"), "PASS", 3, T0)
    counts.add(("g", "m", "t"), "FAIL", None, T0 - 5)  # a clock step back: newest bucket
    window, totals, _ = counts.figures(10, T0)
    assert window["g"].counts[:3] == [1, 1, 0] == totals["g"].counts[:3]


def test_a_judge_verdict_marks_its_unsupported_claim_and_counts_its_spend() -> None:
    from verdictflow.evaluators.faithfulness_llm import JudgeContext, build_verdict
    from verdictflow.models.events import AnswerEvent
    from verdictflow.models.judge import Judgement, JudgeRequest, ReviewedVerdict
    from verdictflow.models.verdicts import Decision, VerdictKind

    answer = "Acme bought Globex. Globex is older than Acme."
    event = AnswerEvent(id="j1", answer=answer, contexts=["Acme bought Globex in 2019."])
    content = orjson.dumps({"claims": [
        {"claim": "Acme bought Globex.", "supported": True, "evidence": "Acme bought Globex"},
        {"claim": "Globex is older than Acme.", "supported": False, "evidence": ""},
    ]}).decode()  # fmt: skip
    request = JudgeRequest(
        scope="answer", priority="fail", event=event,
        reviews=ReviewedVerdict(verdict_id="v", kind=VerdictKind.FAITHFULNESS, score=0.2,
                                decision=Decision.FAIL, threshold=0.4, config_digest="d"),
    )  # fmt: skip
    judgement = Judgement(backend="openai", model="m", prompt_version="p", content=content,
                          prompt_tokens=120, completion_tokens=30)  # fmt: skip
    verdict = build_verdict(request, JudgeContext("openai", "m", 0.8), judgement)
    state = ConsoleState("vf.")
    state.judge_budget = {"tokens_per_minute": 1000}
    state.ingest("vf.answers", orjson.dumps(event.model_dump(mode="json")), T0)
    state.ingest("vf.verdicts.faithfulness_llm", encode(verdict), T0 + 1)
    state.tick(T0 + 5)
    (item,) = state.failures_since(0, "*", "*", 10, kind="faithfulness_llm")
    marks = {(m["text"], m["status"]) for m in item["marks"]}
    assert ("Globex is older than Acme.", "unsupported") in marks
    assert ("Acme bought Globex.", "supported") in marks
    judge = state.stats(300, "*", "*", T0 + 5)["judge"]
    assert judge["verdicts"] == {"fail": 1}
    assert judge["tokens_last_minute"] == 150
    assert judge["budget"] == {"tokens_per_minute": 1000}
