"""The console as an operator sees it: a real broker, worker, API and console, the sample traffic
replayed, and the page read in headless Chromium.

What a person would check: the verdict counts per kind equal what was scored; the failing
answer "It is Lyon, the capital of France." shows "Lyon" highlighted as unsupported, with the
evidence on demand; the malformed sample lines appear as dead letters; the search box shows
score, quality and final_score; a drifted replay raises an alert on the page.

``VERDICTFLOW_CONSOLE_SCREENSHOT=path.png`` saves a screenshot of the page at the end.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from tests.support import browser
from tests.support.drift import calibrated_policy, produce, verdicts
from tests.support.processes import WorkerProcess, settings_env
from verdictflow.dev import sample_path
from verdictflow.dev_servers import start_server, stop_server
from verdictflow.evaluators.policy import load_policy
from verdictflow.models.verdicts import VerdictKind
from verdictflow.monitoring.drift_alerts import run_drift
from verdictflow.scoring_jobs.batch.eval_answers import expected_verdicts
from verdictflow.scoring_setup import load_scoring
from verdictflow.settings import Settings
from verdictflow.streams.replay import read_lines, replay
from verdictflow.streams.topics import verdict_topic

pytestmark = [
    pytest.mark.broker,
    pytest.mark.browser,
    pytest.mark.skipif(browser.missing() is not None, reason=str(browser.missing())),
]

DOCS = [
    {"doc_id": "wiki-france", "text": "France's capital and largest city is Paris, on the Seine."},
    {"doc_id": "wiki-lyon", "text": "Lyon is the third-largest city of France, on the Rhone."},
    {"doc_id": "wiki-moon", "text": "Neil Armstrong was the first person to walk on the Moon."},
]


def wait_for(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            result = check()
        except httpx.HTTPError:
            result = None
        if result:
            return result
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def stack(
    settings_factory: Callable[..., Settings],
    worker_factory: Callable[..., WorkerProcess],
    tmp_path: Path,
) -> Iterator[tuple[Settings, str]]:
    """Worker, API and console on a fresh topic prefix; yields the settings and console URL."""
    settings = settings_factory()
    env = {**settings_env(settings), "VERDICTFLOW_API_EMBEDDER": "hashing"}
    env["VERDICTFLOW_QUALITY_EMBEDDER"] = "hashing"
    worker_factory(settings)
    procs = []
    api, api_url = start_server(["api"], env, tmp_path / "api.log")
    procs.append(api)
    console, url = start_server(
        ["console", "--from-beginning", "--api-url", api_url], env, tmp_path / "console.log"
    )
    procs.append(console)
    try:
        wait_for(lambda: httpx.get(f"{url}/healthz").json()["ready"], 180, "the console")
        yield settings, url
    finally:
        for proc in procs:
            stop_server(proc)


@pytest.mark.timeout(600)
def test_an_operator_sees_counts_the_lyon_span_dead_letters_search_and_an_alert(
    stack: tuple[Settings, str],
) -> None:
    settings, url = stack
    lines = read_lines(sample_path())
    expected = expected_verdicts(lines, load_scoring(load_policy(None)))
    by_kind = Counter(orjson.loads(v)["kind"] for v in expected.values())
    asyncio.run(replay([orjson.dumps(d) for d in DOCS], "docs", settings))
    asyncio.run(replay(lines, "answers", settings))

    def all_scored() -> bool:
        stats = httpx.get(f"{url}/api/stats").json()
        return sum(k["total"]["n"] for k in stats["kinds"]) >= len(expected)

    wait_for(all_scored, 300, "every sample verdict at the console")

    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with browser.headless_chromium() as page:
        page.get(url + "/")
        # the console redraws cards and chips on every stats event: a read that races a redraw
        # finds a detached element, so every wait retries it instead of failing
        wait = WebDriverWait(page, 30, ignored_exceptions=(StaleElementReferenceException,))
        # counts per kind, as the cards show them
        for kind, n in by_kind.items():
            wait.until(
                lambda d, k=kind, n=n: (
                    d.find_element(By.CSS_SELECTOR, f"#kind-{k} .n-total").text == str(n)
                )
            )
        # the failing answer, "Lyon" highlighted as unsupported
        row_css = '.failure[data-kind="hallucination"][data-input-id="capital-3"]'
        row = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, row_css))
        assert (
            "It is Lyon, the capital of France." in row.find_element(By.CSS_SELECTOR, ".text").text
        )
        marks = row.find_elements(By.CSS_SELECTOR, "mark.unsupported")
        assert [m.text for m in marks] == ["Lyon"]
        assert "not found in any context" in marks[0].get_attribute("title")
        supported = row.find_element(By.CSS_SELECTOR, "mark.supported")
        assert "France's capital" in supported.get_attribute("title") or "France" in supported.text
        marks[0].click()
        assert "entity PERSON" in row.find_element(By.CSS_SELECTOR, ".detail").text
        row.find_element(By.CSS_SELECTOR, ".meta button").click()
        evidence = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, f"{row_css} pre.evidence"))
        assert '"unsupported_count": 2' in evidence.text

        # the two malformed sample lines, counted by their chips (redrawn with every stats event)
        def dead_letter_chips(d: Any) -> int:
            chips = d.find_elements(By.CSS_SELECTOR, "#dead-letter-codes .chip")
            return sum(int(c.text.rsplit(": ", 1)[1]) for c in chips)

        wait.until(lambda d: dead_letter_chips(d) == 2)
        # search through the API: score, quality and final_score per hit
        wait.until(lambda d: "documents" in d.find_element(By.ID, "quality-summary").text)
        page.find_element(By.ID, "search-q").send_keys("capital of France")
        page.find_element(By.CSS_SELECTOR, "#search-form button").click()
        hit = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#search-results tr.hit"))
        cells = [c.text for c in hit.find_elements(By.TAG_NAME, "td")]
        assert cells[1] in {d["doc_id"] for d in DOCS}
        assert all(float(x) >= 0 for x in cells[2:5])
        # a drifted replay of groundedness verdicts raises an alert, shown without a reload
        drifted = verdicts(VerdictKind.GROUNDEDNESS, shift=True)
        asyncio.run(produce(settings, {verdict_topic(VerdictKind.GROUNDEDNESS): drifted}))
        asyncio.run(
            run_drift(settings, calibrated_policy(), window=50, from_beginning=True, timeout=3)
        )
        alert = wait.until(
            lambda d: d.find_element(By.CSS_SELECTOR, '.alert-row[data-kind="groundedness"]')
        )
        assert "groundedness drifted" in alert.text
        shot = os.environ.get("VERDICTFLOW_CONSOLE_SCREENSHOT")
        if shot:
            page.save_screenshot(shot)
