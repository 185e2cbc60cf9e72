"""``verdictflow notify``: every alert on ``alerts`` posted to each webhook, once (issue 44).

Which webhooks, and the bodies: :mod:`verdictflow.monitoring.alert_messages`.

- **At least once.** A consumer group of its own (``<app id>-notify``) reads ``alerts``; an
  alert's offset is committed only once it is settled with every webhook: delivered, or
  dead-lettered after the last attempt. A notifier killed mid-alert posts it again after its
  restart.
- **Once per (alert, webhook).** Each settled pair is written to ``internal.notify-log``
  (acks=all) before the offset is committed, and read back at start: an alert delivered again
  (a replay, a restarted notifier, a drift monitor re-emitting the same deterministic
  ``alert_id``, which is one per rule and window) is not posted again. The one gap it cannot
  close, a notifier killed between a webhook's 2xx and the log write, is why each request
  carries ``Idempotency-Key: <alert id>``.
- **Retries**: connection errors, timeouts, 408, 429 and 5xx are tried again, up to
  ``attempts`` in all (``tenacity``), waiting a random time up to an exponential bound (full
  jitter: webhooks that failed together do not retry together), or the server's
  ``Retry-After`` when it gives one (both capped at ``max_wait``). Any other status is final.
  After the last attempt the alert goes to ``dead-letters`` (code ``webhook_failed``) for that
  webhook, and the notifier goes on.
- **Secrets** never logged: a webhook is named by its name and host, httpx's request log (which
  prints URLs) is held at WARNING, and ``VERDICTFLOW_ALERT_WEBHOOK_TOKEN`` (sent as a bearer
  token to ``json`` webhooks) goes only into the request.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import httpx
import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import ConsumerRecord
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_random_exponential

from verdictflow.exceptions import InvalidEvent
from verdictflow.models.codec import encode
from verdictflow.monitoring.alert_messages import Webhook, body
from verdictflow.settings import Settings
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.kafka_security import aiokafka_security_kwargs
from verdictflow.streams.records import Record, dead_letter
from verdictflow.streams.replay import make_producer
from verdictflow.streams.topic_reader import read_whole_topic
from verdictflow.streams.topics import ALERTS, DEAD_LETTERS, NOTIFY_LOG

logger = logging.getLogger(__name__)

RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


@dataclass
class NotifyStats:
    delivered: int = 0
    dead_lettered: int = 0
    already_settled: int = 0
    invalid: int = 0
    attempts: dict[str, int] = field(default_factory=dict)  # per webhook name, all alerts


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5
    first_wait: float = 1.0
    max_wait: float = 30.0
    request_timeout: float = 10.0


class _Retryable(Exception):  # noqa: N818 - a signal to tenacity, not an error shown to anyone
    def __init__(self, why: str, retry_after: float | None = None) -> None:
        super().__init__(why)
        self.why = why
        self.retry_after = retry_after


@dataclass(frozen=True)
class Outcome:
    ok: bool
    attempts: int
    why: str  # the last status or error, never the URL


class Notifier:
    """Posts alerts to webhooks with retries (see the module doc)."""

    def __init__(
        self,
        hooks: Sequence[Webhook],
        client: httpx.AsyncClient,
        policy: RetryPolicy,
        token: str | None = None,
    ) -> None:
        self.hooks = list(hooks)
        self.client = client
        self.policy = policy
        self.token = token
        self._jitter = wait_random_exponential(multiplier=policy.first_wait, max=policy.max_wait)

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, _Retryable) and error.retry_after is not None:
            return min(error.retry_after, self.policy.max_wait)
        return float(self._jitter(state))

    async def post(self, hook: Webhook, alert_id: str, content: bytes) -> Outcome:
        headers = {"content-type": "application/json", "idempotency-key": alert_id}
        if self.token and hook.shape == "json":
            headers["authorization"] = f"Bearer {self.token}"
        attempts = 0
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.policy.attempts),
            wait=self._wait,
            retry=retry_if_exception_type(_Retryable),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    attempts += 1
                    try:
                        reply = await self.client.post(hook.url, content=content, headers=headers)
                    except httpx.TransportError as exc:  # timeouts included
                        raise _Retryable(type(exc).__name__) from None
                    if reply.status_code in RETRIED_STATUSES:
                        raise _Retryable(f"HTTP {reply.status_code}", _retry_after(reply))
                    if reply.is_success:
                        return Outcome(True, attempts, f"HTTP {reply.status_code}")
                    return Outcome(False, attempts, f"HTTP {reply.status_code} (not retried)")
        except _Retryable as exc:
            return Outcome(False, attempts, exc.why)
        return Outcome(False, attempts, "no attempt was made")  # pragma: no cover


def _retry_after(reply: httpx.Response) -> float | None:
    value = reply.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: fall back to the backoff


async def settled_pairs(settings: Settings) -> set[tuple[str, str]]:
    """(alert id, webhook name) pairs the log says are settled."""
    settled = set()
    log = settings.topic_prefix + NOTIFY_LOG
    for _, key, _ in await read_whole_topic(settings, log, idle_seconds=2):
        if key:
            alert_id, _, name = key.decode("utf-8", "replace").rpartition("/")
            settled.add((alert_id, name))
    return settled


async def run_notifier(
    settings: Settings,
    hooks: Sequence[Webhook],
    *,
    policy: RetryPolicy | None = None,
    token: str | None = None,
    from_beginning: bool = False,
    idle_timeout: float | None = None,
) -> NotifyStats:
    """Deliver alerts until ``idle_timeout`` seconds pass without one (forever without)."""
    policy = policy or RetryPolicy()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # its INFO line prints the URL
    await ensure_topics(settings, [ALERTS, NOTIFY_LOG, DEAD_LETTERS])
    settled = await settled_pairs(settings)
    stats = NotifyStats()
    consumer = AIOKafkaConsumer(
        settings.topic_prefix + ALERTS,
        bootstrap_servers=settings.bootstrap_servers,
        group_id=f"{settings.app_id}-notify",
        enable_auto_commit=False,
        auto_offset_reset="earliest" if from_beginning else "latest",
        **aiokafka_security_kwargs(settings),
    )
    producer = make_producer(settings)
    await consumer.start()
    await producer.start()
    logger.info(
        "notify: %d webhook(s) %s; %d settled deliveries on record",
        len(hooks), ", ".join(h.where for h in hooks), len(settled),
    )  # fmt: skip
    try:
        async with httpx.AsyncClient(timeout=policy.request_timeout) as client:
            notifier = Notifier(hooks, client, policy, token)
            last = time.monotonic()
            while idle_timeout is None or time.monotonic() - last < idle_timeout:
                batches = await consumer.getmany(timeout_ms=500)
                for tp, messages in batches.items():
                    for message in messages:
                        await _settle(message, notifier, settled, producer, settings, stats)
                        await consumer.commit({tp: message.offset + 1})
                    last = time.monotonic()
    finally:
        await consumer.stop()
        await producer.stop()
    return stats


async def _settle(
    message: ConsumerRecord[bytes, bytes],
    notifier: Notifier,
    settled: set[tuple[str, str]],
    producer: AIOKafkaProducer,
    settings: Settings,
    stats: NotifyStats,
) -> None:
    """Deliver one alert to every webhook that has not had it; log each settled pair."""
    record = Record(message.topic, message.partition, message.offset, message.key,
                    message.value, message.timestamp / 1000)  # fmt: skip
    send = producer.send_and_wait
    try:
        alert = orjson.loads(message.value or b"")
        alert_id = alert["alert_id"]
        if not isinstance(alert_id, str) or not alert_id:
            raise TypeError("alert_id is not a string")
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        stats.invalid += 1
        problem = InvalidEvent("not_an_alert", f"no usable alert_id: {type(exc).__name__}")
        await send(settings.topic_prefix + DEAD_LETTERS, encode(dead_letter(record, problem)),
                   key=message.topic.encode())  # fmt: skip
        return
    for hook in notifier.hooks:
        if (alert_id, hook.name) in settled:
            stats.already_settled += 1
            continue
        outcome = await notifier.post(hook, alert_id, body(alert, hook.shape))
        stats.attempts[hook.name] = stats.attempts.get(hook.name, 0) + outcome.attempts
        if outcome.ok:
            stats.delivered += 1
            logger.info("notify: alert %s to %s (%d attempts)", alert_id, hook.where,
                        outcome.attempts)  # fmt: skip
        else:
            stats.dead_lettered += 1
            detail = f"webhook {hook.where}: {outcome.why} after {outcome.attempts} attempts"
            logger.warning("notify: alert %s dead-lettered: %s", alert_id, detail)
            letter = dead_letter(record, InvalidEvent("webhook_failed", detail))
            await send(settings.topic_prefix + DEAD_LETTERS, encode(letter),
                       key=message.topic.encode())  # fmt: skip
        entry = {"alert_id": alert_id, "webhook": hook.name, "delivered": outcome.ok,
                 "attempts": outcome.attempts, "last": outcome.why}  # fmt: skip
        await send(settings.topic_prefix + NOTIFY_LOG, orjson.dumps(entry),
                   key=f"{alert_id}/{hook.name}".encode())  # fmt: skip
        settled.add((alert_id, hook.name))
