"""The judge tier's spent day is an alert (issue 44, alerts out): requests skipped for
``daily_tokens`` raise one ``judge_budget_spent`` alert a day, sent on ``alerts`` with the
batch, with an id every judge worker computes the same (so the notifier posts it once)."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import orjson

from tests.judge_tier.test_client import request
from verdictflow.agents.judge_tier import JudgeProcessor
from verdictflow.judge_tier.budget import BudgetSkipped
from verdictflow.streams.outbox import RecordingOutbox
from verdictflow.streams.records import Record
from verdictflow.streams.topics import ALERTS


class SpentClient:
    """A judge client whose budget is spent for the day: every request is skipped."""

    def __init__(self) -> None:
        self.asked = 0
        skipped = SimpleNamespace(labels=lambda *a: SimpleNamespace(inc=lambda: None))
        self.metrics = SimpleNamespace(skipped=skipped)
        self.budget = SimpleNamespace(budget=SimpleNamespace(daily_tokens=5000))

    async def judge(self, *args: Any) -> Any:
        self.asked += 1
        raise BudgetSkipped("daily_tokens", "5,000 of 5,000 tokens spent today")


class Table(dict[str, Any]):
    async def flush_writes(self) -> None:
        return None


class Event:  # what the table's partition context reads: the event's message partition
    def __init__(self) -> None:
        self.message = SimpleNamespace(partition=0)


def batch(n: int) -> tuple[list[Any], list[Record]]:
    events: list[Any] = []
    records = []
    for i in range(n):
        events.append(Event())
        value = request("Acme bought Globex.", rid=f"a{i}").model_dump_json().encode()
        records.append(Record("vf.internal.judge-requests", 0, i, f"k{i}".encode(), value))
    return events, records


def test_a_spent_day_raises_one_alert_per_day_and_worker() -> None:
    outbox = RecordingOutbox()
    client = SpentClient()
    processors = [JudgeProcessor(Table(), client, ctx=None) for _ in range(2)]  # type: ignore[arg-type]
    for processor in processors:  # two workers, two batches each
        for _ in range(2):
            asyncio.run(processor.handle(*batch(3), outbox))
    assert client.asked == 12
    alerts = [orjson.loads(v) for v in outbox.values(ALERTS)]
    assert len(alerts) == 2  # one per worker; the same id, so notify posts it once
    assert alerts[0]["alert_id"] == alerts[1]["alert_id"]
    first = alerts[0]
    assert first["alert"] == "judge_budget_spent"
    assert first["day"] == time.strftime("%Y-%m-%d", time.gmtime())
    assert first["value"] == 5000
    assert "spent today" in first["detail"]
    assert outbox.values("verdicts.faithfulness_llm") == []  # skipped: nothing judged
