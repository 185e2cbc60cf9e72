"""The dialogue set of issue 31 runs in the suite: turns that claim nothing DEFER, and the
faithfulness verdict separates faithful from unfaithful conversational answers at least as
well as groundedness (figures: docs/verdicts/faithfulness.md, "Dialogue")."""

from __future__ import annotations

from collections import Counter

from tests.support.paths import ROOT, load_script

bench = load_script(ROOT / "bench" / "dialogue_probe.py")


def test_the_set_is_balanced_and_covers_conversational_kinds() -> None:
    turns = bench.load_turns()
    labels = Counter(t["label"] for t in turns)
    assert labels[1] == labels[0] >= 20
    assert labels[None] >= 4
    kinds = {t["category"] for t in turns}
    assert {"chitchat", "question_back", "hedged", "personal", "swap", "no_claim"} <= kinds


def test_no_claim_turns_defer_and_faithfulness_ranks_best() -> None:
    figures = bench.probe(bench.load_turns())["figures"]
    faithfulness = figures["faithfulness"]
    assert set(faithfulness["no_claim"]) == {"DEFER"}
    assert faithfulness["roc_auc"] >= 0.90
    assert faithfulness["roc_auc"] > figures["groundedness"]["roc_auc"]
    passed, total = map(int, faithfulness["faithful_pass"].split("/"))
    assert passed >= total - 3  # pleasantries and questions back no longer fail an answer
