"""A driver-neutral view of one consumed record, and the dead-letter builder.

Agents turn Faust messages into :class:`Record` so the processing functions can be called the
same way from Faust, from tests and from offline tools.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from aiokafka.partitioner import murmur2

from verdictflow.exceptions import InvalidEvent
from verdictflow.models.dead_letter import DeadLetter


@dataclass(frozen=True, slots=True)
class Record:
    topic: str
    partition: int | None
    offset: int | None
    key: bytes | None
    value: bytes | None
    timestamp: float | None = None

    @classmethod
    def from_faust(cls, message: Any) -> Record:
        """From a ``faust.types.Message`` (raw key/value serializers)."""
        value = message.value
        key = message.key
        return cls(
            topic=message.topic,
            partition=message.partition,
            offset=message.offset,
            key=key if isinstance(key, bytes | None) else str(key).encode(),
            value=value if isinstance(value, bytes | None) else str(value).encode(),
            timestamp=message.timestamp,
        )

    @property
    def where(self) -> str:
        """``topic[partition]@offset``: how an operator finds the record."""
        return f"{self.topic}[{self.partition}]@{self.offset}"


@lru_cache(maxsize=65536)
def key_partition(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner (murmur2, as in the Java client and aiokafka)
    gives ``key``: where a key's records are, hence where its table state goes."""
    return int(murmur2(key) & 0x7FFFFFFF) % partitions


def dead_letter(record: Record, error: InvalidEvent, raw: bytes | None = None) -> DeadLetter:
    """The dead-letter record for an input that could not be scored; ``raw``: the bytes to
    preview instead of the record's value (an output built from it that could not be sent)."""
    value = record.value if raw is None else raw
    return DeadLetter(
        source_topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        key=record.key.decode("utf-8", "backslashreplace")[:512] if record.key else None,
        error_code=error.code,
        error=error.detail,
        raw=DeadLetter.preview(value),
        raw_size=len(value or b""),
        raw_sha256=DeadLetter.digest(value),
        ts=record.timestamp,
    )


def numbered_records(lines: Iterable[bytes], source: str) -> Iterator[Record]:
    """Non-blank lines as records of topic ``source``, numbered from 1 as offsets (so a dead
    letter names its line)."""
    for line_no, raw in enumerate(lines, start=1):
        raw = raw.rstrip(b"\r\n")
        if raw.strip():
            yield Record(topic=source, partition=None, offset=line_no, key=None, value=raw)
