"""Layout-1 changelogs are read back to their newest value per key, and each key goes to the
partition of its records (pure parts; the broker round trip is in test_rebalance)."""

from __future__ import annotations

import orjson
from aiokafka.partitioner import DefaultPartitioner

from verdictflow.streams.records import key_partition
from verdictflow.streams.table_migration import changelog, latest_values


def test_newest_value_per_key_and_tombstones_remove() -> None:
    k = orjson.dumps
    records = [
        (0, k("rq-1"), b'{"n":1}'),
        (0, k("rq-2"), b'{"n":1}'),
        (0, k("rq-1"), b'{"n":2}'),
        (1, k("rq-3"), b'{"n":1}'),
        (1, k("rq-3"), None),
        (1, None, b"ignored"),
    ]
    assert latest_values(records) == {"rq-1": b'{"n":2}', "rq-2": b'{"n":1}'}


def test_keys_go_where_the_default_partitioner_puts_their_records() -> None:
    keys = [f"rq-{i:02d}".encode() for i in range(200)]
    parts = list(range(4))
    assert [key_partition(key, 4) for key in keys] == [
        DefaultPartitioner()(key, parts, parts) for key in keys
    ]
    # The bug migrated away from: hashing the JSON-quoted key moves most keys elsewhere.
    moved = sum(
        key_partition(key, 4) != key_partition(orjson.dumps(key.decode()), 4) for key in keys
    )
    assert moved > 100


def test_changelog_names_carry_the_layout() -> None:
    assert (
        changelog("vf-worker", "consistency-groups") == "vf-worker-consistency-groups-v2-changelog"
    )
