"""Collecting the variants of one request across events (pure state transitions).

A request's consistency set is every answer (and inline variant) of the events sharing its
``request_id``. The collection closes when ``expected_variants`` answers are in, or when the
window closes. The state is a JSON-able dict, so the stream driver can keep it in a Faust table
and the offline driver in a plain dict, with identical results.

Rules (documented in docs/verdicts/consistency.md):
- An event's answers are ``(id, answer)`` then ``(id#v1, variants[0])``, ...; an answer id seen
  twice is counted once, so at-least-once redelivery never inflates a group.
- ``expected`` is the event's ``expected_variants``; without it, an event with inline variants
  or without a request_id is complete on its own, and a bare answer with a request_id waits for
  the window.
- The first event to give ``expected`` sets it for the group.
- The verdict's model, tenant, group and event time come from the event with the smallest
  id, not the first to arrive: redelivery after a crash can change arrival order, and the
  verdict must not change with it.
- After a group closes its key is remembered (``done``) for a while, so a late duplicate does not
  open a second group whose verdict would contradict the first under the same verdict_id.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, MutableMapping
from typing import Any

from verdictflow.evaluators.answer_verdicts import ScoringContext, VerdictMeta, score_consistency
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Verdict

logger = logging.getLogger(__name__)

GroupState = dict[str, Any]


def contributions(event: AnswerEvent) -> list[tuple[str, str]]:
    """The (answer_id, text) pairs one event adds to its request's consistency set."""
    return [(event.id, event.answer)] + [
        (f"{event.id}#v{i}", text) for i, text in enumerate(event.variants, start=1)
    ]


def expected_count(event: AnswerEvent) -> int | None:
    """How many answers complete the group, or None when only the window can close it."""
    if event.expected_variants is not None:
        return event.expected_variants
    if event.variants or event.request_id is None:
        return 1 + len(event.variants)
    return None


def is_self_contained(event: AnswerEvent) -> bool:
    """True when this event alone completes its group (no collection needed)."""
    expected = expected_count(event)
    return expected is not None and len(contributions(event)) >= expected


def new_group(event: AnswerEvent, deadline: float) -> GroupState:
    meta = VerdictMeta.of(event)
    return {
        "answers": [],
        "expected": None,
        "deadline": deadline,
        "truncated": 0,
        "done": False,
        "meta": [meta.model, meta.tenant, meta.group, meta.event_ts],
        "meta_from": event.id,
    }


def add_event(state: GroupState, event: AnswerEvent, max_variants: int) -> GroupState:
    """A new state with the event's answers added (duplicates ignored, overflow counted)."""
    answers = [list(a) for a in state["answers"]]
    seen = {a[0] for a in answers}
    truncated = state["truncated"]
    for answer_id, text in contributions(event):
        if answer_id in seen:
            continue
        if len(answers) >= max_variants:
            truncated += 1
            continue
        answers.append([answer_id, text])
        seen.add(answer_id)
    expected = state["expected"]
    if expected is None:
        expected = expected_count(event)
    updated = {**state, "answers": answers, "expected": expected, "truncated": truncated}
    if event.id < state["meta_from"]:
        meta = VerdictMeta.of(event)
        updated["meta"] = [meta.model, meta.tenant, meta.group, meta.event_ts]
        updated["meta_from"] = event.id
    return updated


def is_complete(state: GroupState) -> bool:
    """All expected answers are in (a group that overflowed max_variants counts as complete)."""
    expected = state["expected"]
    return expected is not None and (len(state["answers"]) >= expected or state["truncated"] > 0)


def answers_of(state: GroupState) -> list[tuple[str, str]]:
    return [(a[0], a[1]) for a in state["answers"]]


def meta_of(state: GroupState) -> VerdictMeta:
    model, tenant, group, event_ts = state["meta"]
    return VerdictMeta(model=model, tenant=tenant, group=group, event_ts=event_ts)


def closed_marker(state: GroupState, forget_at: float) -> GroupState:
    """What stays in the table after the verdict: enough to ignore late duplicates."""
    return {**state, "answers": [], "done": True, "deadline": forget_at}


def score_self_contained(event: AnswerEvent, ctx: ScoringContext) -> Verdict:
    """Q2 verdict of an event that carries its whole consistency set."""
    return score_consistency(
        event.group_key,
        contributions(event),
        ctx,
        VerdictMeta.of(event),
        expected=event.expected_variants,
    )


def score_group(key: str, state: GroupState, ctx: ScoringContext, closed_by: str) -> Verdict:
    """Q2 verdict of a collected group; ``closed_by`` is ``complete`` or ``window``."""
    return score_consistency(
        key,
        answers_of(state),
        ctx,
        meta_of(state),
        expected=state["expected"],
        closed_by=closed_by,
        truncated=state["truncated"],
    )


class GroupStore:
    """The open groups of one driver, over any mutable mapping: a Faust table in the
    consistency agent, a plain dict in ``verdictflow eval``. One implementation for both is
    what makes streamed and offline consistency verdicts equal by construction.

    Windows are measured in log time: an answer comes with its record's timestamp, and a close
    with the watermark it was decided on (:mod:`verdictflow.streams.source_progress`); offline,
    every answer has log time 0 and the input's end closes what is left. Times decide when
    windows close and closed groups are forgotten, never a score.
    """

    def __init__(
        self,
        table: MutableMapping[str, GroupState],
        ctx: ScoringContext,
        *,
        forget_seconds: float,
    ) -> None:
        self.table = table
        self.ctx = ctx
        self.forget_seconds = forget_seconds
        self.close_sent: dict[str, float] = {}

    def _finish(self, key: str, state: GroupState, closed_by: str, now: float) -> Verdict:
        verdict = score_group(key, state, self.ctx, closed_by)
        self.table[key] = closed_marker(state, now + self.forget_seconds)
        return verdict

    def on_answer(self, event: AnswerEvent, log_time: float) -> Verdict | None:
        """Add an answer whose record was stamped ``log_time``; the group's window ends
        ``window_seconds`` after the earliest log time among its answers."""
        key = event.group_key
        state = self.table.get(key)
        window_end = log_time + self.ctx.policy.consistency.window_seconds
        if state is None:
            state = new_group(event, deadline=window_end)
        elif state["done"]:
            logger.info("late answer %s for closed request %s ignored", event.id, key)
            return None
        updated = add_event(state, event, self.ctx.policy.consistency.max_variants)
        updated["deadline"] = min(updated["deadline"], window_end)
        if is_complete(updated):
            return self._finish(key, updated, "complete", log_time)
        if updated != state:  # a redelivered answer changes nothing: no changelog write
            self.table[key] = updated
        return None

    def on_close(self, key: str, watermark: float) -> Verdict | None:
        """A close message decided at ``watermark``: every answer of the group's partition up
        to that log time is in, so a window that ended by then is closed."""
        self.close_sent.pop(key, None)
        state = self.table.get(key)
        if state is None or watermark < state["deadline"]:
            return None
        if state["done"]:
            del self.table[key]
            return None
        return self._finish(key, state, "window", watermark)

    def due_for_close(
        self, watermark_of: Callable[[str], float | None], now: float, resend_after: float
    ) -> list[tuple[str, float]]:
        """(key, watermark) of groups whose window ended by their partition's watermark and
        that have no close message in flight (``now``, the driver's clock, times re-sends)."""
        due = []
        for key, state in list(self.table.items()):
            watermark = watermark_of(key)
            if watermark is None or state["deadline"] > watermark:
                continue
            sent = self.close_sent.get(key)
            if sent is None or now - sent > resend_after:
                self.close_sent[key] = now
                due.append((key, watermark))
        return due
