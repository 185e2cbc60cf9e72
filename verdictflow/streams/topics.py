"""The topic registry: every topic verdictflow reads or writes, declared once, here.

Names carry a configurable prefix (default ``vf.``). Command-line tools accept the short name
(``answers``, ``verdicts.groundedness``) or the full one.
"""

from __future__ import annotations

from verdictflow.exceptions import TopicNameError
from verdictflow.models.verdicts import VerdictKind

ANSWERS = "answers"
SUMMARIES = "summaries"
DOCS = "docs"
DOC_EDGES = "doc-edges"
DOC_QUALITY = "doc-quality"
DEAD_LETTERS = "dead-letters"
ALERTS = "alerts"
#: Internal: answers that need collecting across events, re-keyed by request, plus close ticks.
CONSISTENCY_GROUPS = "internal.consistency-groups"
#: Internal: graph edges re-keyed to each endpoint, and duplicate re-score requests (issue 5).
DOC_QUALITY_INTERNAL = "internal.doc-quality"
#: Internal: escalated verdicts with their text, for the judge tier, keyed by content hash.
JUDGE_REQUESTS = "internal.judge-requests"
#: Internal: spans from ``verdictflow ingest``, and the assembler's close ticks, by trace id.
SPANS = "internal.spans"
#: Internal: each (alert, webhook) that ``verdictflow notify`` settled, keyed ``<alert id>/<name>``.
NOTIFY_LOG = "internal.notify-log"

#: People's labels on verdicts (issue 44), compacted, keyed input id + kind + reviewer.
LABELS = "labels"
#: Internal: the console's review queue, one entry per sampled input, compacted, by input id.
REVIEW_QUEUE = "internal.review-queue"
#: Faust tables by base name (the changelog topic is ``<app_id>-<name>-v<layout>-changelog``,
#: see :mod:`verdictflow.streams.durable_table`), each with the topics whose records write it.
#: A table's state for a key lives in the partition of that key's records in these topics.
CONSISTENCY_TABLE = "consistency-groups"
DOC_QUALITY_TABLE = "doc-quality-features"
TRACES_TABLE = "traces"
JUDGE_CACHE_TABLE = "judge-cache"
#: The tables of the worker's main app (the lexical tier).
TABLE_SOURCES: dict[str, tuple[str, ...]] = {
    CONSISTENCY_TABLE: (CONSISTENCY_GROUPS,),
    DOC_QUALITY_TABLE: (DOCS, DOC_QUALITY_INTERNAL),
    TRACES_TABLE: (SPANS,),
}
#: The judge tier's table (its own app and consumer group).
JUDGE_TABLE_SOURCES: dict[str, tuple[str, ...]] = {JUDGE_CACHE_TABLE: (JUDGE_REQUESTS,)}
#: The tables that existed in changelog layout 1, which ``migrate-tables`` moves.
LAYOUT1_TABLES = (CONSISTENCY_TABLE, DOC_QUALITY_TABLE)


def verdict_topic(kind: VerdictKind) -> str:
    return f"verdicts.{kind.value}"


VERDICT_TOPICS = tuple(verdict_topic(k) for k in VerdictKind)
INPUT_TOPICS = (ANSWERS, SUMMARIES, DOCS, DOC_EDGES)
ALL_TOPICS = (
    *INPUT_TOPICS,
    *VERDICT_TOPICS,
    DOC_QUALITY,
    DEAD_LETTERS,
    ALERTS,
    CONSISTENCY_GROUPS,
    DOC_QUALITY_INTERNAL,
    JUDGE_REQUESTS,
    SPANS,
    NOTIFY_LOG,
    LABELS,
    REVIEW_QUEUE,
)


def full_name(name: str, prefix: str) -> str:
    """The prefixed topic name for a short or already-prefixed registered name."""
    short = name[len(prefix) :] if prefix and name.startswith(prefix) else name
    if short not in ALL_TOPICS:
        known = ", ".join(ALL_TOPICS)
        raise TopicNameError(f"unknown topic {name!r}; known topics: {known}")
    return prefix + short
