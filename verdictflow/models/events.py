"""Input events, as they arrive on the input topics.

Unknown fields are ignored (producers may add fields before consumers know them); known fields
are validated without coercing across types, so ``"answer": 42`` is rejected, not stringified.
Size limits protect the worker: a single oversized field is a dead letter, not an OOM.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

MAX_ID_CHARS = 256
MAX_TEXT_CHARS = 200_000
MAX_ITEMS = 64

Id = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS)]
OptId = Annotated[str, StringConstraints(max_length=MAX_ID_CHARS)] | None
Text = Annotated[str, StringConstraints(max_length=MAX_TEXT_CHARS)]


class _Event(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    @field_validator("ts", mode="before", check_fields=False)
    @classmethod
    def _ts_to_epoch(cls, value: object) -> object:
        """Accept epoch seconds or an ISO-8601 string; store epoch seconds (a float)."""
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError as exc:
                raise ValueError(f"ts is neither epoch seconds nor ISO-8601: {value!r}") from exc
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
    contexts: Annotated[list[Context | Text], Field(max_length=MAX_ITEMS)] = []
    variants: Annotated[list[Text], Field(max_length=MAX_ITEMS)] = []
    expected_variants: Annotated[int, Field(ge=1, le=MAX_ITEMS + 1)] | None = None
    model: OptId = None
    tenant: OptId = None
    group: OptId = None
    ts: float | None = None

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
