"""No record the worker writes may be too large to send (issue 40).

A producer refuses a record over its ``max_request_size`` with ``MessageSizeTooLargeError``;
raised from a batch's delivery, that stopped the worker without committing (as any delivery
failure must), and every restart died again on the same input: one trace of 12 retriever spans
of ~180 KB made the trace assembler write its state as one table record of ~2 MB, and no
lexical verdict was given for anyone from then on. So every record is measured *before* it is
handed to a producer, outputs (:class:`~verdictflow.streams.outbox.FaustOutbox`) and table
writes (:mod:`verdictflow.streams.durable_table`) alike, and one that would not fit raises
:class:`RecordTooLarge`: the input's fault, not the infrastructure's, so the batch loop
(:mod:`verdictflow.streams.batch_agent`) dead-letters the input that caused it (code
``record_too_large``) and goes on. Agents that can do better bound their state below the limit
themselves (the trace assembler: ``trace_max_state_bytes``).

The limit is the smaller of the worker's two producers' (Faust's ``producer_max_request_size``,
1,000,000 bytes by default; aiokafka's ``max_request_size``, 1,048,576), less room for the
record's framing, key and headers.
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from verdictflow.exceptions import VerdictflowError

#: The smaller of the worker's producers' request limits (see the module doc).
PRODUCER_MAX_BYTES = 1_000_000
#: Kept for the record batch's framing, the key and the headers.
HEADROOM_BYTES = 16 * 1024
#: The largest value (plus key and headers) a worker hands to a producer.
MAX_RECORD_BYTES = PRODUCER_MAX_BYTES - HEADROOM_BYTES


class RecordTooLarge(VerdictflowError):  # noqa: N818 - reads as what happened at call sites
    """A record the worker was about to write would exceed the producer's limit."""

    def __init__(self, what: str, size: int, limit: int = MAX_RECORD_BYTES) -> None:
        super().__init__(f"{what}: {size:,} bytes > {limit:,} (the producer's limit)")
        self.what = what
        self.size = size
        self.limit = limit


def record_size(key: bytes | str | None, value: bytes, headers: Mapping[str, bytes] | None) -> int:
    """Bytes a record takes against the limit: value, key and headers."""
    size = len(value) + len(key.encode() if isinstance(key, str) else key or b"")
    for name, header in (headers or {}).items():
        size += len(name) + len(header)
    return size


def check_record(
    topic: str, key: bytes | str | None, value: bytes, headers: Mapping[str, bytes] | None = None
) -> None:
    """Raise :class:`RecordTooLarge` for a record that would not fit."""
    size = record_size(key, value, headers)
    if size > MAX_RECORD_BYTES:
        raise RecordTooLarge(f"record for {topic}", size)


def check_table_value(table: str, key: str, value: object) -> None:
    """Raise :class:`RecordTooLarge` for a table entry whose changelog record would not fit
    (Faust serialises table values with orjson, as measured here)."""
    size = len(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)) + len(key.encode())
    if size > MAX_RECORD_BYTES:
        raise RecordTooLarge(f"table {table} entry {key[:80]!r}", size)
