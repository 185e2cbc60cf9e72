"""The broker restarts under a running worker and API: both recover without manual action.

The embedded broker keeps its data in memory, so a restart empties it: this checks recovery of
service, not of data (data survival across broker restarts is Kafka's job). Before the restart,
answers get verdicts and documents are searchable; while the broker is down, /search keeps
answering from the API's last state; after it comes back on the same port, the worker (same
process, never restarted) declares the registry's topics again, new answers get their verdicts,
and the API follows the new documents.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import httpx
import orjson
import pytest
from aiokafka.admin import AIOKafkaAdminClient

from tests.support.processes import settings_env
from tests.support.reliability import OutputCollector, expected_verdict_ids
from verdictflow.evaluators.policy import load_policy
from verdictflow.samples.traffic import generate
from verdictflow.scoring_setup import load_scoring
from verdictflow.settings import Settings
from verdictflow.streams.broker import EmbeddedBroker, free_port
from verdictflow.streams.replay import replay
from verdictflow.streams.topics import ALL_TOPICS, full_name

pytestmark = pytest.mark.broker

#: Bounds on hangs only; under load every step takes a few seconds at most.
STEP_TIMEOUT = 120.0


def doc_lines(names: list[str]) -> list[bytes]:
    return [
        orjson.dumps({"doc_id": n, "text": f"The {n} ocean facts: tides, whales, waves.", "ts": i})
        for i, n in enumerate(names)
    ]


def wait_for(condition, what: str, timeout: float = STEP_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout:.0f} s: {what}"
        time.sleep(0.25)


def search_ids(api_url: str) -> list[str] | None:
    """Doc ids /search returns for a fixed query, or None when it does not answer 200."""
    try:
        got = httpx.post(f"{api_url}/search", json={"q": "ocean facts", "top_k": 10}, timeout=5)
    except httpx.HTTPError:
        return None
    if got.status_code != 200:
        return None
    return sorted(item["doc_id"] for item in got.json()["items"])


def registry_topics_present(settings: Settings) -> bool:
    async def names() -> set[str]:
        admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap_servers)
        await admin.start()
        try:
            return set(await admin.list_topics())
        finally:
            await admin.close()

    try:
        present = asyncio.run(names())
    except Exception:  # the broker is still starting
        return False
    return {full_name(t, settings.topic_prefix) for t in ALL_TOPICS} <= present


def start_api(settings: Settings, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [sys.executable, "-m", "verdictflow", "api", "--port", str(port)]
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, env=settings_env(settings), stdout=out, stderr=out)
    return proc, f"http://127.0.0.1:{port}"


@pytest.mark.timeout(600)
def test_worker_and_api_recover_when_the_broker_restarts(worker_factory, tmp_path):
    broker = EmbeddedBroker(log_path=tmp_path / "tansu.log").start()
    api = None
    try:
        settings = Settings(
            broker=broker.url,
            topic_prefix="restart.",
            app_id="vf-restart",
            data_dir=tmp_path / "data",
            topic_check_seconds=1.0,
        )
        digest = load_scoring(load_policy(None)).ctx.config_digest
        before, after = generate(40, seed=1).lines, generate(40, seed=2).lines
        worker = worker_factory(settings)
        api, api_url = start_api(settings, tmp_path / "api.log")

        asyncio.run(replay(doc_lines(["d-before-1", "d-before-2"]), "docs", settings))
        asyncio.run(replay(before, "answers", settings))
        with OutputCollector(settings) as out:
            want = expected_verdict_ids(before, digest)
            assert out.wait_until(lambda: out.verdicts.keys() >= want, STEP_TIMEOUT), worker.log()
        wait_for(lambda: search_ids(api_url) == ["d-before-1", "d-before-2"], "docs searchable")

        broker.stop()
        down_since = time.monotonic()
        for _ in range(3):  # the API keeps serving its last state while the broker is away
            assert search_ids(api_url) == ["d-before-1", "d-before-2"]
            time.sleep(1)
        assert worker.proc.poll() is None, worker.log()[-3000:]
        broker.start()
        print(f"broker down for {time.monotonic() - down_since:.1f} s, restarted empty")

        # Nothing but the worker declares the topics here: tail, replay and the API are idle.
        wait_for(lambda: registry_topics_present(settings), "topics declared again")
        # The guard logs right after it declared them: the topics can be seen first.
        wait_for(lambda: "declared them again" in worker.log(), "the guard's log line")
        asyncio.run(replay(doc_lines(["d-after"]), "docs", settings))
        asyncio.run(replay(after, "answers", settings))
        with OutputCollector(settings) as out:
            want = expected_verdict_ids(after, digest)
            got = out.wait_until(
                lambda: out.verdicts.keys() >= want,
                STEP_TIMEOUT,
                alive=lambda: worker.proc.poll() is None,
            )
            assert got, worker.log()[-3000:]
            assert not out.verdicts.keys() - want, "verdicts from before the restart?"
        wait_for(lambda: "d-after" in (search_ids(api_url) or []), "the API follows the new topic")
        assert worker.proc.poll() is None, "the worker was restarted, not recovered"
        assert api.poll() is None
    finally:
        if api is not None:
            api.terminate()
            api.wait(15)
        broker.stop()
