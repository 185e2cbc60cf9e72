"""The fetch loop's quick hand-over gives what mode's ``wait_first`` gives, case by case.

Each case runs against mode's own ``Service.wait_first`` and against :class:`QuickHandoff`
(as the worker consumer inherits it), with Faust's arguments: the record's hand-over and the
flow-suspension wait.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest
from mode import Service
from mode.utils.locks import Event

from verdictflow.streams.quick_handoff import FETCH_LOOP_WAIT_SECONDS, QuickHandoff, _Started
from verdictflow.streams.safe_commit import SafeCommitConsumer


class Plain(Service):  # type: ignore[misc]
    """mode's ``wait_first``, as Faust's consumer had it."""


class Quick(QuickHandoff, Plain):
    pass


def outcome(results: Any, handing_on: Any, flow: Any) -> tuple[list[str], list[Any], bool]:
    names = {id(handing_on): "handing_on", id(flow): "flow"}
    return [names[id(w)] for w in results.done], list(results.results), results.stopped


async def run_case(
    service: Service, scenario: str
) -> tuple[tuple[list[str], list[Any], bool] | str, list[str]]:
    """(what ``wait_first`` returned or raised, what happened to the hand-over)."""
    flow_event, buffer_has_room = Event(), Event()
    happened: list[str] = []

    async def hand_on() -> str:
        if scenario in {"blocked", "blocked_then_room", "blocked_then_fails"}:
            try:
                await buffer_has_room.wait()
            except asyncio.CancelledError:
                happened.append("cancelled")
                raise
        if scenario == "yields":
            await asyncio.sleep(0)  # a bare yield: the rest runs in a task, after a loop turn
        if scenario in {"fails", "blocked_then_fails"}:
            raise ValueError("bad record")
        happened.append("handed on")
        return "ok"

    if scenario == "stopped":
        service._stopped.set()
    handing_on, flow = hand_on(), flow_event.wait()
    waiting = asyncio.ensure_future(service.wait_first(handing_on, flow))
    for _ in range(5):
        await asyncio.sleep(0)
    if scenario == "blocked":
        flow_event.set()  # a rebalance suspends the flow while the buffer is full
    if scenario in {"blocked_then_room", "blocked_then_fails"}:
        buffer_has_room.set()
    try:
        result: tuple[list[str], list[Any], bool] | str = outcome(await waiting, handing_on, flow)
    except ValueError as exc:
        result = f"raised {exc}"
    for _ in range(5):
        await asyncio.sleep(0)
    assert inspect.getcoroutinestate(flow) == inspect.CORO_CLOSED  # no "never awaited"
    return result, happened


@pytest.mark.parametrize(
    "scenario",
    ["room", "blocked", "blocked_then_room", "blocked_then_fails", "yields", "fails", "stopped"],
)
async def test_each_case_ends_as_with_modes_wait_first(scenario: str) -> None:
    expected = await run_case(Plain(), scenario)
    assert await run_case(Quick(), scenario) == expected
    if scenario == "blocked":  # the point of the flow wait: a blocked hand-over is dropped
        assert expected == ((["flow"], [True], False), ["cancelled"])
    if scenario == "room":
        assert expected == ((["handing_on"], ["ok"], False), ["handed on"])


async def test_a_hand_over_with_room_starts_no_task(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[Any] = []
    real = asyncio.ensure_future

    def counting(coro: Any, **kwargs: Any) -> Any:
        started.append(coro)
        return real(coro, **kwargs)

    async def hand_on() -> str:
        return "ok"

    monkeypatch.setattr(asyncio, "ensure_future", counting)
    await Quick().wait_first(hand_on(), Event().wait())
    assert started == []  # its one step runs in the fetch loop's own
    started.clear()
    await Plain().wait_first(hand_on(), Event().wait())
    assert len(started) == 4  # what each record cost before


def test_the_worker_consumer_hands_on_quickly() -> None:
    assert issubclass(SafeCommitConsumer, QuickHandoff)


@pytest.mark.parametrize("service", [Plain, Quick])
async def test_a_fetch_loop_cancelled_mid_hand_over_leaves_nothing_running(service: type) -> None:
    """The worker stopping cancels the fetch loop while a record is being handed on: the
    hand-over must not go on by itself afterwards, and the flow wait must not leak."""
    buffer_has_room, happened = Event(), []

    async def hand_on() -> None:
        await buffer_has_room.wait()
        happened.append("handed on")

    flow = Event().wait()
    waiting = asyncio.ensure_future(service().wait_first(hand_on(), flow))
    await asyncio.sleep(0)  # wait_first has started the hand-over and is waiting
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    buffer_has_room.set()
    for _ in range(5):
        await asyncio.sleep(0)
    assert happened == []
    assert inspect.getcoroutinestate(flow) == inspect.CORO_CLOSED


async def test_a_blocked_hand_over_cancelled_before_its_task_runs_is_cancelled_inside() -> None:
    """The rest of a blocked hand-over runs in a task; a cancellation that reaches the task
    before its first step must still reach the hand-over (its clean-up runs), as it would
    have had the task run the hand-over from the start."""
    room, happened = Event(), []

    async def hand_on() -> None:
        try:
            await room.wait()
        except asyncio.CancelledError:
            happened.append("cancelled")
            raise

    coro = hand_on()
    task = asyncio.ensure_future(_Started(coro, coro.send(None)))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert happened == ["cancelled"]
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED


class _Fetching:
    """Faust's consumer as the fetch loop calls it: ``getmany(timeout)``, an async iterator."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def getmany(self, timeout: float) -> Any:
        self.waits.append(timeout)
        yield ("tp", "record")


class QuickFetching(QuickHandoff, _Fetching):
    pass


async def test_a_fetch_loop_call_waits_at_most_a_tenth_of_a_second() -> None:
    """Faust's fetch loop asks for records with a 1 s wait, and a partition put back on the
    fetch list after flow control is fetched only by the next call: the call is capped so it
    comes within FETCH_LOOP_WAIT_SECONDS (the lexical tier stalled 250-400 ms per ~5,000
    answers of a backlog before, issue 41); shorter waits asked for are kept."""
    consumer = QuickFetching()
    assert [item async for item in consumer.getmany(timeout=1.0)] == [("tp", "record")]
    assert [item async for item in consumer.getmany(timeout=0.02)] == [("tp", "record")]
    assert consumer.waits == [FETCH_LOOP_WAIT_SECONDS, 0.02]
    assert FETCH_LOOP_WAIT_SECONDS <= 0.1
