"""The review queue without a broker (issue 44): the sample's real answers and verdicts fed to
the console state, each input queued once however often its verdicts are delivered, labels
replacing a reviewer's own, the queue restored from its stored entries, who may label, and
agreement on ``/metrics`` against a hand computation."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import orjson
import pytest
from asgi_lifespan import LifespanManager

from verdictflow.console.app import ConsoleOptions, create_console_app
from verdictflow.console.review_queue import ReviewError, ReviewQueue
from verdictflow.console.state import ConsoleState
from verdictflow.console.users import UsersFileError, add_user, load_users
from verdictflow.evaluators.review_policy import ReviewPolicy, ReviewSample, SampleRule
from verdictflow.settings import Settings

EVERY_ANSWER = ReviewPolicy(
    sample=ReviewSample(kinds={"groundedness": SampleRule(fail=True, pass_sample=1.0)})
)


def fed(lines: list[bytes], verdicts: list[bytes], policy: ReviewPolicy) -> ConsoleState:
    state = ConsoleState("vf.", review=ReviewQueue(policy))
    now = time.time()
    for raw in verdicts:  # verdicts before their answers: queued when the text arrives
        state.ingest(f"vf.verdicts.{orjson.loads(raw)['kind']}", raw, now)
    for line in lines:
        state.ingest("vf.answers", line, now)
    return state


def answer_ids(lines: list[bytes]) -> set[str]:
    ids = set()
    for line in lines:
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(data, dict) and isinstance(data.get("id"), str) and "answer" in data:
            ids.add(data["id"])
    return ids


def test_each_input_is_queued_once_with_every_verdict_it_has(
    sample_lines: list[bytes], sample_verdicts: list[bytes]
) -> None:
    state = fed(sample_lines, sample_verdicts, EVERY_ANSWER)
    queue = state.review
    decided = [orjson.loads(v) for v in sample_verdicts]
    scored = {v["input_id"] for v in decided  # a DEFER is neither a FAIL nor a PASS sampled
              if v["kind"] == "groundedness" and v["decision"] != "DEFER"}  # fmt: skip
    assert set(queue.entries) == scored
    assert scored <= answer_ids(sample_lines)
    written = len(queue.outbox)
    for raw in sample_verdicts:  # delivered again: nothing new to queue or write
        state.ingest(f"vf.verdicts.{orjson.loads(raw)['kind']}", raw, time.time())
    assert len(queue.outbox) == written
    assert set(queue.entries) == scored
    entry = queue.entries["capital-3"]
    kinds = {v.kind for v in entry.verdicts}
    assert {"groundedness", "hallucination", "faithfulness"} <= kinds
    view = queue.view(queue.order().index("capital-3"), "alice")
    marked = [s["text"] for s in view["answer"]["segments"] if s["status"] == "unsupported"]
    assert "Lyon" in marked
    assert view["contexts"]
    assert view["query"]

    # another console restores the queue from the entries as stored: same order, no echo
    restored = ReviewQueue(EVERY_ANSWER)
    for stored in list(queue.outbox):
        restored.stored_entry(stored.model_dump(mode="json"))
    assert restored.order() == queue.order()
    assert not restored.outbox


def test_labels_replace_a_reviewers_own_and_progress_resumes(
    sample_lines: list[bytes], sample_verdicts: list[bytes]
) -> None:
    queue = fed(sample_lines, sample_verdicts, EVERY_ANSWER).review
    clock = iter(range(1000, 2000))
    queue.clock = lambda: float(next(clock))
    first = queue.entries[queue.order()[0]]
    assert queue.progress("alice") == {"total": len(queue.entries), "done": 0, "position": 0}
    for v in first.verdicts:
        made = queue.make_label(reviewer="alice", role="reviewer", input_id=first.input_id,
                                verdict_id=v.verdict_id, expected="pass")  # fmt: skip
        queue.stored_label(made.model_dump(mode="json"))
    assert queue.progress("alice")["position"] == 1
    assert queue.progress("bob")["position"] == 0
    v = first.verdicts[0]
    again = queue.make_label(
        reviewer="alice", role="reviewer", input_id=first.input_id, verdict_id=v.verdict_id,
        expected="fail", note="on second look",
    )  # fmt: skip
    queue.stored_label(again.model_dump(mode="json"))
    mine = queue.labels_of(first.input_id, "alice")
    assert mine[v.kind].expected == "fail"
    assert mine[v.kind].note == "on second look"
    assert len(queue.labels) == len(first.verdicts)
    defer = next((x for e in queue.entries.values() for x in e.verdicts
                  if x.decision == "DEFER"), None)  # fmt: skip
    if defer is not None:
        owner = next(e for e in queue.entries.values() if defer in e.verdicts)
        with pytest.raises(ReviewError, match="DEFER decided nothing"):
            queue.make_label(reviewer="alice", role="reviewer", input_id=owner.input_id,
                             verdict_id=defer.verdict_id, judgement="right")  # fmt: skip
    with pytest.raises(ReviewError) as unknown:
        queue.make_label(reviewer="alice", role="reviewer", input_id="nope", verdict_id="x",
                         expected="pass")  # fmt: skip
    assert unknown.value.status == 404


def test_the_users_file_holds_hashes_and_refuses_what_is_wrong(tmp_path: Path) -> None:
    path = tmp_path / "users.yaml"
    token = add_user(path, "alice", "reviewer")
    assert token not in path.read_text()
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    users = load_users(path)
    assert users.by_token(token.encode()).name == "alice"  # type: ignore[union-attr]
    assert users.by_token(b"guess") is None
    path.write_text("users:\n  bad name: {role: reviewer, token_sha256: abc}\n")
    with pytest.raises(UsersFileError, match="not a user name"):
        load_users(path)


@pytest.fixture
async def review_client(
    tmp_path: Path, sample_lines: list[bytes], sample_verdicts: list[bytes]
) -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, str], ConsoleState]]:
    path = tmp_path / "users.yaml"
    tokens = {name: add_user(path, name, role)
              for name, role in (("alice", "reviewer"), ("victor", "viewer"))}  # fmt: skip
    state = fed(sample_lines, sample_verdicts, EVERY_ANSWER)
    app = create_console_app(
        Settings(), ConsoleOptions(users=load_users(path), review=EVERY_ANSWER),
        state=state, follow=False,
    )  # fmt: skip
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://console") as c:
            yield c, tokens, state


async def test_who_may_label_and_agreement_on_metrics(
    review_client: tuple[httpx.AsyncClient, dict[str, str], ConsoleState],
) -> None:
    client, tokens, state = review_client
    as_alice = {"authorization": f"Bearer {tokens['alice']}"}
    as_victor = {"authorization": f"Bearer {tokens['victor']}"}
    assert (await client.get("/api/review")).status_code == 401
    me = (await client.get("/api/review", headers=as_victor)).json()
    assert me["me"] == {"name": "victor", "role": "viewer"}
    assert not me["may_label"]
    entry = (await client.get("/api/review/entries/0", headers=as_victor)).json()
    body = {"input_id": entry["input_id"], "verdict_id": entry["verdicts"][0]["verdict_id"],
            "expected": "pass"}  # fmt: skip
    refused = await client.post("/api/review/labels", json=body, headers=as_victor)
    assert refused.status_code == 403
    assert "viewer cannot label" in refused.json()["detail"]
    # alice may, but this console has no broker: the label is refused, never lost silently
    away = await client.post("/api/review/labels", json=body, headers=as_alice)
    assert away.status_code == 503
    assert away.json()["error"] == "broker_unavailable"

    # five labels as the topic would bring them: faithfulness PASS/pass, PASS/fail, FAIL/fail
    # by alice; PASS/pass, FAIL/pass by bob on the same inputs -> agreement 3/5
    queue = state.review
    picks = [(e.input_id, v) for e in queue.entries.values() for v in e.verdicts
             if v.kind == "faithfulness" and v.decision in ("PASS", "FAIL")]  # fmt: skip
    passes = [p for p in picks if p[1].decision == "PASS"][:2]
    fails = [p for p in picks if p[1].decision == "FAIL"][:1]
    assert len(passes) == 2
    assert len(fails) == 1
    given = [("alice", passes[0], "pass"), ("alice", passes[1], "fail"),
             ("alice", fails[0], "fail"), ("bob", passes[0], "pass"),
             ("bob", fails[0], "pass")]  # fmt: skip
    for who, (input_id, v), expected in given:
        made = queue.make_label(reviewer=who, role="reviewer", input_id=input_id,
                                verdict_id=v.verdict_id, expected=expected)  # fmt: skip
        state.ingest("vf.labels", orjson.dumps(made.model_dump(mode="json")), time.time())
    text = (await client.get("/metrics", headers=as_alice)).text
    assert (await client.get("/metrics")).status_code == 401

    def gauge(name: str, **labels: str) -> float:
        inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        found = re.search(rf"^{name}\{{{re.escape(inner)}\}} (\S+)$", text, re.M)
        assert found, f"{name}{{{inner}}} not in /metrics"
        return float(found.group(1))

    assert gauge("vf_review_labels", kind="faithfulness", tier="nlp") == 5
    assert gauge("vf_review_agreement", kind="faithfulness", tier="nlp") == pytest.approx(3 / 5)
    assert gauge("vf_review_confusion", kind="faithfulness", tier="nlp", decision="FAIL",
                 expected="pass") == 1  # fmt: skip
    # alice and bob on two inputs: alice pass, fail; bob pass, pass. p_o = 1/2;
    # p_e = (1/2)(1) + (1/2)(0) = 1/2 -> kappa 0
    assert gauge("vf_review_kappa", kind="faithfulness", reviewer_a="alice",
                 reviewer_b="bob") == pytest.approx(0.0)  # fmt: skip
    panel = (await client.get("/api/review/agreement", headers=as_victor)).json()
    assert panel["kinds"][0]["confusion"] == {"FAIL/fail": 1, "FAIL/pass": 1, "PASS/fail": 1,
                                              "PASS/pass": 2}  # fmt: skip


def test_a_restarting_console_queues_nothing_before_the_stored_queue_is_read(
    sample_lines: list[bytes], sample_verdicts: list[bytes]
) -> None:
    first = fed(sample_lines, sample_verdicts, EVERY_ANSWER).review
    stored = [e.model_dump(mode="json") for e in first.outbox]
    restarting = ConsoleState("vf.", review=ReviewQueue(EVERY_ANSWER, restored=False))
    now = time.time()
    for raw in sample_verdicts:  # replayed from the beginning, before the stored entries
        restarting.ingest(f"vf.verdicts.{orjson.loads(raw)['kind']}", raw, now)
    for line in sample_lines:
        restarting.ingest("vf.answers", line, now)
    queue = restarting.review
    assert queue.entries == {}
    for entry in stored[: len(stored) // 2]:
        restarting.ingest("vf.internal.review-queue", orjson.dumps(entry), now)
    queue.restore_done()
    assert queue.order() == first.order()  # the stored queue times, not the restart's
