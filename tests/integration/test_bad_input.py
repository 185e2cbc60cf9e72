"""2,000 generated malformed payloads (10,000 with ``VERDICTFLOW_TEST_SOAK=1``) interleaved
with valid answers, through a real worker: every malformed one is dead-lettered with its
reason, every valid one scored, the worker stays up and its memory stays flat.

Payloads (Hypothesis, derandomized): wrong types, truncated JSON, invalid UTF-8, nesting past
orjson's 1024 levels, JSON that is not an object, text fields over 200,000 characters, and
records over the worker's 1,000,000-byte limit but under the broker's (~1 MiB) one.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter

import pytest

from tests.support.malformed import malformed_mix
from tests.support.reliability import OutputCollector, expected_verdict_ids, rss_kib, soak_size
from verdictflow.evaluators.policy import load_policy
from verdictflow.exceptions import InvalidEvent
from verdictflow.models.codec import decode
from verdictflow.models.dead_letter import RAW_PREVIEW_CHARS
from verdictflow.models.events import AnswerEvent
from verdictflow.samples.traffic import generate
from verdictflow.scoring_setup import load_scoring
from verdictflow.streams.replay import replay

pytestmark = pytest.mark.broker

#: Kafka's default record limit (message.max.bytes 1,048,588 and the clients' 1 MiB
#: max.request.size) less room for the record's own framing.
BROKER_RECORD_LIMIT = 1_040_000
#: Malformed payloads of each kind at the soak size (10,000 in all).
SOAK_COUNTS = {
    "wrong_types": 2600,
    "truncated_json": 2000,
    "invalid_utf8": 2000,
    "deep_nesting": 1500,
    "not_an_object": 1750,
    "huge_field": 100,
    "oversized": 50,
}
#: Share of the soak size that ``make test`` replays (2,000 malformed, 200 valid).
SCALE = soak_size(full=100, quick=20) / 100
COUNTS = {kind: round(n * SCALE) for kind, n in SOAK_COUNTS.items()}
MALFORMED = sum(COUNTS.values())
VALID = MALFORMED // 10
#: Loose bound on RSS growth between the two halves of the replay: a leak per record
#: (thousands of records, some of them 100 KB-1 MB) would exceed it many times over.
MAX_RSS_GROWTH_KIB = 96 * 1024


def offline_code(payload: bytes, max_bytes: int) -> str:
    try:
        decode(payload, AnswerEvent, max_bytes=max_bytes)
    except InvalidEvent as exc:
        return exc.code
    raise AssertionError(f"generated payload is valid: {payload[:200]!r}")


@pytest.mark.timeout(900)
def test_malformed_payloads_are_dead_lettered_and_valid_ones_scored(
    settings_factory, worker_factory
):
    settings = settings_factory()
    malformed = malformed_mix(COUNTS, settings.max_event_bytes, BROKER_RECORD_LIMIT)
    assert len(malformed) == MALFORMED
    codes = Counter(offline_code(p, settings.max_event_bytes) for p in malformed)
    assert {"schema", "not_json", "invalid_utf8", "too_deep", "not_object", "oversized"} <= set(
        codes
    )
    valid = generate(VALID, seed=3).lines
    lines: list[bytes] = []
    is_malformed: list[bool] = []
    for i, payload in enumerate(malformed):
        lines.append(payload)
        is_malformed.append(True)
        if i % 10 == 9:
            lines.append(valid[i // 10])
            is_malformed.append(False)
    digest = load_scoring(load_policy(None)).ctx.config_digest
    expected = expected_verdict_ids(valid, digest)
    half = len(lines) // 2
    first_valid = expected_verdict_ids(lines[:half], digest)
    first_dead = sum(is_malformed[:half])

    worker = worker_factory(settings)
    alive = lambda: worker.proc.poll() is None  # noqa: E731
    with OutputCollector(settings) as out:
        asyncio.run(replay(lines[:half], "answers", settings))
        assert out.wait_until(
            lambda: len(out.verdicts) >= len(first_valid) and len(out.dead) >= first_dead,
            timeout=400,
            alive=alive,
        ), worker.log()[-3000:]
        rss_after_first_half = rss_kib(worker.proc.pid)
        asyncio.run(replay(lines[half:], "answers", settings))
        assert out.wait_until(
            lambda: len(out.verdicts) >= len(expected) and len(out.dead) >= len(malformed),
            timeout=400,
            alive=alive,
        ), worker.log()[-3000:]
        out.settle()
        rss_at_end = rss_kib(worker.proc.pid)
    assert alive(), worker.log()[-3000:]

    assert out.verdicts.keys() == expected, "a valid answer lacks a verdict, or an extra one"
    assert Counter(d["raw_sha256"] for d in out.dead) == Counter(
        hashlib.sha256(p).hexdigest() for p in malformed
    ), "every malformed payload has exactly one dead letter"
    assert Counter(d["error_code"] for d in out.dead) == codes
    assert all(d["error"] for d in out.dead), "a dead letter without a reason"
    big = [d for d in out.dead if d["error_code"] == "oversized"]
    assert big, "no oversized record reached the worker"
    assert all(len(d["raw"]) <= RAW_PREVIEW_CHARS < d["raw_size"] for d in big)
    growth = rss_at_end["VmRSS"] - rss_after_first_half["VmRSS"]
    assert growth < MAX_RSS_GROWTH_KIB, (
        f"worker RSS grew by {growth} KiB over {len(lines) - half} records"
    )
    print(
        f"{len(lines)} records replayed ({len(malformed)} malformed, {len(valid)} valid): "
        f"{len(out.dead)} dead letters {dict(sorted(codes.items()))}, "
        f"{len(out.verdicts)} verdicts; worker RSS {rss_after_first_half['VmRSS'] // 1024} MiB "
        f"after the first half, {rss_at_end['VmRSS'] // 1024} MiB at the end, "
        f"peak {rss_at_end['VmHWM'] // 1024} MiB"
    )
