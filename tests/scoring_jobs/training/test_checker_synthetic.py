"""The checker's document claims (issue 43): each rule on real parses, every family from a few
real documents with the target its rule gives, the claim found (or not) in its chunk as the
rule says, the same pairs from the same files, and the pairs file read back as written."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import SHARED_DATA
from verdictflow.nlp import load_pipeline
from verdictflow.scoring_jobs.training.checker_pairs import dump_pairs, read_pairs
from verdictflow.scoring_jobs.training.checker_synthetic import (
    _compressed,
    _entity_swap,
    _negation_add,
    _number_change,
    document_claims,
)

needs_data = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data not present")


@pytest.fixture(scope="module")
def nlp() -> Any:
    return load_pipeline()


def test_each_rule_changes_what_it_names(nlp: Any) -> None:
    sent = next(iter(nlp("Marie Curie won the Nobel Prize in 1903 with Pierre Curie.").sents))
    swapped = _entity_swap(sent, {"PERSON": ["Lise Meitner"], "DATE": ["1911"]}, random.Random(1))
    assert swapped is not None
    assert swapped != sent.text
    assert swapped.replace("Lise Meitner", "").replace("1911", "") != swapped  # from the pool
    changed = _number_change("The trial enrolled 120 patients.", random.Random(0))
    assert changed is not None
    assert changed != "The trial enrolled 120 patients."
    assert changed.startswith("The trial enrolled ")
    assert changed.endswith(" patients.")
    assert _number_change("No figures here.", random.Random(0)) is None
    negated = _negation_add(next(iter(nlp("The drug was approved in 2020.").sents)))
    assert negated == "The drug was not approved in 2020."
    assert _negation_add(next(iter(nlp("The drug was not approved.").sents))) is None
    assert _compressed("The drug (a statin) cut deaths by a third, which surprised many.") == (
        "The drug cut deaths by a third."
    )
    assert _compressed("Short one.") is None


@needs_data
def test_document_claims_follow_their_rules_and_repeat(nlp: Any, tmp_path: Path) -> None:
    pairs, files = document_claims(SHARED_DATA, nlp, limit=12, seed=5)
    again, _ = document_claims(SHARED_DATA, nlp, limit=12, seed=5)
    assert pairs == again
    assert "corpus.jsonl" in files
    kinds = {p.set_name.removeprefix("documents-") for p in pairs}
    assert kinds >= {"verbatim", "perturbed", "missing", "foreign"}
    for pair in pairs:
        kind = pair.set_name.removeprefix("documents-")
        assert pair.target == (1.0 if kind in ("verbatim", "compressed", "fused") else 0.0)
        if kind == "verbatim":
            assert pair.claim in pair.chunk
        if kind in ("missing", "foreign"):
            assert pair.claim not in pair.chunk
    verbatim = {p.claim for p in pairs if p.set_name == "documents-verbatim"}
    for pair in pairs:  # both sentences of a fused claim are in its chunk
        if pair.set_name == "documents-fused":
            first = next(v for v in verbatim if pair.claim.startswith(v + " "))
            assert first in pair.chunk
            assert pair.claim[len(first) + 1 :] in pair.chunk
    assert not verbatim & {p.claim for p in pairs if p.set_name == "documents-perturbed"}
    path = tmp_path / "pairs.jsonl.xz"
    assert dump_pairs(pairs, path) == len(pairs)
    assert read_pairs(path) == pairs
