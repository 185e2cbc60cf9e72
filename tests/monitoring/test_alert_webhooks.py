"""``verdictflow notify`` (issue 44, alerts out): a drift alert delivered twice on ``alerts`` is
posted once to each webhook, in its shape, through a local receiver that fails its first two
attempts (a 500, then a 429 with ``Retry-After``); a webhook that always fails gets its tries
and a dead letter; a record that is not an alert is dead-lettered; a second notifier (a new
consumer group reading the topic again) posts nothing, as the log says all is settled; and no
webhook URL, whose path is its secret, reaches the logs."""

from __future__ import annotations

import asyncio
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import orjson
import pytest

from verdictflow.models.alerts import DriftAlert
from verdictflow.models.codec import encode
from verdictflow.monitoring.alert_messages import (
    WebhookConfigError,
    body,
    parse_webhooks,
    summary,
)
from verdictflow.monitoring.alert_webhooks import RetryPolicy, run_notifier
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.replay import make_producer
from verdictflow.streams.topic_reader import read_whole_topic
from verdictflow.streams.topics import ALERTS, DEAD_LETTERS

SECRET = "T000/B000/XXXXsecretXXXX"
ALERT = DriftAlert(
    alert_id="a" * 32, kind="faithfulness", model="m1", tenant="t1", value=0.31,
    enter_threshold=0.25, exit_threshold=0.1, window_index=7, window_size=200,
    window_mean=0.52, deferred_share=0.0, reference_digest="d" * 64,
    reference_threshold=0.6, first_event_ts=1.0, event_ts=2.0,
)  # fmt: skip


class Receiver:
    """A local webhook receiver: per path, the statuses to answer in turn (then 200)."""

    def __init__(self, script: dict[str, list[tuple[int, dict[str, str]]]]) -> None:
        self.script = {path: list(replies) for path, replies in script.items()}
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                data = self.rfile.read(int(self.headers.get("content-length", 0)))
                receiver.requests.append((self.path, dict(self.headers.items()), data))
                replies = receiver.script.get(self.path, [])
                status, headers = replies.pop(0) if replies else (200, {})
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def posts(self, path: str) -> list[tuple[dict[str, str], bytes]]:
        return [(h, b) for p, h, b in self.requests if p == path]


def test_webhooks_are_read_from_their_setting_and_errors_never_quote_a_url() -> None:
    hooks = parse_webhooks(
        f"slack=https://hooks.slack.com/services/{SECRET}, json:pager=https://ops.example/h?k=1"
    )
    assert [(h.name, h.shape) for h in hooks] == [("slack-1", "slack"), ("pager", "json")]
    assert hooks[0].where == "slack-1 (https://hooks.slack.com)"
    assert SECRET not in repr(hooks)
    for bad in (f"teams=https://x/{SECRET}", f"json=ftp://x/{SECRET}", " , "):
        with pytest.raises(WebhookConfigError) as caught:
            parse_webhooks(bad)
        assert SECRET not in str(caught.value)


def test_bodies_in_the_json_and_slack_shapes() -> None:
    alert = orjson.loads(encode(ALERT))
    line = summary(alert)
    assert line.startswith("verdictflow score_drift: faithfulness (model m1, tenant t1)")
    assert "PSI 0.310 over 200 verdicts" in line
    slack = orjson.loads(body(alert, "slack"))
    assert slack["text"] == line
    assert slack["blocks"][0] == {"type": "section", "text": {"type": "mrkdwn", "text": line}}
    generic = orjson.loads(body(alert, "json"))
    assert generic == {"source": "verdictflow", "summary": line, "alert": alert}


@pytest.mark.broker
def test_each_alert_reaches_each_webhook_once_through_failures_and_restarts(
    settings_factory, caplog
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, httpx's included: no URL may show
    receiver = Receiver({
        f"/services/{SECRET}": [(500, {}), (429, {"retry-after": "0"})],
        "/json": [(503, {})],
        "/down": [(500, {})] * 10,
    })  # fmt: skip
    hooks = parse_webhooks(
        f"slack={receiver.url}/services/{SECRET},json={receiver.url}/json,"
        f"json:down={receiver.url}/down"
    )
    settings = settings_factory()
    policy = RetryPolicy(attempts=3, first_wait=0.05, max_wait=0.2, request_timeout=5)

    async def produce() -> None:
        await ensure_topics(settings, [ALERTS])
        producer = make_producer(settings)
        await producer.start()
        try:
            for value in (encode(ALERT), encode(ALERT), b"{not an alert"):  # the alert twice
                await producer.send_and_wait(settings.topic_prefix + ALERTS, value, key=b"k")
        finally:
            await producer.stop()

    asyncio.run(produce())
    stats = asyncio.run(
        run_notifier(settings, hooks, policy=policy, token="tok", from_beginning=True,
                     idle_timeout=3)
    )  # fmt: skip
    slack = receiver.posts(f"/services/{SECRET}")
    assert len(slack) == 3  # 500, 429, then delivered; never again
    assert orjson.loads(slack[-1][1])["text"].startswith("verdictflow score_drift")
    assert "authorization" not in {k.lower() for k in slack[-1][0]}  # Slack gets no token
    generic = receiver.posts("/json")
    assert len(generic) == 2
    headers = {k.lower(): v for k, v in generic[-1][0].items()}
    assert headers["idempotency-key"] == ALERT.alert_id
    assert headers["authorization"] == "Bearer tok"
    assert orjson.loads(generic[-1][1])["alert"]["alert_id"] == ALERT.alert_id
    assert len(receiver.posts("/down")) == 3  # its tries, then a dead letter
    assert (stats.delivered, stats.dead_lettered, stats.invalid) == (2, 1, 1)
    assert stats.already_settled == 3  # the second copy of the alert, for each webhook

    letters = [
        orjson.loads(v)
        for _, _, v in asyncio.run(read_whole_topic(settings, settings.topic_prefix + DEAD_LETTERS))
        if v
    ]
    assert sorted(d["error_code"] for d in letters) == ["not_an_alert", "webhook_failed"]
    failed = next(d for d in letters if d["error_code"] == "webhook_failed")
    assert "down (http://127.0.0.1)" in failed["error"]
    assert "HTTP 500" in failed["error"]

    # A second notifier with a group of its own reads every alert again: all settled already.
    again = settings.model_copy(update={"app_id": settings.app_id + "-2"})
    before = len(receiver.requests)
    stats = asyncio.run(
        run_notifier(again, hooks, policy=policy, from_beginning=True, idle_timeout=3)
    )
    assert len(receiver.requests) == before
    assert stats.already_settled == 6

    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "notify: alert" in logged
    assert SECRET not in logged
    assert "tok" not in logged.replace("token", "")
    receiver.server.shutdown()
