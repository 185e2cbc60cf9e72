"""Dead-letter records: every input that could not be scored, with where it came from and why."""

from __future__ import annotations

import hashlib

from pydantic import BaseModel, ConfigDict

RAW_PREVIEW_CHARS = 4096


class DeadLetter(BaseModel):
    """One rejected record. ``raw`` is the value decoded as UTF-8 with invalid bytes escaped,
    truncated to :data:`RAW_PREVIEW_CHARS`; ``raw_size`` is the original size in bytes and
    ``raw_sha256`` the digest of the whole value, so an operator can find the record at
    ``source_topic[partition]@offset``, see why it failed, and match it to a producer's copy
    even when the preview is cut. The preview keeps a dead letter of any input (up to the
    broker's record limit) a few KiB, so it always fits on the dead-letter topic.
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
    raw_sha256: str
    ts: float | None

    @staticmethod
    def digest(raw: bytes | None) -> str:
        """Hex SHA-256 of the whole value (of no bytes when there is none)."""
        return hashlib.sha256(raw or b"").hexdigest()

    @staticmethod
    def preview(raw: bytes | None) -> str:
        """A bounded, always-valid text preview of arbitrary bytes."""
        if raw is None:
            return ""
        return raw[: RAW_PREVIEW_CHARS * 4].decode("utf-8", "backslashreplace")[:RAW_PREVIEW_CHARS]
