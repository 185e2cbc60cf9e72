"""The judge tier end to end against a local OpenAI-compatible stand-in: every escalated
answer gets exactly one ``faithfulness_llm`` verdict id within a 40-requests-a-minute budget
shared by two judge processes (retries included) while 3 of every 10 requests fail, and every
summary escalated to the rubric (issue 45) exactly one ``judge_llm`` verdict per framework, the
one whose replies are malformed twice with the spec's error objects; a judge worker SIGKILLed
mid-run and restarted loses nothing, and its duplicates are byte-identical."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import orjson
import pytest

from tests.support.openai_standin import ALWAYS_MALFORMED, StandIn, serve
from tests.support.reliability import OutputCollector
from verdictflow.streams.replay import replay

pytestmark = pytest.mark.broker

CONTEXT = (
    "Acme Corp acquired Globex in 2019 for 3 billion dollars. The Nile is longer than the "
    "Amazon. Marie Curie won the Nobel Prize in Physics in 1903."
)
ANSWERS = [
    "Acme Corp acquired Globex in 2019 for 3 billion dollars.",
    "Globex acquired Acme Corp in 2019 for 3 billion dollars.",
    "The Nile is longer than the Amazon. Marie Curie won the Nobel Prize in Physics in 1903.",
    "The Amazon is longer than the Nile.",
    "Marie Curie won the Nobel Prize in Chemistry in 1911.",
]
FAILING = ("ok", "500", "ok", "ok", "429", "ok", "ok", "500", "ok", "ok")


def lines(n: int) -> list[bytes]:
    """``n`` answers, each with its own context (no two the same content, so none is answered
    from the judge's cache), the last one with nothing to check ("Yes.": DEFER, no score)."""
    rows = []
    for i in range(n):
        answer = ANSWERS[i % len(ANSWERS)] if i < n - 1 else "Yes."
        rows.append({"id": f"a{i:02d}", "query": "Facts?", "answer": answer,
                     "contexts": [f"Record {i}. {CONTEXT}"], "tenant": "t1"})  # fmt: skip
    return [orjson.dumps(row) for row in rows]


def input_ids(out: OutputCollector, kind: str, scored_only: bool = False) -> set[str]:
    ids = set()
    for values in by_kind(out).get(kind, {}).values():
        verdict = orjson.loads(values[0])
        if not scored_only or verdict["score"] is not None:
            ids.add(verdict["input_id"])
    return ids


def policy(tmp_path: Path, rpm: int, concurrency: int = 4, rubric: bool = False) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(
        "judge_tier:\n"
        "  escalate:\n"
        "    faithfulness: {band: [0.0, 1.0]}\n"
        f"  budget: {{requests_per_minute: {rpm}, max_concurrency: {concurrency}}}\n"
        + ("  rubric: {all: true}\n" if rubric else "")
    )
    return path


def summaries() -> list[bytes]:
    """Three summaries of one article for the rubric; the judge's replies to the last are
    always malformed."""
    article = f"Record s. {CONTEXT} The museum opened a new wing in the old harbour district."
    texts = [ANSWERS[0], ANSWERS[2], f"{ANSWERS[1]} {ALWAYS_MALFORMED}"]
    return [orjson.dumps({"id": f"s{i}", "article": article, "summary": text})
            for i, text in enumerate(texts)]  # fmt: skip


def judge_env(url: str) -> dict[str, str]:
    return {
        "VERDICTFLOW_JUDGE_URL": url,
        "VERDICTFLOW_JUDGE_MODEL": "standin-judge",
        "VERDICTFLOW_JUDGE_API_KEY": "not-a-secret",
    }


def by_kind(out: OutputCollector) -> dict[str, dict[str, list[bytes]]]:
    kinds: dict[str, dict[str, list[bytes]]] = {}
    for vid, values in out.verdicts.items():
        kinds.setdefault(orjson.loads(values[0])["kind"], {})[vid] = values
    return kinds


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_every_scored_answer_is_judged_once_within_the_budget(
    settings_factory, worker_factory, tmp_path
) -> None:
    settings = settings_factory(partitions=2)
    standin = StandIn(pattern=FAILING, retry_after=1.0)
    with serve(standin) as url, OutputCollector(settings) as out:
        path = policy(tmp_path, 40, rubric=True)
        worker = worker_factory(settings, path, env=judge_env(url))
        # A second judge process in the same group (issue 40: a `--tier all` worker and a
        # `--tier judge` one sent 43 requests in 60 s): the budget is the deployment's.
        second = worker_factory(
            settings.model_copy(update={"tier": "judge"}), path, env=judge_env(url)
        )
        asyncio.run(replay(lines(30), "answers", settings))
        asyncio.run(replay(summaries(), "summaries", settings))

        def judged_all() -> bool:
            done = len(input_ids(out, "faithfulness")) == 33
            rubric = len(by_kind(out).get("judge_llm", {})) == 6
            return (
                done
                and rubric
                and input_ids(out, "faithfulness_llm") >= input_ids(out, "faithfulness", True)
            )

        alive = lambda: worker.proc.poll() is None and second.proc.poll() is None  # noqa: E731
        assert out.wait_until(judged_all, timeout=420, alive=alive), (
            worker.log()[-3000:] + second.log()[-2000:]
        )
        out.settle()
    kinds = by_kind(out)
    faithfulness = [orjson.loads(v[0]) for v in kinds["faithfulness"].values()]
    scored = {
        v["input_id"] for v in faithfulness if v["score"] is not None and v["input_id"][0] == "a"
    }
    assert len(scored) == 29, "the test needs 29 scored answers and a deferred one"
    judged = [
        orjson.loads(v[0])
        for v in kinds["faithfulness_llm"].values()
        if orjson.loads(v[0])["input_id"][0] == "a"
    ]
    assert sorted(v["input_id"] for v in judged) == sorted(scored)  # one id per scored answer
    for values in kinds["faithfulness_llm"].values():
        assert len(set(values)) == 1, "duplicates must be byte-identical"
    swapped = next(v for v in judged if v["input_id"] == "a01")
    assert swapped["decision"] == "FAIL"
    assert swapped["evidence"]["reviews"]["kind"] == "faithfulness"
    rubric = [orjson.loads(v[0]) for v in kinds["judge_llm"].values()]
    assert sorted((v["input_id"], v["judge"]) for v in rubric) == [
        (s, j) for s in ("s0", "s1", "s2") for j in ("judge_lock", "twin_lock")
    ]  # one verdict id per summary and framework
    for values in kinds["judge_llm"].values():
        assert len(set(values)) == 1, "duplicates must be byte-identical"
    for v in rubric:
        if v["input_id"] == "s2":  # malformed twice: the spec's hard fail
            assert v["decision"] == "DEFER"
            assert all(m["error"].startswith("judge_output_invalid") for m in v["metrics"].values())
        else:
            assert v["score"] is not None
            assert v["evidence"]["judge_model"]["prompt_version"] == "rubric_llm/1"
    swapped_summary = next(v for v in rubric if v["input_id"] == "s0" and v["judge"] == "twin_lock")
    assert swapped_summary["metrics"]["hallucination"]["overall_score"] == 10.0
    assert len(standin.seen) > 40, "the budget was never reached: nothing tested"
    assert standin.max_in_window(60.0) <= 40, f"{standin.max_in_window(60.0)} in one minute"
    failed = sum(1 for _, outcome in standin.seen if outcome != "ok")
    print(f"{len(standin.seen)} requests ({failed} failed), {len(judged)} judged, "
          f"at most {standin.max_in_window(60.0)} in any minute")  # fmt: skip


@pytest.mark.timeout(600)
def test_a_judge_worker_killed_mid_run_loses_nothing(
    settings_factory, worker_factory, tmp_path
) -> None:
    settings = settings_factory(partitions=2, batch_size=4)  # judge batches of 4: many commits
    path = policy(tmp_path, 6000, concurrency=2)
    standin = StandIn(pattern=FAILING, retry_after=0.2, latency=0.5)
    with serve(standin) as url, OutputCollector(settings) as out:
        nlp = worker_factory(settings.model_copy(update={"tier": "nlp"}), path)
        judge = worker_factory(
            settings.model_copy(update={"tier": "judge"}), path, env=judge_env(url)
        )
        asyncio.run(replay(lines(24), "answers", settings))

        def judged(n: int):
            return lambda: len(by_kind(out).get("faithfulness_llm", {})) >= n

        alive = lambda: nlp.proc.poll() is None and judge.proc.poll() is None  # noqa: E731
        assert out.wait_until(judged(8), timeout=300, alive=alive), judge.log()[-3000:]
        judge.proc.send_signal(signal.SIGKILL)
        judge.proc.wait(10)
        killed_at = out.under_lock(lambda: len(by_kind(out).get("faithfulness_llm", {})))
        again = worker_factory(
            settings.model_copy(update={"tier": "judge"}), path, env=judge_env(url)
        )

        def everything() -> bool:
            done = len(input_ids(out, "faithfulness")) == 24
            return done and input_ids(out, "faithfulness_llm") >= input_ids(
                out, "faithfulness", True
            )

        alive = lambda: again.proc.poll() is None  # noqa: E731
        if not out.wait_until(everything, timeout=300, alive=alive):
            missing = input_ids(out, "faithfulness", True) - input_ids(out, "faithfulness_llm")
            pytest.fail(
                f"{len(missing)} scored answers without a judge verdict ({sorted(missing)[:5]}); "
                f"{len(standin.seen)} requests reached the stand-in\n--- judge (killed):\n"
                f"{judge.log()[-2000:]}\n--- judge (restarted):\n{again.log()[-3000:]}\n"
                f"--- nlp:\n{nlp.log()[-1500:]}"
            )
        out.settle()
    judged = by_kind(out)["faithfulness_llm"]
    assert killed_at < len(judged)
    for values in judged.values():
        assert len(set(values)) == 1, "a re-judged verdict differs from its first delivery"
    duplicates = sum(len(v) - 1 for v in judged.values())
    print(
        f"killed after {killed_at} judge verdicts; {len(judged)} in all; "
        f"{duplicates} delivered twice, byte-identical"
    )
