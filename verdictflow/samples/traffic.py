"""Deterministic synthetic answer traffic for tests, benchmarks and demos.

The mix covers every path of the answers pipeline: single answers, inline variants, variants
spread over several events (with and without ``expected_variants``) and malformed records.
Same arguments, same bytes: the generator is seeded and never reads the clock.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import orjson

_VOCABULARY = (
    "the cat sat on mat dog ran park paris capital france water boils at sea level degrees "
    "celsius moon landing apollo mission crew launched rocket orbit earth data model answer "
    "query context passage revenue grew percent quarter billion company reported profit city "
    "river bridge built century tower height meters museum opened year policy refund days"
)
_WORDS = tuple(_VOCABULARY.split())


@dataclass
class Traffic:
    """Lines to replay, and what they should produce."""

    lines: list[bytes] = field(default_factory=list)
    malformed: int = 0
    windowed_requests: int = 0


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n)).capitalize() + "."


def _answer(rng: random.Random, event_id: str, pad_to: int, **extra: object) -> dict[str, object]:
    context = _sentence(rng, 30)
    # Answers reuse context words with some noise, so scores spread over [0, 1].
    words = context.lower().rstrip(".").split()
    answer = " ".join(w if rng.random() < 0.7 else rng.choice(_WORDS) for w in words[:12])
    context_item = {"doc_id": f"doc-{rng.randrange(1000)}", "text": context}
    event: dict[str, object] = {
        "id": event_id,
        "query": _sentence(rng, 6),
        "answer": answer,
        "contexts": [context_item],
        "model": rng.choice(["m-small", "m-large"]),
        "tenant": rng.choice(["acme", "beta"]),
        **extra,
    }
    size = len(orjson.dumps(event))
    if size < pad_to:  # grow the context to the requested record size
        pad = {"doc_id": "pad", "text": _sentence(rng, (pad_to - size) // 6)}
        event["contexts"] = [context_item, pad]
    return event


def _malformed(rng: random.Random, i: int) -> bytes:
    kind = i % 5
    if kind == 0:
        return b'{"id": "bad-%d", "answer": "truncated' % i
    if kind == 1:
        return b'{"id": "bad-%d", "answer": 42, "contexts": "nope"}' % i
    if kind == 2:
        return b'{"id": "bad-%d", "answer": "\xff\xfe invalid utf-8"}' % i
    if kind == 3:
        return b'["not", "an", "object", %d]' % i
    return b'{"answer": "no id field %d"}' % i


def generate(
    n: int,
    *,
    seed: int = 7,
    pad_to: int = 0,
    malformed_every: int = 0,
    grouped_share: float = 0.0,
    windowed_share: float = 0.0,
    inline_share: float = 0.0,
) -> Traffic:
    """Exactly ``n`` lines: single answers, plus the requested shares of inline-variant events,
    3-event groups with ``expected_variants`` and 2-event groups closed only by the window."""
    rng = random.Random(seed)
    traffic = Traffic()
    i = 0
    pending: list[bytes] = []  # grouped events are interleaved with later traffic
    while len(traffic.lines) + len(pending) < n:
        i += 1
        roll = rng.random()
        room = n - len(traffic.lines) - len(pending)
        if malformed_every and i % malformed_every == 0:
            traffic.lines.append(_malformed(rng, i))
            traffic.malformed += 1
        elif roll < grouped_share and room >= 3:
            for j in range(3):
                pending.append(
                    orjson.dumps(
                        _answer(rng, f"g{i}-{j}", pad_to, request_id=f"rg{i}", expected_variants=3)
                    )
                )
        elif grouped_share <= roll < grouped_share + windowed_share and room >= 2:
            traffic.windowed_requests += 1
            for j in range(2):
                pending.append(orjson.dumps(_answer(rng, f"w{i}-{j}", pad_to, request_id=f"rw{i}")))
        elif roll < grouped_share + windowed_share + inline_share:
            variants = [_sentence(rng, 8) for _ in range(rng.randint(1, 3))]
            traffic.lines.append(
                orjson.dumps(_answer(rng, f"v{i}", pad_to, request_id=f"rv{i}", variants=variants))
            )
        else:
            traffic.lines.append(orjson.dumps(_answer(rng, f"a{i}", pad_to)))
        if pending and rng.random() < 0.5:
            traffic.lines.append(pending.pop(rng.randrange(len(pending))))
    traffic.lines.extend(pending)
    return traffic
