"""What people say about verdicts (issue 44): the review queue's entries and the labels.

- :class:`ReviewEntry` (topic ``internal.review-queue``, compacted, key: the input id): one
  sampled input with its text and every verdict the console has seen on it, so the queue
  survives a console restart and ``verdictflow labels export`` can write the texts beside the
  labels.
- :class:`ReviewLabel` (topic ``labels``, compacted, key: :func:`label_key`, input id + kind +
  reviewer): one reviewer's word on one verdict. Relabelling writes the same key, so the
  latest label of a reviewer replaces their earlier one (on the topic by compaction, in every
  reader by key).

A label says what the verdict **should have decided** (``expected``: ``pass`` or ``fail``; for
``faithfulness`` and ``faithfulness_llm``, supported or not); ``agrees`` is whether that is the
decision the verdict made (None for a DEFER, which decided nothing). The reviewed verdict's id,
decision, score and config digest travel with the label, so agreement can be computed per
configuration and a label never silently moves to a re-scored verdict.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from verdictflow.models.events import MAX_ID_CHARS, Id, OptId

LABEL_SCHEMA_VERSION = 1
#: Characters of a reviewer's note kept.
MAX_NOTE_CHARS = 2000

Expected = Literal["pass", "fail"]
Role = Literal["viewer", "reviewer", "admin"]
#: A reviewer's name: what labels, logs and the page show.
NAME_PATTERN = r"^[A-Za-z0-9_.@-]{1,64}$"
Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReviewLabel(_Frozen):
    """One reviewer's label on one verdict (see the module docstring)."""

    schema_version: int = LABEL_SCHEMA_VERSION
    input_id: Id
    #: The verdict's series: its kind, or ``judge.<judge>`` / ``judge_llm.<judge>``.
    kind: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    tier: str | None
    reviewer: Name
    role: Role
    #: When the label was given (Unix seconds, the console's clock): labels are people's
    #: events, not scores, so a wall-clock time is what they are windowed by.
    labelled_at: float
    verdict_id: Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS)]
    config_digest: str
    decision: Literal["PASS", "FAIL", "DEFER"]
    score: float | None
    expected: Expected
    agrees: bool | None
    note: Annotated[str, StringConstraints(max_length=MAX_NOTE_CHARS)] = ""
    model: OptId = None
    tenant: OptId = None

    @property
    def key(self) -> str:
        return label_key(self.input_id, self.kind, self.reviewer)


def label_key(input_id: str, kind: str, reviewer: str) -> str:
    """The topic key of a label: one per (input, kind, reviewer), so relabelling replaces."""
    return f"{input_id}\x1f{kind}\x1f{reviewer}"


class ReviewedVerdict(_Frozen):
    """A verdict as the queue keeps it: what a reviewer reads, not the whole evidence."""

    verdict_id: str
    kind: str
    tier: str | None
    decision: Literal["PASS", "FAIL", "DEFER"]
    score: float | None
    threshold: float | None
    config_digest: str
    reasons: list[dict[str, str]] = []
    #: Spans of the answer the evidence marks (the console's highlight marks, as JSON).
    marks: list[dict[str, Any]] = []


class ReviewEntry(_Frozen):
    """One input in the review queue (topic ``internal.review-queue``, key: ``input_id``)."""

    schema_version: int = LABEL_SCHEMA_VERSION
    input_id: Id
    #: When a console first queued it (its clock): the queue's order, then ``input_id``.
    queued_at: float
    #: Why it came to people: ``fail``, ``band``, ``disagreement``, ``pass_sample`` (sorted).
    sampled: list[str]
    #: The answer event as it was on ``answers`` (query, answer, contexts, model, tenant, ...).
    event: dict[str, Any]
    verdicts: list[ReviewedVerdict] = Field(default_factory=list)
    model: OptId = None
    tenant: OptId = None


class LabelledItem(_Frozen):
    """One row of ``verdictflow labels export`` (JSONL): the input event, one verdict on it, and
    every reviewer's latest label on that verdict's kind."""

    input_id: Id
    kind: str
    tier: str | None
    model: OptId = None
    tenant: OptId = None
    event: dict[str, Any]
    verdict: ReviewedVerdict
    labels: list[ReviewLabel]
