"""The relation perturbation set: each kind of perturbation on real parses, pairs that differ
only where they should, and the same set from the same files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from verdictflow.nlp import load_pipeline
from verdictflow.scoring_jobs.training.relation_perturbations import (
    _comparison_flip,
    _negation_drop,
    _role_swap,
    _value_swap,
    relation_perturbations,
)


@pytest.fixture(scope="module")
def nlp() -> Any:
    return load_pipeline()


def sentence(nlp: Any, text: str) -> Any:
    return next(iter(nlp(text).sents))


def test_each_perturbation_changes_what_it_names(nlp: Any) -> None:
    assert _role_swap(sentence(nlp, "Oracle acquired Sun Microsystems in 2010.")) == (
        "Sun Microsystems acquired Oracle in 2010."
    )
    assert _role_swap(sentence(nlp, "Ann met Bob in Paris.")) is None  # symmetric verb
    swapped = _value_swap(sentence(nlp, "Alice scored 92 on the exam and Bob scored 78."))
    assert swapped == "Alice scored 78 on the exam and Bob scored 92."
    assert _comparison_flip(sentence(nlp, "The Nile is longer than the Amazon.")) == (
        "The Nile is shorter than the Amazon."
    )
    assert _negation_drop(sentence(nlp, "The board did not renew the contract.")) == (
        "The board did renew the contract."
    )


def test_the_set_pairs_verbatim_and_perturbed_sentences(nlp: Any, tmp_path: Path) -> None:
    (tmp_path / "halueval").mkdir()
    (tmp_path / "scifact_beir").mkdir()
    response = (
        "Oracle acquired Sun Microsystems in 2010 after a long review. The deal was not "
        "approved by every shareholder. Revenue was higher after the merger than before it. "
        "The company hired 300 engineers in Austin and 120 in Boston."
    )
    rows = [{"ID": "1", "user_query": "q", "chatgpt_response": response, "hallucination": "no",
             "hallucination_spans": []},
            {"ID": "2", "user_query": "q", "chatgpt_response": "Made up. " * 40,
             "hallucination": "yes", "hallucination_spans": []}]  # fmt: skip
    (tmp_path / "halueval" / "general_data.json").write_text("\n".join(json.dumps(r) for r in rows))
    (tmp_path / "scifact_beir" / "corpus.jsonl").write_text(
        json.dumps({"_id": "1", "title": "t", "text": "Mice given the drug did not gain weight."})
    )
    first = relation_perturbations(tmp_path, nlp)
    again = relation_perturbations(tmp_path, nlp)
    assert first.events == again.events
    assert first.source == "perturbations"
    kinds = {e.id.split("-")[3] for e in first.events}
    assert kinds == {"roles", "values", "comparisons", "negation"}
    for good, bad, tg, tb in zip(first.events[::2], first.events[1::2], first.targets[::2],
                                 first.targets[1::2], strict=True):  # fmt: skip
        assert (tg, tb) == (1.0, 0.0)
        context = good.context_passages[0].text
        assert good.answer in context
        assert bad.answer != good.answer
        assert "Made up" not in context  # responses labelled hallucinated are not used
