"""Faust's worker consumer with a short fetch wait, for the embedded broker only.

Faust builds its worker consumer with ``fetch_max_wait_ms=1500`` (hard-coded). A Kafka broker
answers a waiting fetch as soon as a record arrives, so the wait costs nothing there; Tansu
holds the fetch for the whole wait instead (measured: a record produced to an idle partition
reached a consumer after ~380 ms with a 1500 ms wait, ~20 ms with 50 ms). Every hop of a
record through a worker therefore paid up to 1.5 s on the embedded broker. On that profile the
app's transport builds its consumer with :data:`EMBEDDED_FETCH_WAIT_MS` instead; a real
cluster keeps Faust's behaviour.

aiokafka reads the wait from the consumer's ``_fetch_max_wait_ms`` when it starts its fetcher,
so the override sets it between construction and start (pinned by a test).
"""

from __future__ import annotations

from typing import Any

from faust.transport.drivers import aiokafka as faust_aiokafka

from verdictflow.streams.safe_commit import SafeCommitApp, SafeCommitConsumer

#: Longest a worker's fetch waits on the embedded broker: the mean added latency is half this.
EMBEDDED_FETCH_WAIT_MS = 50


class ShortWaitConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):  # type: ignore[misc]
    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        consumer._fetch_max_wait_ms = EMBEDDED_FETCH_WAIT_MS
        return consumer


class ShortWaitConsumer(SafeCommitConsumer):
    def _new_consumer_thread(self) -> ShortWaitConsumerThread:
        return ShortWaitConsumerThread(self, loop=self.loop, beacon=self.beacon)


class EmbeddedBrokerApp(SafeCommitApp):
    """A Faust app whose transport makes :class:`ShortWaitConsumer` workers."""

    worker_consumer_class = ShortWaitConsumer
