"""The relation-swap probes of issue 31 run in the suite: their pairs are well formed, and the
faithfulness verdict meets the issue's targets on both: the probe written before the relation
signals (34 pairs) and the held-out one written before them and never used to tune them (18).

Figures on 2026-11-26 (``python bench/relation_probe.py [--probe ...]``): see
docs/verdicts/faithfulness.md, "Relations". Before the relation signals: pairwise 0.500, 0 of
34 swaps FAIL.
"""

from __future__ import annotations

from collections import Counter

from tests.support.paths import ROOT, load_script

bench = load_script(ROOT / "bench" / "relation_probe.py")
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


def test_the_issue_targets_hold_on_both_probes() -> None:
    """Targets: pairwise >= 0.80, at least half of the swaps FAIL, faithful answers PASS
    (>= 28 of 32 in the issue: here at most one faithful answer in 17 may FAIL)."""
    for path in (bench.PROBE, bench.HELD_OUT):
        pairs = load_pairs(path)
        figures = probe(pairs)["figures"]
        faithfulness = figures["faithfulness"]
        assert faithfulness["pairs"] == len(pairs), "no pair may defer"
        assert faithfulness["pairwise"] >= 0.80, (path.name, faithfulness)
        assert faithfulness["swapped_fail"] >= len(pairs) / 2, (path.name, faithfulness)
        assert faithfulness["faithful_pass"] >= len(pairs) - len(pairs) // 17, path.name
        # the lexical verdicts stay blind to relations (their figures are the contrast)
        assert figures["groundedness"]["pairwise"] < 0.6
