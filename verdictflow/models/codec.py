"""orjson encoding of topic values and the validating decoder used by every agent.

Decoding turns any malformed record into :class:`InvalidEvent` with a typed code, so the agent
has exactly one error path (to the dead-letter topic) and never crashes on input.
"""

from __future__ import annotations

from typing import TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from verdictflow.exceptions import InvalidEvent
from verdictflow.models.verdicts import Reason, Verdict

M = TypeVar("M", bound=BaseModel)

DEFAULT_MAX_EVENT_BYTES = 1_000_000
_MAX_ERRORS_SHOWN = 3


def encode(model: BaseModel) -> bytes:
    """Serialise a model to compact JSON bytes, fields in declaration order.

    pydantic-core writes the JSON: byte for byte what ``orjson.dumps(model.model_dump(
    mode="json"))`` wrote before (floats, NaN as null, non-ASCII, escapes; checked on 900,000
    floats and every verdict kind, and kept so by ``tests/models/test_codec.py``) in half the
    time. Its serializer is asked for bytes directly: ``model_dump_json`` gives the same bytes
    as a string to be encoded again.

    A :class:`~verdictflow.models.verdicts.Verdict` (four an answer in the lexical tier) is
    written by orjson from its fields as they are, in a third of the time (2 against 6 us):
    its fields are JSON types, enums (written as their values by both) and reasons, whose
    fields are given to orjson as they are too. Anything in the evidence whose JSON the two
    writers could write differently (a date, a dataclass, a set, an integer past 64 bits, a key
    that is not a string) makes orjson give up, and pydantic-core writes the verdict instead:
    a property test holds the two writers equal on any evidence."""
    if type(model) is Verdict:
        try:
            return orjson.dumps(model.__dict__, default=_reason_fields, option=_AS_IS)
        except TypeError:
            pass
    return type(model).__pydantic_serializer__.to_json(model)


#: Dates and dataclasses go to ``default`` (which refuses them) instead of orjson's writer.
_AS_IS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def _reason_fields(value: object) -> dict[str, object]:
    if type(value) is Reason:
        return value.__dict__
    raise TypeError(f"{type(value).__name__} is left to pydantic-core")


def decode(raw: bytes | None, model: type[M], *, max_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> M:
    """Parse and validate one record value, or raise :class:`InvalidEvent`."""
    if raw is None or len(raw) == 0:
        raise InvalidEvent("empty", "record has no value")
    if len(raw) > max_bytes:
        raise InvalidEvent("oversized", f"value is {len(raw)} bytes, limit is {max_bytes}")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidEvent(_json_error_code(raw, exc), str(exc)[:300]) from None
    if not isinstance(data, dict):
        raise InvalidEvent("not_object", f"expected a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidEvent("schema", summarize_validation_error(exc)) from None


def _json_error_code(raw: bytes, exc: orjson.JSONDecodeError) -> str:
    """Why a value is not JSON, as a dead-letter code.

    orjson stops at the first error it meets, so invalid UTF-8 after a syntax error would be
    reported as ``not_json``; the bytes are checked on this (rare) error path so that every
    value that is not UTF-8 gets ``invalid_utf8``. ``too_deep``: nesting beyond orjson's limit
    of 1024 levels (it refuses rather than exhaust the stack).
    """
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return "invalid_utf8"
    if "depth limit" in str(exc).lower() or "recursion" in str(exc).lower():
        return "too_deep"
    return "not_json"


def summarize_validation_error(exc: ValidationError) -> str:
    """First few field errors as ``loc: message``, short enough for a dead-letter record."""
    parts = []
    for err in exc.errors()[:_MAX_ERRORS_SHOWN]:
        loc = ".".join(str(p) for p in err["loc"]) or "<root>"
        parts.append(f"{loc}: {err['msg']}")
    more = exc.error_count() - _MAX_ERRORS_SHOWN
    if more > 0:
        parts.append(f"(+{more} more)")
    return "; ".join(parts)
