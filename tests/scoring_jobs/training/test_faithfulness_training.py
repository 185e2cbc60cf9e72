"""train-faithfulness: deterministic bytes, sensible weights, clear errors."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.support.paths import SHARED_DATA
from tests.support.processes import run_verdictflow
from verdictflow.evaluators.faithfulness_model import FaithfulnessModel, model_bytes
from verdictflow.scoring_jobs.training.faithfulness_data import halueval, summedits
from verdictflow.scoring_jobs.training.faithfulness_training import featurise, fit, predict
from verdictflow.scoring_jobs.training.labelled_sets import LabelledSet

needs_data = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data not present")


def head(labelled: LabelledSet, n: int) -> LabelledSet:
    return dataclasses.replace(
        labelled,
        events=labelled.events[:n],
        targets=labelled.targets[:n],
        splits=labelled.splits[:n],
        groups=labelled.groups[:n],
    )


@needs_data
def test_training_twice_writes_the_same_bytes_and_records_its_data() -> None:
    sets = featurise([head(halueval(SHARED_DATA), 160), head(summedits(SHARED_DATA, "news"), 120)])
    first, second = fit(sets), fit(sets)
    assert model_bytes(first) == model_bytes(second)
    assert first.digest == second.digest
    training = json.loads(model_bytes(first))["training"]
    assert [s["name"] for s in training["sets"]] == ["halueval-qa", "summedits-news"]
    assert len(training["sets"][0]["files"]["qa_data_first1000.json"]) == 64  # its SHA-256
    assert 0.0 < first.threshold < 1.0
    # Reloading the written bytes gives the same model (the file is all there is).
    reloaded = FaithfulnessModel.from_bytes(model_bytes(first), "x")
    assert reloaded.factors == first.factors


@needs_data
def test_the_fitted_model_ranks_right_answers_above_hallucinated_ones() -> None:
    (item,) = featurise([head(halueval(SHARED_DATA), 200)])
    model = fit([item])
    predicted = predict(model, item.signals)
    right = predicted[item.targets == 1.0].mean()
    hallucinated = predicted[item.targets == 0.0].mean()
    assert right > hallucinated + 0.2


def test_unknown_sets_and_missing_data_are_clear_errors(tmp_path) -> None:
    bad = run_verdictflow("train-faithfulness", "--sets", "vibes", "--out", str(tmp_path / "m"))
    assert bad.returncode == 2
    assert "unknown set(s) vibes" in bad.stderr
    missing = run_verdictflow(
        "train-faithfulness", "--data", str(tmp_path), "--sets", "halueval-qa", "--out",
        str(tmp_path / "m"),
    )  # fmt: skip
    assert missing.returncode == 2
    assert "qa_data_first1000.jsonnotfound" in "".join(missing.stderr.split())  # rich wraps
    assert not (tmp_path / "m").exists()


def test_training_does_not_need_a_loadable_packaged_model(monkeypatch) -> None:
    """After a change of signals the packaged file no longer loads; featurising for its own
    retraining falls back to a neutral model (signals read no model)."""
    from verdictflow.evaluators.faithfulness_model import FaithfulnessModelError
    from verdictflow.scoring_jobs.training import faithfulness_training

    real = faithfulness_training.load_scoring

    def stale_packaged_model(policy, idf_stats):
        if policy.faithfulness.model == "default":
            raise FaithfulnessModelError("the packaged faithfulness model is stale")
        return real(policy, idf_stats)

    monkeypatch.setattr(faithfulness_training, "load_scoring", stale_packaged_model)
    scoring = faithfulness_training._featurising_scoring()
    assert all(w == 0.0 for f in scoring.ctx.faithfulness.factors for w in f.weights)
