"""The relation-swap probe of issue 31 runs in the suite: its pairs are well formed, and the
verdicts' figures on it are pinned where they stand, so a change that makes relations less
visible fails here, and one that makes them visible shows (then raise the pins).

Figures on 2026-11-25 (``python bench/relation_probe.py``): faithfulness pairwise accuracy
0.500 (ties: the swapped words are the faithful answer's), 0 of 34 swapped answers FAIL, 34 of
34 faithful answers PASS. The issue's targets (pairwise >= 0.80, half the swaps FAIL) are not
met yet.
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from typing import Any

from tests.support.paths import ROOT


def load_bench() -> Any:
    spec = importlib.util.spec_from_file_location(
        "relation_probe", ROOT / "bench" / "relation_probe.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = load_bench()
load_pairs, probe = bench.load_pairs, bench.probe


def test_the_probe_covers_every_relation_kind_with_30_pairs_or_more() -> None:
    pairs = load_pairs()
    assert len(pairs) >= 30
    kinds = Counter(p["category"].split("_")[0] for p in pairs)
    for kind in ("acquisition", "defeat", "teaching", "causation", "comparative", "temporal",
                 "number", "date", "negation"):  # fmt: skip
        assert kinds[kind] >= 1, kind
    for p in pairs:
        assert p["faithful"] != p["swapped"]
        assert set(p) == {"category", "context", "query", "faithful", "swapped"}


def test_relation_figures_do_not_fall_below_where_they_stand() -> None:
    figures = probe(load_pairs())["figures"]
    faithfulness = figures["faithfulness"]
    assert faithfulness["pairs"] == len(load_pairs()), "no pair may defer"
    assert faithfulness["pairwise"] >= 0.5
    assert faithfulness["faithful_pass"] >= 32  # of 34; the issue asks >= 28 of 32
    assert figures["hallucination"]["pairwise"] >= 0.5
