"""Partitions moving between live workers lose no table state (issue 19).

Two workers share a consumer group; then a third joins, one leaves on SIGTERM and one is
SIGKILLed (a fourth replaces it), while requests whose three answers straddle those moves and
documents whose updates and edges straddle them are replayed. Every group must close
``complete`` with the bytes of the offline evaluation, the document-quality rows must equal
``score-quality`` on the final corpus, and every table's changelog must hold each key in the
partition of that key's records.

Before the fix, the same reproduction gave 9 of 20 consistency verdicts: the changelog hashed
the JSON-quoted key (``"rq-04"``) while the internal topic hashed ``rq-04``, so the worker handed
a group's messages after a rebalance did not recover its state.

A second test upgrades a broker holding layout-1 table state: the worker refuses to start, and
``verdictflow migrate-tables`` moves the open groups so that they complete.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.support.doc_quality_checks import batch_scores, differences, stream_until_agrees
from tests.support.processes import WorkerProcess, run_verdictflow, settings_env
from tests.support.reliability import OutputCollector, copartitioning, wait_ready
from verdictflow.evaluators import variant_groups as vg
from verdictflow.evaluators.policy import load_policy
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import VerdictKind
from verdictflow.samples.doc_corpus import generate as generate_docs
from verdictflow.scoring_jobs.batch.eval_answers import expected_verdicts
from verdictflow.scoring_setup import load_scoring
from verdictflow.settings import Settings
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.fatal import EXIT_RESTART_ME
from verdictflow.streams.replay import replay
from verdictflow.streams.table_migration import changelog, legacy_changelog
from verdictflow.streams.topics import CONSISTENCY_TABLE, DOC_QUALITY_TABLE, LAYOUT1_TABLES

pytestmark = pytest.mark.broker

REQUESTS = 20
ANSWERS_PER_REQUEST = 3
POLICY = "consistency:\n  window_seconds: 900\n"  # only a complete group closes here


def request_lines() -> list[list[bytes]]:
    """``lines[i]`` is the i-th answer of every request (RAG-shaped, with two contexts)."""
    cities = ["Paris", "Lyon", "Nice", "Lille", "Nantes"]
    phases: list[list[bytes]] = [[] for _ in range(ANSWERS_PER_REQUEST)]
    for r in range(REQUESTS):
        city = cities[r % len(cities)]
        for i in range(ANSWERS_PER_REQUEST):
            answer = [
                f"{city} hosts the museum number {r}, opened in {1900 + r}.",
                f"The museum number {r} is in {city}; it opened in {1900 + r}.",
                f"Museum {r} opened in {1900 + r} in the city of {city}.",
            ][i]
            event = {
                "id": f"rq-{r:02d}-a{i}",
                "request_id": f"rq-{r:02d}",
                "expected_variants": ANSWERS_PER_REQUEST,
                "query": f"Where and when did museum {r} open?",
                "answer": answer,
                "contexts": [
                    f"Museum {r} opened its doors in {1900 + r}. It is located in {city}.",
                    f"{city} is a city in France with many museums and a long history.",
                ],
            }
            phases[i].append(orjson.dumps(event))
    return phases


def thirds(lines: list[bytes]) -> list[list[bytes]]:
    """Three consecutive slices: each key's records keep their order across the phases."""
    n = -(-len(lines) // 3)
    return [lines[i * n : (i + 1) * n] for i in range(3)]


class Fleet:
    """Named workers of one consumer group, each with its own data directory; a worker that
    exits with code 75 (asks to resume from its commits) is restarted, as a supervisor would."""

    def __init__(self, start: Callable[..., WorkerProcess], settings: Settings, tmp: Path):
        self.start_worker, self.settings, self.tmp = start, settings, tmp
        self.policy = tmp / "policy.yaml"
        self.policy.write_text(POLICY)
        self.workers: dict[str, WorkerProcess] = {}
        self.restarts = 0

    def start(self, name: str) -> WorkerProcess:
        own = self.settings.model_copy(update={"data_dir": self.tmp / name})
        self.workers[name] = self.start_worker(own, policy=self.policy)
        return self.workers[name]

    def alive(self) -> bool:
        for name, worker in list(self.workers.items()):
            if worker.proc.poll() == EXIT_RESTART_ME:
                self.restarts += 1
                self.start(name)
        return any(w.proc.poll() is None for w in self.workers.values())

    def logs(self) -> str:
        return "\n".join(f"--- {n}\n{w.log()[-1500:]}" for n, w in self.workers.items())


def consistency_of(out: OutputCollector) -> dict[str, bytes]:
    return {
        vid: values[0]
        for vid, values in out.verdicts.items()
        if orjson.loads(values[0])["kind"] == VerdictKind.CONSISTENCY.value
    }


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_groups_and_documents_survive_join_leave_and_kill(
    settings_factory, worker_factory, tmp_path
):
    settings = settings_factory(batch_size=32)
    fleet = Fleet(worker_factory, settings, tmp_path)
    phases = request_lines()
    scoring = load_scoring(load_policy(fleet.policy))
    expected = expected_verdicts([line for phase in phases for line in phase], scoring)
    docs = generate_docs(120, seed=11)
    batch = batch_scores(docs, tmp_path)
    doc_thirds = thirds(docs.doc_lines)
    edge_thirds = thirds(docs.edge_lines)

    def feed(phase: int) -> None:
        asyncio.run(replay(phases[phase], "answers", settings))
        asyncio.run(replay(doc_thirds[phase], "docs", settings))
        asyncio.run(replay(edge_thirds[phase], "doc-edges", settings))

    def seen(out: OutputCollector, n: int) -> bool:
        return len(out.verdicts) >= n

    with OutputCollector(settings) as out:
        for name in ("w1", "w2"):
            fleet.start(name)
        for name in ("w1", "w2"):
            wait_ready(fleet.workers[name])
        feed(0)  # the first answer of every request: 20 groups open, spread over both workers
        per_answer = 4 * REQUESTS  # groundedness, relevance, completeness, hallucination
        assert out.wait_until(lambda: seen(out, per_answer), 240, fleet.alive), fleet.logs()

        wait_ready(fleet.start("w3"))  # joins: partitions move between live workers
        fleet.workers["w1"].proc.send_signal(signal.SIGTERM)  # leaves cleanly
        fleet.workers["w1"].proc.wait(60)
        del fleet.workers["w1"]
        feed(1)
        assert out.wait_until(lambda: seen(out, 2 * per_answer), 240, fleet.alive), fleet.logs()

        fleet.workers["w2"].proc.send_signal(signal.SIGKILL)  # dies with uncommitted work
        fleet.workers["w2"].proc.wait(10)
        del fleet.workers["w2"]
        wait_ready(fleet.start("w4"))
        feed(2)
        done = lambda: out.verdicts.keys() >= expected.keys()  # noqa: E731
        complete = out.wait_until(done, 300, fleet.alive)
        groups = consistency_of(out)
        assert complete, (
            f"{len(groups)} of {REQUESTS} consistency verdicts, "
            f"{len(expected.keys() - out.verdicts.keys())} verdicts missing\n{fleet.logs()}"
        )
        out.settle()
        stream = stream_until_agrees(settings, batch, fleet.alive)

    assert len(groups) == REQUESTS
    assert all(b'"closed_by":"complete"' in v for v in groups.values())
    differing = [vid for vid, values in out.verdicts.items() if values[0] != expected[vid]]
    assert not differing, f"{len(differing)} verdicts differ from the offline evaluation"
    assert not out.verdicts.keys() - expected.keys()
    assert all(len(set(values)) == 1 for values in out.verdicts.values())
    problems = differences(stream, batch)
    assert not problems, "\n".join(problems[:10])
    checked, misplaced = copartitioning(settings)
    assert checked[CONSISTENCY_TABLE] == REQUESTS
    assert checked[DOC_QUALITY_TABLE] >= len(docs.final_docs)
    assert not misplaced, "\n".join(misplaced[:10])
    print(
        f"{sum(len(p) for p in phases)} answers, {len(docs.doc_lines)} doc updates and "
        f"{len(docs.edge_lines)} edges over join/SIGTERM/SIGKILL: {len(groups)} of {REQUESTS} "
        f"groups complete and byte-identical, {len(stream)} quality rows equal score-quality, "
        f"{sum(checked.values())} table keys co-partitioned, {fleet.restarts} restarts"
    )


async def write_legacy_groups(settings: Settings, lines: list[bytes], now: float) -> None:
    """Table state as verdictflow before layout 2 left it: one open group per first answer,
    JSON-quoted keys, in the partition the producer's partitioner gave the quoted key."""
    topic = legacy_changelog(settings.app_id, CONSISTENCY_TABLE)
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap_servers)
    await admin.start()
    await admin.create_topics([NewTopic(topic, settings.partitions, 1)])
    await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=settings.bootstrap_servers, max_batch_size=1)
    await producer.start()
    try:
        for line in lines:
            event = AnswerEvent.model_validate_json(line)
            state = vg.add_event(vg.new_group(event, deadline=now + 900), event, 64)
            await producer.send_and_wait(
                topic, orjson.dumps(state), key=orjson.dumps(event.group_key)
            )
    finally:
        await producer.stop()


@pytest.mark.timeout(300)
def test_upgrade_from_layout_1_migrates_open_groups(settings_factory, worker_factory, tmp_path):
    settings = settings_factory(batch_size=32)
    fleet = Fleet(worker_factory, settings, tmp_path)
    phases = request_lines()
    scoring = load_scoring(load_policy(fleet.policy))
    expected = {
        vid: value
        for vid, value in expected_verdicts([ln for p in phases for ln in p], scoring).items()
        if b'"kind":"consistency"' in value
    }
    asyncio.run(ensure_topics(settings))  # as the old worker had declared them
    asyncio.run(write_legacy_groups(settings, phases[0], time.time()))

    refused = fleet.start("w1")
    assert refused.proc.wait(120) == 2
    assert "migrate-tables" in refused.log(), refused.log()[-2000:]

    env = settings_env(settings)
    migrated = run_verdictflow("migrate-tables", env=env)
    assert migrated.returncode == 0, migrated.stderr
    reports = {r["table"]: r for r in map(orjson.loads, migrated.stdout.splitlines())}
    assert reports[CONSISTENCY_TABLE]["status"] == "migrated"
    assert reports[CONSISTENCY_TABLE]["keys_written"] == REQUESTS
    assert reports[CONSISTENCY_TABLE]["keys_moved"] > 0  # the bug this migrates away from
    assert set(reports) == set(LAYOUT1_TABLES)
    again = run_verdictflow("migrate-tables", env=env)  # idempotent: never over newer state
    assert {r["status"] for r in map(orjson.loads, again.stdout.splitlines())} == {"already_done"}
    assert changelog(settings.app_id, CONSISTENCY_TABLE) in again.stdout

    with OutputCollector(settings) as out:
        wait_ready(fleet.start("w1"))
        asyncio.run(replay(phases[1] + phases[2], "answers", settings))
        ok = out.wait_until(lambda: len(consistency_of(out)) >= REQUESTS, 240, fleet.alive)
        groups = consistency_of(out)
        assert ok, f"{len(groups)} of {REQUESTS} groups closed\n{fleet.logs()}"
    assert groups == expected  # all three answers, the first one from the migrated state
