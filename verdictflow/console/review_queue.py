"""The console's review queue (issue 44): inputs whose verdicts people check, and their labels.

Fed by :class:`~verdictflow.console.state.ConsoleState` with what the follower reads:

- **answers** (kept, bounded, so a sampled verdict can be queued with its text);
- **verdicts** of answers: each is kept per input (bounded) and offered to the review policy
  (:func:`~verdictflow.evaluators.review_sampling.sample_reasons`, plus a disagreement between
  the cheap and the judge tier's faithfulness on one input). A sampled input becomes one
  :class:`~verdictflow.models.labels.ReviewEntry`, however many of its verdicts are sampled
  and however often they are delivered; its later verdicts join the entry;
- **internal.review-queue**: entries written by this or another console (read from the
  beginning at start: the queue survives a restart), merged with what is held;
- **labels**: every reviewer's latest label per (input, kind).

New and grown entries, and agreement alerts, wait in :attr:`ReviewQueue.outbox` and
:attr:`ReviewQueue.alerts_out` until the console's writer produces them. Never raises on bad
input beyond :class:`ValueError` (which the console state counts as a bad record).
"""

from __future__ import annotations

import logging
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verdictflow.console.highlight import Mark, segments, verdict_marks
from verdictflow.evaluators.kinds import BY_NAME, series_name
from verdictflow.evaluators.review_policy import ReviewPolicy
from verdictflow.evaluators.review_sampling import (
    agreement,
    agreement_drops,
    reviewer_kappas,
    sample_reasons,
    tiers_disagree,
)
from verdictflow.models.alerts import AgreementAlert
from verdictflow.models.labels import (
    MAX_NOTE_CHARS,
    Expected,
    ReviewedVerdict,
    ReviewEntry,
    ReviewLabel,
    label_key,
)

logger = logging.getLogger(__name__)

#: Marks of one verdict kept for the page (the evidence has them all).
MAX_MARKS = 60


@dataclass(frozen=True)
class ReviewLimits:
    """How much the queue holds: entries in the queue, answers and per-input verdicts kept
    while they may still be sampled, and the largest answer event queued with its text."""

    entries: int = 10_000
    events: int = 5_000
    events_bytes: int = 64 * 1024 * 1024
    event_bytes: int = 256 * 1024
    inputs: int = 50_000
    labels: int = 200_000


class ReviewError(ValueError):
    """A label that cannot be given: an input or verdict not in the queue (``status`` 404), a
    DEFER judged right or wrong, or neither or both answers given (422)."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


class ReviewQueue:
    """See the module docstring."""

    def __init__(
        self,
        policy: ReviewPolicy | None = None,
        limits: ReviewLimits | None = None,
        clock: Callable[[], float] | None = None,
        *,
        restored: bool = True,
    ) -> None:
        self.policy = policy or ReviewPolicy()
        self.limits = limits or ReviewLimits()
        self.clock = clock or time.time
        self.entries: dict[str, ReviewEntry] = {}
        self._order: list[str] | None = None  # input ids by (queued_at, id), rebuilt lazily
        self._events: OrderedDict[str, tuple[dict[str, Any], int]] = OrderedDict()
        self._events_bytes = 0
        self._verdicts: OrderedDict[str, dict[str, ReviewedVerdict]] = OrderedDict()
        self._pending: OrderedDict[str, set[str]] = OrderedDict()  # sampled, text not yet read
        self.labels: dict[str, ReviewLabel] = {}
        self.outbox: deque[ReviewEntry] = deque()
        self.alerts_out: deque[AgreementAlert] = deque()
        self._raised: set[str] = set()
        #: Whether the stored queue has been read (:meth:`restore_done`). Until then, inputs
        #: sampled from what is read are only noted, so no entry is created ahead of its stored
        #: copy with a later queue time (the queue's order would change across a restart).
        self.restored = restored
        self._deferred: dict[str, set[str]] = {}

    # ---- what the follower reads -----------------------------------------------------------

    def answer(self, event: Mapping[str, Any], size: int) -> None:
        """An answer event as read from ``answers`` (``size``: its bytes on the topic)."""
        key = event.get("id")
        if not isinstance(key, str) or size > self.limits.event_bytes:
            return
        old = self._events.pop(key, None)
        if old is not None:
            self._events_bytes -= old[1]
        self._events[key] = (dict(event), size)
        self._events_bytes += size
        while self._events and (
            len(self._events) > self.limits.events or self._events_bytes > self.limits.events_bytes
        ):
            _, (_, dropped) = self._events.popitem(last=False)
            self._events_bytes -= dropped
        reasons = self._pending.pop(key, None)
        if reasons is not None:
            self._queue(key, reasons)

    def verdict(self, v: Mapping[str, Any]) -> None:
        """A verdict of an answer (deduplicated by the caller)."""
        kind = series_name(str(v["kind"]), v.get("judge"))
        spec = BY_NAME.get(kind)
        if spec is None or spec.scope.value != "answer":
            return
        input_id = str(v["input_id"])
        reviewed = _reviewed(v, kind, spec.tier.value if spec.tier else None)
        held = self._verdicts.pop(input_id, {})
        held[reviewed.verdict_id] = reviewed
        self._verdicts[input_id] = held
        while len(self._verdicts) > self.limits.inputs:
            self._verdicts.popitem(last=False)
        reasons = set(sample_reasons(v, self.policy.sample))
        if self.policy.sample.disagreement and tiers_disagree(
            {r.kind: r.decision for r in held.values()}
        ):
            reasons.add("disagreement")
        if input_id in self.entries:
            self._grow(input_id, reasons)
        elif reasons:
            if input_id in self._events:
                self._queue(input_id, reasons)
            else:
                self._pending.setdefault(input_id, set()).update(reasons)
                self._pending.move_to_end(input_id)
                while len(self._pending) > self.limits.events:
                    self._pending.popitem(last=False)

    def stored_entry(self, data: Mapping[str, Any]) -> None:
        """An entry read back from ``internal.review-queue`` (this console's, or another's)."""
        entry = ReviewEntry.model_validate(data)
        held = self.entries.get(entry.input_id)
        if held is None:
            self._put(entry)
            return
        merged = _merge(held, entry)
        self.entries[entry.input_id] = merged
        self._order = None
        if merged != entry:  # we know more than was written: write it again
            self.outbox.append(merged)

    def stored_label(self, data: Mapping[str, Any]) -> None:
        """A label read from ``labels`` (or just given here): the reviewer's latest wins."""
        label = ReviewLabel.model_validate(data)
        held = self.labels.get(label.key)
        if held is not None and held.labelled_at > label.labelled_at:
            return
        self.labels[label.key] = label
        while len(self.labels) > self.limits.labels:
            self.labels.pop(next(iter(self.labels)))
        if self.restored:  # while the stored labels are read, once at the end (restore_done)
            self._check_agreement([label])

    # ---- the queue -------------------------------------------------------------------------

    def restore_done(self) -> None:
        """The stored queue and labels are read: queue what was sampled meanwhile, and check
        the agreement of the stored labels' windows."""
        if self.restored:
            return
        self.restored = True
        deferred, self._deferred = self._deferred, {}
        for input_id, reasons in deferred.items():
            if input_id in self.entries:
                self._grow(input_id, reasons)
            elif input_id in self._events:
                self._queue(input_id, reasons)
        self._check_agreement(list(self.labels.values()))

    def _queue(self, input_id: str, reasons: set[str]) -> None:
        if not self.restored:
            self._deferred.setdefault(input_id, set()).update(reasons)
            return
        event, _ = self._events[input_id]
        entry = ReviewEntry(
            input_id=input_id,
            queued_at=self.clock(),
            sampled=sorted(reasons),
            event=event,
            verdicts=_sorted(self._verdicts.get(input_id, {}).values()),
            model=_opt(event.get("model")),
            tenant=_opt(event.get("tenant")),
        )
        self._put(entry)
        self.outbox.append(entry)

    def _grow(self, input_id: str, reasons: set[str]) -> None:
        if not self.restored:
            self._deferred.setdefault(input_id, set()).update(reasons)
            return
        held = self.entries[input_id]
        known = {v.verdict_id for v in held.verdicts}
        new = [v for v in self._verdicts.get(input_id, {}).values() if v.verdict_id not in known]
        sampled = sorted(set(held.sampled) | reasons)
        if not new and sampled == held.sampled:
            return
        grown = held.model_copy(
            update={"verdicts": _sorted([*held.verdicts, *new]), "sampled": sampled}
        )
        self.entries[input_id] = grown
        self.outbox.append(grown)

    def _put(self, entry: ReviewEntry) -> None:
        self.entries[entry.input_id] = entry
        self._order = None
        if len(self.entries) > self.limits.entries:
            oldest = min(self.entries.values(), key=lambda e: (e.queued_at, e.input_id))
            del self.entries[oldest.input_id]

    def order(self) -> list[str]:
        if self._order is None:
            self._order = [
                e.input_id
                for e in sorted(self.entries.values(), key=lambda e: (e.queued_at, e.input_id))
            ]
        return self._order

    def labels_of(self, input_id: str, reviewer: str) -> dict[str, ReviewLabel]:
        """``reviewer``'s labels on ``input_id``'s verdicts, by kind."""
        out: dict[str, ReviewLabel] = {}
        entry = self.entries.get(input_id)
        for v in entry.verdicts if entry is not None else ():
            found = self.labels.get(label_key(input_id, v.kind, reviewer))
            if found is not None:
                out[v.kind] = found
        return out

    def done(self, input_id: str, reviewer: str) -> bool:
        entry = self.entries[input_id]
        mine = self.labels_of(input_id, reviewer)
        return all(v.kind in mine for v in entry.verdicts)

    def progress(self, reviewer: str | None) -> dict[str, Any]:
        """How far ``reviewer`` is: entries, those they finished, where to resume."""
        order = self.order()
        done = [reviewer is not None and self.done(i, reviewer) for i in order]
        position = next((n for n, d in enumerate(done) if not d), max(0, len(order) - 1))
        return {"total": len(order), "done": sum(done), "position": position}

    def view(self, index: int, reviewer: str | None) -> dict[str, Any]:
        """Entry ``index`` of the queue as the review page draws it (IndexError when none)."""
        order = self.order()
        if not 0 <= index < len(order):
            raise IndexError(index)
        entry = self.entries[order[index]]
        event = entry.event
        answer = str(event.get("answer", ""))
        marks: list[Mark] = []
        owners: list[int] = []
        for n, v in enumerate(entry.verdicts):
            for m in v.marks:
                marks.append(_mark(m))
                owners.append(n)
        contexts = []
        for c_index, context in enumerate(event.get("contexts") or []):
            text = context.get("text", "") if isinstance(context, Mapping) else str(context)
            doc_id = context.get("doc_id") if isinstance(context, Mapping) else None
            c_marks = _context_marks(marks, c_index, text)
            contexts.append(
                {"doc_id": doc_id, "segments": segments(text, c_marks), "marks": len(c_marks)}
            )
        mine = self.labels_of(entry.input_id, reviewer) if reviewer else {}
        given = Counter(lab.kind for lab in self.labels.values() if lab.input_id == entry.input_id)
        return {
            "index": index,
            "input_id": entry.input_id,
            "queued_at": entry.queued_at,
            "sampled": entry.sampled,
            "model": entry.model,
            "tenant": entry.tenant,
            "query": str(event.get("query", "")),
            "answer": {"segments": segments(answer, marks)},
            "marks": [{**m.as_json(), "verdict": owners[i]} for i, m in enumerate(marks)],
            "contexts": contexts,
            "verdicts": [
                {
                    **v.model_dump(mode="json", exclude={"marks"}),
                    "label": mine[v.kind].model_dump(mode="json") if v.kind in mine else None,
                    "labels_given": given.get(v.kind, 0),
                }
                for v in entry.verdicts
            ],
            "done": bool(reviewer) and self.done(entry.input_id, str(reviewer)),
            **self.progress(reviewer),
        }

    # ---- labels ----------------------------------------------------------------------------

    def make_label(
        self,
        *,
        reviewer: str,
        role: str,
        input_id: str,
        verdict_id: str,
        expected: Expected | None = None,
        judgement: str | None = None,
        note: str = "",
    ) -> ReviewLabel:
        """The label ``reviewer`` gives one verdict of a queued input: what it should have
        decided (``expected``), or ``judgement`` right / wrong of its decision."""
        entry = self.entries.get(input_id)
        if entry is None:
            raise ReviewError(f"input {input_id!r} is not in the review queue", 404)
        verdict = next((v for v in entry.verdicts if v.verdict_id == verdict_id), None)
        if verdict is None:
            raise ReviewError(f"verdict {verdict_id!r} is not one of {input_id!r}'s", 404)
        if (expected is None) == (judgement is None):
            raise ReviewError("give either expected (pass|fail) or judgement (right|wrong)")
        if judgement is not None:
            if verdict.decision == "DEFER":
                raise ReviewError("a DEFER decided nothing: say what it should be (pass|fail)")
            said = verdict.decision.lower()
            expected = said if judgement == "right" else ("fail" if said == "pass" else "pass")  # type: ignore[assignment]
        assert expected is not None
        return ReviewLabel(
            input_id=input_id,
            kind=verdict.kind,
            tier=verdict.tier,
            reviewer=reviewer,
            role=role,  # type: ignore[arg-type]
            labelled_at=round(self.clock(), 3),
            verdict_id=verdict.verdict_id,
            config_digest=verdict.config_digest,
            decision=verdict.decision,
            score=verdict.score,
            expected=expected,
            agrees=None if verdict.decision == "DEFER" else verdict.decision.lower() == expected,
            note=note[:MAX_NOTE_CHARS],
            model=entry.model,
            tenant=entry.tenant,
        )

    # ---- agreement -------------------------------------------------------------------------

    def agreement(self) -> dict[str, Any]:
        """Agreement per kind and tier (all labels, and per window of label time), and Cohen's
        kappa between reviewers; what ``/metrics`` and the page's panel show."""
        labels = [lab.model_dump(mode="json") for lab in self.labels.values()]
        seconds = self.policy.agreement.window_seconds
        windows: dict[int, list[dict[str, Any]]] = {}
        for lab in labels:
            windows.setdefault(int(lab["labelled_at"] // seconds), []).append(lab)
        return {
            "bound": self.policy.agreement.model_dump(mode="json"),
            "kinds": [_agreement_json(a) for a in agreement(labels)],
            "windows": [
                {
                    "window_index": index,
                    "start": index * seconds,
                    "kinds": [_agreement_json(a) for a in agreement(windows[index])],
                }
                for index in sorted(windows)
            ],
            "kappa": [
                {"kind": k.kind, "reviewers": list(k.reviewers), "items": k.items, "kappa": k.value}
                for k in reviewer_kappas(labels)
            ],
        }

    def _check_agreement(self, changed: Sequence[ReviewLabel]) -> None:
        """Raise each new drop in the windows (kind, tier, window of label time) of ``changed``:
        one label as it is given, or every stored label once they are all read (checking each
        as it was read would scan every label per label, and judge windows half read)."""
        bound = self.policy.agreement

        def window(lab: ReviewLabel) -> tuple[str, str | None, int]:
            return lab.kind, lab.tier, int(lab.labelled_at // bound.window_seconds)

        windows = {window(lab) for lab in changed}
        same = [
            lab.model_dump(mode="json") for lab in self.labels.values() if window(lab) in windows
        ]
        for drop in agreement_drops(same, bound):
            if drop.alert_id in self._raised:
                continue
            self._raised.add(drop.alert_id)
            logger.warning(
                "agreement of %s with reviewers fell to %.3f over %d labels (bound %.3f)",
                drop.kind, drop.agreement, drop.labels, drop.bound,
            )  # fmt: skip
            self.alerts_out.append(
                AgreementAlert(
                    alert_id=drop.alert_id,
                    kind=drop.kind,
                    tier=drop.tier,
                    value=drop.agreement,
                    bound=drop.bound,
                    labels=drop.labels,
                    window_index=drop.window_index,
                    window_seconds=drop.window_seconds,
                    first_event_ts=drop.first_labelled_at,
                    event_ts=drop.last_labelled_at,
                )
            )


def _agreement_json(a: Any) -> dict[str, Any]:
    return {
        "kind": a.kind,
        "tier": a.tier,
        "labels": a.labels,
        "agreement": a.share,
        "confusion": {f"{d}/{e}": n for (d, e), n in sorted(a.counts.items())},
    }


def _reviewed(v: Mapping[str, Any], kind: str, tier: str | None) -> ReviewedVerdict:
    score, threshold = v.get("score"), v.get("threshold")
    reasons = v.get("reasons") if isinstance(v.get("reasons"), list) else []
    return ReviewedVerdict(
        verdict_id=str(v["verdict_id"]),
        kind=kind,
        tier=tier,
        decision=v["decision"],
        score=float(score)
        if isinstance(score, int | float) and not isinstance(score, bool)
        else None,
        threshold=(
            float(threshold)
            if isinstance(threshold, int | float) and not isinstance(threshold, bool)
            else None
        ),
        config_digest=str(v.get("config_digest", "")),
        reasons=[
            {str(k): str(x)[:600] for k, x in list(r.items())[:4]}
            for r in (reasons or [])[:10]
            if isinstance(r, Mapping)
        ],
        marks=[m.as_json() for m in verdict_marks(v)[:MAX_MARKS]],
    )


def _mark(m: Mapping[str, Any]) -> Mark:
    return Mark(
        start=int(m["start"]),
        end=int(m["end"]),
        text=str(m["text"]),
        status=m["status"],
        source=str(m["source"]),
        label=str(m["label"]),
        note=str(m["note"]),
        clause=bool(m["clause"]),
        context=m.get("context"),
    )


def _context_marks(marks: list[Mark], index: int, text: str) -> list[Mark]:
    """The context spans the answer's marks cite as their support, on context ``index``."""
    out = []
    for m in marks:
        c = m.context
        if not isinstance(c, Mapping) or c.get("index") != index:
            continue
        start, end = c.get("start"), c.get("end")
        if (
            not isinstance(start, int)
            or not isinstance(end, int)
            or not 0 <= start < end <= len(text)
        ):
            continue
        out.append(
            Mark(start, end, text[start:end], "supported", m.source,
                 f"evidence for {m.text!r}", f"cited for {m.label}", False)
        )  # fmt: skip
    return out


def _sorted(verdicts: Any) -> list[ReviewedVerdict]:
    order = {name: n for n, name in enumerate(BY_NAME)}
    return sorted(verdicts, key=lambda v: (order.get(v.kind, 99), v.verdict_id))


def _merge(held: ReviewEntry, other: ReviewEntry) -> ReviewEntry:
    verdicts = {v.verdict_id: v for v in other.verdicts}
    verdicts.update({v.verdict_id: v for v in held.verdicts})
    return other.model_copy(
        update={
            "queued_at": min(held.queued_at, other.queued_at),
            "sampled": sorted(set(held.sampled) | set(other.sampled)),
            "verdicts": _sorted(verdicts.values()),
        }
    )


def _opt(value: Any) -> str | None:
    return value if isinstance(value, str) else None
