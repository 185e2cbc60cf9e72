"""A worker refuses a malformed policy; every verdict records the policy (config digest) and
the environment hash, and both are stable within one environment."""

from __future__ import annotations

import orjson
import pytest

from tests.support.processes import run_verdictflow
from verdictflow.environment import environment_digest, environment_manifest
from verdictflow.evaluators.answer_verdicts import ScoringContext, score_groundedness
from verdictflow.evaluators.policy import Policy
from verdictflow.models.events import AnswerEvent


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("judge:\n  thresholds:\n    gpt_judge: 5\n", "judge.thresholds"),
        ("judge:\n  threshold: 11\n", "judge.threshold"),
        ("hallucination:\n  threshold: -0.1\n", "hallucination.threshold"),
        ("calibration:\n  groundedness: {threshold: 0.5}\n", "calibration.groundedness"),
    ],
)
def test_worker_refuses_to_start_on_a_malformed_policy(tmp_path, text, fragment):
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    # No broker at this address: the worker must fail on the policy before connecting.
    result = run_verdictflow("worker", "--policy", bad, "--broker", "kafka://127.0.0.1:1")
    assert result.returncode == 2
    assert fragment in result.stderr
    assert "invalid" in result.stderr


def test_policy_change_and_environment_are_visible_in_every_verdict(tmp_path):
    event = AnswerEvent(id="a", answer="the cat sat", contexts=["the cat"])
    default = score_groundedness(event, ScoringContext(Policy()))
    stricter = score_groundedness(
        event, ScoringContext(Policy.model_validate({"groundedness": {"threshold": 0.5}}))
    )
    assert default.config_digest != stricter.config_digest
    assert default.verdict_id != stricter.verdict_id
    assert default.environment_digest == stricter.environment_digest == environment_digest()
    assert len(environment_digest()) == 32
    assert {"python", "spacy", "scikit-learn", "verdictflow"} <= environment_manifest().keys()
    # what computes a parse or a hashed feature under spaCy's version ranges (the hashing
    # embedder's MurmurHash3 moved out of scikit-learn, whose version was recorded before)
    for name in ("thinc", "blis", "murmurhash"):
        assert environment_manifest()[name] not in ("", "absent"), name
    # A separate process (the offline eval) computes the same hash, and the same bytes as
    # this process does.
    from verdictflow.models.codec import encode
    from verdictflow.scoring_jobs.batch.eval_answers import evaluate_answers
    from verdictflow.scoring_setup import load_scoring

    line = orjson.dumps(event.model_dump(mode="json"))
    sample = tmp_path / "a.jsonl"
    sample.write_bytes(line + b"\n")
    child = run_verdictflow("eval", "answers", sample, "--idf-stats", "none")
    assert child.returncode == 0, child.stderr
    here = [o.verdict for o in evaluate_answers([line], load_scoring(Policy(), "none"))]
    assert child.stdout.encode() == b"".join(encode(v) + b"\n" for v in here if v)
    verdicts = [orjson.loads(line) for line in child.stdout.splitlines()]
    assert {v["environment_digest"] for v in verdicts} == {environment_digest()}


def test_drift_needs_a_calibrated_policy(tmp_path):
    plain = tmp_path / "plain.yaml"
    plain.write_text("groundedness:\n  threshold: 0.9\n")
    result = run_verdictflow("drift", "--policy", plain, "--broker", "kafka://127.0.0.1:1")
    assert result.returncode == 2
    assert "no calibration record" in result.stderr
