"""The sample traffic's real verdicts (scored by the package, spaCy included), for the console's
tests: computed once per session."""

from __future__ import annotations

import orjson
import pytest

from verdictflow.dev import sample_path
from verdictflow.evaluators.policy import load_policy
from verdictflow.scoring_jobs.batch.eval_answers import expected_verdicts
from verdictflow.scoring_setup import load_scoring
from verdictflow.streams.replay import read_lines


@pytest.fixture(scope="session")
def sample_lines() -> list[bytes]:
    return read_lines(sample_path())


@pytest.fixture(scope="session")
def sample_verdicts(sample_lines: list[bytes]) -> list[bytes]:
    """Every verdict of the bundled sample answers, encoded as a worker sends them."""
    return list(expected_verdicts(sample_lines, load_scoring(load_policy(None))).values())


def find(verdicts: list[bytes], kind: str, input_id: str) -> dict[str, object]:
    for raw in verdicts:
        v = orjson.loads(raw)
        if v["kind"] == kind and v["input_id"] == input_id:
            return dict(v)
    raise AssertionError(f"no {kind} verdict for {input_id}")
