"""Records shaped like the QA probe's heavy one: a long answer listing people, organisations,
places, dates and sums, with many contexts listing similar facts (every sentence shares most
of its words with every other: the worst case for sentence alignment)."""

from __future__ import annotations

import random

import orjson

FIRST = [
    "Alice",
    "Bruno",
    "Carla",
    "Dmitri",
    "Elena",
    "Farid",
    "Grace",
    "Hiroshi",
    "Ines",
    "Jamal",
    "Kofi",
    "Lena",
    "Marco",
]
LAST = [
    "Anders",
    "Baker",
    "Costa",
    "Dubois",
    "Eriksen",
    "Fischer",
    "Garcia",
    "Haddad",
    "Ivanova",
    "Jensen",
    "Kowalski",
]
CITIES = [
    "Lisbon",
    "Oslo",
    "Nairobi",
    "Lima",
    "Hanoi",
    "Quito",
    "Dakar",
    "Perth",
    "Osaka",
    "Porto",
    "Riga",
    "Tunis",
]
ORGS = ["Acme Corp", "Globex", "Initech", "Umbrella Group", "Hooli", "Vandelay Industries"]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
]


def facts(chars: int, rng: random.Random) -> str:
    """Sentences of facts, ``chars`` characters or a little more."""
    out: list[str] = []
    size = 0
    while size < chars:
        sentence = (
            f"{rng.choice(FIRST)} {rng.choice(LAST)} joined {rng.choice(ORGS)} in "
            f"{rng.choice(CITIES)} on {rng.randint(1, 28)} {rng.choice(MONTHS)} "
            f"{rng.randint(1950, 2024)} and raised {rng.randint(1, 999)} million dollars."
        )
        out.append(sentence)
        size += len(sentence) + 1
    return " ".join(out)


def heavy_answer(
    event_id: str, answer_chars: int, context_chars: int, contexts: int, seed: int = 7
) -> bytes:
    """One answer event of about ``answer_chars`` + ``contexts`` x ``context_chars``."""
    rng = random.Random(seed)
    return orjson.dumps(
        {
            "id": event_id,
            "request_id": event_id,
            "query": "Who joined which company, where and when?",
            "answer": facts(answer_chars, rng),
            "contexts": [facts(context_chars, rng) for _ in range(contexts)],
        }
    )
