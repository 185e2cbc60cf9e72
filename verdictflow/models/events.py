"""Input events, as they arrive on the input topics.

Unknown fields are ignored (producers may add fields before consumers know them); known fields
are validated without coercing across types, so ``"answer": 42`` is rejected, not stringified.
Size limits protect the worker: a single oversized field is a dead letter, not an OOM.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

MAX_ID_CHARS = 256
MAX_TEXT_CHARS = 200_000
MAX_ITEMS = 64

Id = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS)]
OptId = Annotated[str, StringConstraints(max_length=MAX_ID_CHARS)] | None
Text = Annotated[str, StringConstraints(max_length=MAX_TEXT_CHARS)]


#: Event times accepted, in epoch seconds: 1970-01-01 to 2200-01-01 (UTC). Anything else is
#: a producer's bug (milliseconds sent as seconds, a sentinel like 1e308 or year 9999), and
#: every consumer of times (the ledger's day files, drift windows) would choke on or misfile
#: it, so the record is dead-lettered at the edge with the reason (docs/architecture.md,
#: decision 10).
MIN_TS = 0.0
MAX_TS = 7_258_118_400.0


class _Event(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    @field_validator("ts", mode="before", check_fields=False)
    @classmethod
    def _ts_to_epoch(cls, value: object) -> object:
        """Accept epoch seconds or an ISO-8601 string (UTC when it names no offset, so the
        same record gives the same time on every machine); store epoch seconds (a float)."""
        if isinstance(value, str):
            try:
                moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError as exc:
                raise ValueError(
                    f"ts is neither epoch seconds nor ISO-8601: {value[:64]!r}"
                ) from exc
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            try:
                return moment.timestamp()
            except (OverflowError, ValueError, OSError) as exc:
                raise ValueError(f"ts {value[:64]!r} is out of range") from exc
        return value

    @field_validator("ts", mode="after", check_fields=False)
    @classmethod
    def _ts_in_range(cls, value: float | None) -> float | None:
        if value is not None and not MIN_TS <= value <= MAX_TS:
            raise ValueError(
                f"ts {value!r} is outside 1970-01-01..2200-01-01 (epoch seconds {MIN_TS:.0f} to "
                f"{MAX_TS:.0f}); milliseconds sent as seconds?"
            )
        return value


class Context(BaseModel):
    """One evidence passage. Contexts may also be sent as bare strings."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    doc_id: OptId = None
    text: Text


class AnswerEvent(_Event):
    """A model answer with the contexts it was given (topic ``answers``, key request_id or id).

    The consistency set of a request is the answer plus its inline ``variants``, and the answers
    of other events sharing ``request_id``; collection stops at ``expected_variants``.
    """

    id: Id
    request_id: OptId = None
    query: Text = ""
    answer: Text
    # default_factory, not ``= []``: pydantic deep-copies a mutable default on every event
    # that omits the field (6 % of the lexical tier's time); the schema still says [].
    contexts: Annotated[list[Context | Text], Field(max_length=MAX_ITEMS)] = Field(
        default_factory=list, json_schema_extra={"default": []}
    )
    variants: Annotated[list[Text], Field(max_length=MAX_ITEMS)] = Field(
        default_factory=list, json_schema_extra={"default": []}
    )
    expected_variants: Annotated[int, Field(ge=1, le=MAX_ITEMS + 1)] | None = None
    model: OptId = None
    tenant: OptId = None
    group: OptId = None
    ts: float | None = None
    #: Set for an answer assembled from a trace (``verdictflow ingest``): its trace and LLM
    #: span, which every verdict of the answer carries (hex, as OTLP/JSON writes them).
    trace_id: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{32}$")] | None = None
    span_id: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{16}$")] | None = None

    @property
    def context_passages(self) -> list[Context]:
        """Contexts normalised to :class:`Context` objects, in order."""
        return [c if isinstance(c, Context) else Context(text=c) for c in self.contexts]

    @property
    def group_key(self) -> str:
        """The key that ties variants of one request together (request_id, else id)."""
        return self.request_id or self.id


class SummaryEvent(_Event):
    """An article and a model summary of it, for the summary judges (topic ``summaries``)."""

    id: Id
    article: Text
    summary: Text
    judges: list[Literal["twin_lock", "judge_lock"]] | None = None
    model: OptId = None
    tenant: OptId = None
    ts: float | None = None


class DocUpdate(_Event):
    """A document upsert or delete (topic ``docs``, key doc_id)."""

    doc_id: Id
    op: Literal["upsert", "delete"] = "upsert"
    text: Text = ""
    vector: list[float] | None = None
    lane: OptId = None
    version: int | None = None
    ts: float | None = None


class EdgeEvent(_Event):
    """An edge of the knowledge graph between two documents (topic ``doc-edges``, key src)."""

    src: Id
    dst: Id
    op: Literal["add", "remove"] = "add"
    ts: float | None = None
