"""Dead-letter records: every input that could not be scored, with where it came from and why."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

RAW_PREVIEW_CHARS = 4096


class DeadLetter(BaseModel):
    """One rejected record. ``raw`` is the value decoded as UTF-8 with invalid bytes escaped,
    truncated to :data:`RAW_PREVIEW_CHARS`; ``raw_size`` is the original size in bytes, so an
    operator can find the record at ``source_topic[partition]@offset`` and see why it failed.
    """

    model_config = ConfigDict(frozen=True)

    schema_version: int = 1
    source_topic: str
    partition: int | None
    offset: int | None
    key: str | None
    error_code: str
    error: str
    raw: str
    raw_size: int
    ts: float | None

    @staticmethod
    def preview(raw: bytes | None) -> str:
        """A bounded, always-valid text preview of arbitrary bytes."""
        if raw is None:
            return ""
        return raw[: RAW_PREVIEW_CHARS * 4].decode("utf-8", "backslashreplace")[:RAW_PREVIEW_CHARS]
