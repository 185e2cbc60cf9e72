"""The console's memory of the topics it follows, all of it bounded.

:meth:`ConsoleState.ingest` takes one record (short topic name, value, arrival time) and never
raises on bad input: a record that is not what its topic carries is counted in ``bad_records``
and skipped, as the monitor does. What it keeps:

- verdict counts and score histograms per kind, model and tenant (:mod:`.window`), each
  ``verdict_id`` counted once (delivery is at-least-once);
- the latest FAIL and DEFER verdicts, each joined to the answer (or summary) text it judged,
  read from the ``answers`` and ``summaries`` topics, with the spans its evidence marks; the
  whole verdict of each on demand;
- drift alerts, dead letters (with counts per error code) and document-quality rows;
- the review queue and people's labels (:mod:`.review_queue`), fed with the answers and
  verdicts above and with the ``labels`` and ``internal.review-queue`` topics.

A verdict can be read before the answer it judged (they are on different topics), so a failure
waits up to ``hold_seconds`` for its text before it is published; after that it is published
without it. Every published item carries a sequence number, so a page asks only for what is
new.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson

from verdictflow.console.highlight import Mark, segments, verdict_marks
from verdictflow.console.review_queue import ReviewQueue
from verdictflow.console.window import DECISIONS, Key, KindFigures, WindowCounts, score_bin
from verdictflow.evaluators.kinds import BY_NAME, series_name
from verdictflow.metric_labels import LabelCap
from verdictflow.models.events import MAX_ID_CHARS
from verdictflow.monitoring.verdict_monitor import RecentIds
from verdictflow.streams.topics import (
    ALERTS,
    ANSWERS,
    DEAD_LETTERS,
    DOC_QUALITY,
    LABELS,
    REVIEW_QUEUE,
    SUMMARIES,
)

logger = logging.getLogger(__name__)
V = TypeVar("V")

#: Characters of an answer, query or dead-letter preview kept for the page.
TEXT_CHARS = 4000
PREVIEW_CHARS = 600
#: A drift alert is a few hundred bytes; one larger than this is not an alert.
MAX_ALERT_BYTES = 16 * 1024
ALL = "*"


@dataclass(frozen=True)
class ConsoleLimits:
    """How much the console remembers; every list and map is capped by one of these, the ones
    holding text by bytes too (``/api/stats`` reports them under ``limits`` and what is held
    under ``memory``). A text is kept for display only, cut to :data:`TEXT_CHARS` on arrival,
    never held whole; a verdict record over ``evidence_record_bytes`` is not kept for the
    evidence view (its failure is still listed)."""

    max_window: int = 900
    failures: int = 1000
    alerts: int = 200
    dead_letters: int = 200
    quality_rows: int = 50
    texts: int = 20_000
    texts_bytes: int = 32 * 1024 * 1024
    evidence: int = 5_000
    evidence_bytes: int = 32 * 1024 * 1024
    evidence_record_bytes: int = 256 * 1024
    label_values: int = 50
    dedup_window: int = 200_000
    #: Distinct documents counted for "documents with a quality row" (beyond: "at least").
    quality_documents: int = 100_000
    hold_seconds: float = 2.0


def _scale(series: str) -> float:
    spec = BY_NAME.get(series)
    if spec is not None:
        return spec.scale
    return 10.0 if series.startswith("judge") else 1.0


def _direction(series: str) -> str:
    spec = BY_NAME.get(series)
    return spec.direction if spec is not None else "higher"


class Feed:
    """A bounded list of published items, each with a sequence number."""

    def __init__(self, size: int) -> None:
        self.items: deque[dict[str, Any]] = deque(maxlen=size)
        self.seq = 0

    def publish(self, item: dict[str, Any]) -> None:
        self.seq += 1
        item["seq"] = self.seq
        self.items.append(item)

    def since(self, seq: int, limit: int, keep: Any = None) -> list[dict[str, Any]]:
        """Items after ``seq`` that ``keep`` accepts, the latest ``limit`` of them, oldest first."""
        out: list[dict[str, Any]] = []
        for item in reversed(self.items):
            if item["seq"] <= seq or len(out) >= limit:
                break
            if keep is None or keep(item):
                out.append(item)
        out.reverse()
        return out


class ConsoleState:
    """Everything the page shows, fed one record at a time (see the module docstring)."""

    def __init__(
        self,
        prefix: str = "vf.",
        limits: ConsoleLimits | None = None,
        review: ReviewQueue | None = None,
    ) -> None:
        self.prefix = prefix
        self.review = review or ReviewQueue()
        self.limits = limits or ConsoleLimits()
        lim = self.limits
        self.counts = WindowCounts(lim.max_window)
        self._models = LabelCap(lim.label_values)
        self._tenants = LabelCap(lim.label_values)
        self._recent = RecentIds(lim.dedup_window)
        self._texts: BoundedStore[tuple[str, str, str]] = BoundedStore(
            lim.texts, lim.texts_bytes, lambda t: _utf8_size(t[0]) + _utf8_size(t[1])
        )
        self._evidence: BoundedStore[bytes] = BoundedStore(lim.evidence, lim.evidence_bytes, len)
        #: Failures waiting for their text: (deadline, item, the evidence's marks).
        self._held: deque[tuple[float, dict[str, Any], list[Mark]]] = deque()
        self.failures = Feed(lim.failures)
        self.alerts = Feed(lim.alerts)
        self.dead_letters = Feed(lim.dead_letters)
        self.quality = Feed(lim.quality_rows)
        self.dead_letter_codes: Counter[str] = Counter()
        self._codes = LabelCap(lim.label_values)
        self._series = LabelCap(lim.label_values)
        self.records: Counter[str] = Counter()
        self.bad_records: Counter[str] = Counter()
        self.duplicates = 0
        self.quality_docs: set[str] = set()  # at most limits.quality_documents ids
        self.quality_docs_capped = False
        self.quality_last: float | None = None
        self.quality_seconds: deque[tuple[int, int]] = deque()
        #: The judge tier's spend as its verdicts report it: (arrival second, tokens) within
        #: the longest window, and totals since start (tokens, verdicts by priority).
        self.judge_seconds: deque[tuple[int, int]] = deque()
        self.judge_tokens = 0
        self.judge_priorities: Counter[str] = Counter()
        #: The budget the page compares the spend with (``console --policy``), or None.
        self.judge_budget: Mapping[str, Any] | None = None
        self.lag: dict[str, int] = {}
        #: Called with each new verdict (after deduplication), e.g. the OpenTelemetry export.
        self.on_verdict: Callable[[Mapping[str, Any]], None] | None = None

    # ---- ingestion -------------------------------------------------------------------------

    def ingest(self, topic: str, value: bytes | None, now: float) -> None:
        """Take one record of ``topic`` (short or full name) that arrived at ``now``."""
        short = topic[len(self.prefix) :] if topic.startswith(self.prefix) else topic
        self.records[short] += 1
        try:
            data = orjson.loads(value or b"")
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            if short.startswith("verdicts."):
                self._verdict(data, value or b"", now)
            elif short == ANSWERS:
                self._remember(data.get("id"), data.get("query"), data.get("answer"), "answer")
                self.review.answer(data, len(value or b""))
            elif short == SUMMARIES:
                self._remember(data.get("id"), None, data.get("summary"), "summary")
            elif short == DEAD_LETTERS:
                self._dead_letter(data, now)
            elif short == ALERTS:
                if len(value or b"") > MAX_ALERT_BYTES:
                    raise ValueError(f"an alert over {MAX_ALERT_BYTES} bytes")
                self.alerts.publish({"alert": data, "received": now})
            elif short == DOC_QUALITY:
                self._quality(data, now)
            elif short == LABELS:
                self.review.stored_label(data)
            elif short == REVIEW_QUEUE:
                self.review.stored_entry(data)
            else:
                raise ValueError(f"topic {short!r} is not followed")
        except (ValueError, TypeError, KeyError) as exc:  # orjson.JSONDecodeError is a ValueError
            self.bad_records[short] += 1
            logger.debug("skipped a record of %s: %s", short, exc)
        self.tick(now)

    def _remember(self, key: Any, query: Any, text: Any, source: str) -> None:
        if not isinstance(key, str) or not isinstance(text, str):
            raise ValueError(f"{source} event without an id or text")
        q = query[:TEXT_CHARS] if isinstance(query, str) else ""
        self._texts.put(key[:MAX_ID_CHARS], (text[:TEXT_CHARS], q, source))

    def _verdict(self, v: dict[str, Any], raw: bytes, now: float) -> None:
        vid, kind, decision = v["verdict_id"], v["kind"], v["decision"]
        if not isinstance(vid, str) or not isinstance(kind, str) or decision not in DECISIONS:
            raise ValueError("not a verdict")
        if len(vid) > MAX_ID_CHARS:
            raise ValueError("a verdict_id longer than any verdict's")
        if self._recent.seen_before(vid):
            self.duplicates += 1
            return
        if self.on_verdict is not None:
            self.on_verdict(v)
        self.review.verdict(v)
        series = self._series(series_name(kind, v.get("judge")))
        if kind == "faithfulness_llm":
            self._judge_spend(v, now)
        raw_score = v.get("score")
        score = (
            float(raw_score)
            if isinstance(raw_score, int | float) and not isinstance(raw_score, bool)
            else None
        )
        key: Key = (series, self._models(v.get("model")), self._tenants(v.get("tenant")))
        scale = _scale(series)
        self.counts.add(key, decision, score_bin(score, scale) if score is not None else None, now)
        if decision == "PASS":
            return
        if len(raw) <= self.limits.evidence_record_bytes:
            self._evidence.put(vid, raw)
        marks = verdict_marks(v)
        item = {
            "verdict_id": vid,
            "kind": series,
            "input_id": str(v.get("input_id")),
            "score": score,
            "scale": scale,
            "direction": _direction(series),
            "threshold": v.get("threshold"),
            "decision": decision,
            "reasons": _reasons(v.get("reasons")),
            "model": key[1],
            "tenant": key[2],
            "received": now,
            "marks": [m.as_json() for m in marks],
        }
        self._held.append((now + self.limits.hold_seconds, item, marks))
        while len(self._held) > self.limits.failures:  # a burst: publish without waiting
            _, early, early_marks = self._held.popleft()
            self._attach_text(early, early_marks, self._texts.get(early["input_id"]))
            self.failures.publish(early)

    def _judge_spend(self, v: Mapping[str, Any], now: float) -> None:
        found = v.get("evidence")
        evidence: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        found = evidence.get("usage")
        usage: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        counts = [usage.get("prompt_tokens"), usage.get("completion_tokens")]
        tokens = sum(n for n in counts if isinstance(n, int) and not isinstance(n, bool) and n > 0)
        priority = evidence.get("priority")
        self.judge_priorities[priority if priority in ("fail", "band", "sample") else "?"] += 1
        self.judge_tokens += tokens
        second = int(now)
        if self.judge_seconds and self.judge_seconds[-1][0] == second:
            self.judge_seconds[-1] = (second, self.judge_seconds[-1][1] + tokens)
        else:
            self.judge_seconds.append((second, tokens))
        while self.judge_seconds and self.judge_seconds[0][0] <= second - self.limits.max_window:
            self.judge_seconds.popleft()

    def _dead_letter(self, d: dict[str, Any], now: float) -> None:
        code = self._codes(d.get("error_code") or "unknown")
        self.dead_letter_codes[code] += 1
        raw = d.get("raw")
        self.dead_letters.publish(
            {
                "error_code": code,
                "error": str(d.get("error", ""))[:PREVIEW_CHARS],
                "source": f"{d.get('source_topic')}[{d.get('partition')}]@{d.get('offset')}"[
                    :PREVIEW_CHARS
                ],
                "key": str(d.get("key"))[:MAX_ID_CHARS] if d.get("key") is not None else None,
                "raw": raw[:PREVIEW_CHARS] if isinstance(raw, str) else "",
                "raw_size": d.get("raw_size"),
                "received": now,
            }
        )

    def _quality(self, row: dict[str, Any], now: float) -> None:
        doc_id = row["doc_id"]
        if not isinstance(doc_id, str):
            raise ValueError("doc-quality row without a doc_id")
        if len(self.quality_docs) < self.limits.quality_documents:
            self.quality_docs.add(doc_id[:MAX_ID_CHARS])
        elif doc_id[:MAX_ID_CHARS] not in self.quality_docs:
            self.quality_docs_capped = True
        self.quality_last = now
        second = int(now)
        if self.quality_seconds and self.quality_seconds[-1][0] == second:
            self.quality_seconds[-1] = (second, self.quality_seconds[-1][1] + 1)
        else:
            self.quality_seconds.append((second, 1))
        while self.quality_seconds and self.quality_seconds[0][0] <= second - 60:
            self.quality_seconds.popleft()
        keep = ("doc_id", "quality", "version", "doc_version", "features", "deleted", "reasons")
        self.quality.publish(
            {**{k: row.get(k) for k in keep}, "ts": row.get("ts"), "received": now}
        )

    def tick(self, now: float) -> None:
        """Publish held failures whose text arrived or whose wait is over."""
        while self._held:
            deadline, item, marks = self._held[0]
            known = self._texts.get(item["input_id"])
            if known is None and now < deadline:
                # later items wait behind this one only while it waits: order is kept
                break
            self._held.popleft()
            self._attach_text(item, marks, known)
            self.failures.publish(item)

    def _attach_text(
        self, item: dict[str, Any], marks: list[Mark], known: tuple[str, str, str] | None
    ) -> None:
        if known is None:
            item.update(text=None, query=None, text_source=None, segments=[])
            return
        text, query, source = known
        item.update(
            text=text[:TEXT_CHARS],
            query=query,
            text_source=source,
            segments=segments(text[:TEXT_CHARS], marks),
        )

    # ---- reading ---------------------------------------------------------------------------

    def verdict(self, verdict_id: str) -> bytes | None:
        """The whole record of a recent FAIL or DEFER verdict, as it was on its topic."""
        return self._evidence.get(verdict_id)

    def labels(self) -> dict[str, list[str]]:
        keys = self.counts.seen_keys()
        return {
            "models": sorted({k[1] for k in keys}),
            "tenants": sorted({k[2] for k in keys}),
        }

    def stats(self, window: int, model: str, tenant: str, now: float) -> dict[str, Any]:
        """The per-kind figures of one window and filter (``*`` for every model or tenant)."""
        window = max(1, min(window, self.limits.max_window))
        keep = [k for k in self.counts.seen_keys() if _matches(k, model, tenant)]
        in_window, totals, series = self.counts.figures(window, now, keep)
        seconds = self.counts.window_seconds(window, now)
        kinds = []
        for name in sorted(totals):
            fig = in_window.get(name)
            kinds.append(
                {
                    "kind": name,
                    "scale": _scale(name),
                    "direction": _direction(name),
                    "window": (fig or KindFigures()).as_json(seconds),
                    "total": totals[name].as_json(seconds),
                    "per_second": series.get(name, [0] * 60),
                }
            )
        quality_rate = sum(n for s, n in self.quality_seconds if s > int(now) - 60) / 60.0
        return {
            "now": now,
            "window": window,
            "filter": {"model": model, "tenant": tenant},
            "kinds": kinds,
            **self.labels(),
            "records": dict(self.records),
            "bad_records": dict(self.bad_records),
            "duplicates": self.duplicates,
            "held": len(self._held),
            "lag": dict(self.lag),
            "dead_letter_codes": dict(self.dead_letter_codes.most_common()),
            "limits": dataclasses.asdict(self.limits),
            "memory": {
                "texts": len(self._texts),
                "texts_bytes": self._texts.bytes,
                "evidence": len(self._evidence),
                "evidence_bytes": self._evidence.bytes,
            },
            "judge": {
                "verdicts": dict(self.judge_priorities),
                "tokens_total": self.judge_tokens,
                "tokens_last_minute": sum(n for t, n in self.judge_seconds if t > int(now) - 60),
                "tokens_in_window": sum(n for t, n in self.judge_seconds if t > int(now) - window),
                "budget": dict(self.judge_budget) if self.judge_budget is not None else None,
            },
            "quality": {
                "rows": self.records.get(DOC_QUALITY, 0),
                "documents": len(self.quality_docs),
                "documents_capped": self.quality_docs_capped,
                "last_age": None if self.quality_last is None else now - self.quality_last,
                "rows_per_second": quality_rate,
            },
        }

    def failures_since(
        self,
        seq: int,
        model: str,
        tenant: str,
        limit: int,
        *,
        decision: str = ALL,
        kind: str = ALL,
    ) -> list[dict[str, Any]]:
        """Published failures after ``seq`` for a model, tenant, decision and kind (``*``: any),
        the latest ``limit`` of them, oldest first."""

        def keep(item: Mapping[str, Any]) -> bool:
            return (
                _matches(("", item["model"], item["tenant"]), model, tenant)
                and decision in (ALL, item["decision"])
                and kind in (ALL, item["kind"])
            )

        return self.failures.since(seq, limit, keep)

    def feeds(self) -> Iterator[tuple[str, Feed]]:
        yield "failures", self.failures
        yield "alerts", self.alerts
        yield "dead_letters", self.dead_letters
        yield "quality", self.quality


class BoundedStore(Generic[V]):
    """The latest entries by key, the oldest dropped beyond ``items`` entries or ``max_bytes``
    (each entry weighed by ``size``)."""

    def __init__(self, items: int, max_bytes: int, size: Callable[[V], int]) -> None:
        self.items = items
        self.max_bytes = max_bytes
        self.size = size
        self.bytes = 0
        self._entries: OrderedDict[str, tuple[V, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> V | None:
        entry = self._entries.get(key)
        return None if entry is None else entry[0]

    def put(self, key: str, value: V) -> None:
        """Put ``key`` last, then drop the oldest entries beyond the limits."""
        old = self._entries.pop(key, None)
        if old is not None:
            self.bytes -= old[1]
        weight = self.size(value) + len(key)
        self._entries[key] = (value, weight)
        self.bytes += weight
        while self._entries and (len(self._entries) > self.items or self.bytes > self.max_bytes):
            _, (_, dropped) = self._entries.popitem(last=False)
            self.bytes -= dropped


def _reasons(value: Any) -> list[Any]:
    """A verdict's reasons as the page shows them: at most ten, each detail cut short."""
    if not isinstance(value, list):
        return []
    out = []
    for reason in value[:10]:
        if isinstance(reason, Mapping):
            out.append({k: str(v)[:PREVIEW_CHARS] for k, v in list(reason.items())[:4]})
    return out


def _utf8_size(text: str) -> int:
    """Bytes a text takes at most in memory, near enough: 4 per character beyond Latin-1."""
    return len(text) if text.isascii() else 4 * len(text)


def _matches(key: Key, model: str, tenant: str) -> bool:
    return (model == ALL or key[1] == model) and (tenant == ALL or key[2] == tenant)
