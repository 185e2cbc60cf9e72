"""Which verdicts come to people (policy ``review.sample``), and how well verdicts agree with
them. Pure: verdicts and labels as JSON mappings in, decisions and figures out; the same
input always gives the same answer (a sampled PASS is chosen by its verdict id, not by
chance), so every console and every replay queues the same inputs.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sklearn.metrics import cohen_kappa_score

from verdictflow.evaluators.review_policy import AgreementBound, ReviewSample

#: The pair of tiers whose disagreement on one input sends it to people.
CHEAP_KIND, JUDGE_KIND = "faithfulness", "faithfulness_llm"


def review_point(verdict_id: str) -> float:
    """A uniform point in [0, 1) fixed by the verdict id (a PASS is sampled below the share).
    Salted apart from the judge tier's sample, so people do not see only what the judge saw."""
    digest = hashlib.sha256(("review-sample\x1f" + verdict_id).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def sample_reasons(verdict: Mapping[str, Any], policy: ReviewSample) -> list[str]:
    """Why ``verdict`` (an answer verdict as JSON) comes to people: a subset of ``fail``,
    ``band``, ``pass_sample``; empty when it does not."""
    rule = policy.kinds.get(str(verdict.get("kind")))
    if rule is None:
        return []
    decision, score = verdict.get("decision"), verdict.get("score")
    reasons = []
    if rule.fail and decision == "FAIL":
        reasons.append("fail")
    scored = isinstance(score, int | float) and not isinstance(score, bool)
    if rule.band is not None and scored and rule.band[0] <= float(score) <= rule.band[1]:  # type: ignore[arg-type]
        reasons.append("band")
    if (
        decision == "PASS"
        and rule.pass_sample > 0
        and review_point(str(verdict.get("verdict_id"))) < rule.pass_sample
    ):
        reasons.append("pass_sample")
    return reasons


def tiers_disagree(decisions: Mapping[str, str]) -> bool:
    """Whether the cheap and the judge tier's faithfulness decided differently on one input
    (kind -> decision; a DEFER on either side is no disagreement: it decided nothing)."""
    cheap, judge = decisions.get(CHEAP_KIND), decisions.get(JUDGE_KIND)
    return cheap in ("PASS", "FAIL") and judge in ("PASS", "FAIL") and cheap != judge


@dataclass(frozen=True)
class Agreement:
    """How a kind's verdicts agree with people: confusion counts of (verdict decision, what
    the reviewer expected), over labels of PASS and FAIL verdicts (DEFERs decided nothing)."""

    kind: str
    tier: str | None
    counts: Mapping[tuple[str, str], int]  # (decision PASS|FAIL, expected pass|fail) -> n

    @property
    def labels(self) -> int:
        return sum(self.counts.values())

    @property
    def agreeing(self) -> int:
        return self.counts.get(("PASS", "pass"), 0) + self.counts.get(("FAIL", "fail"), 0)

    @property
    def share(self) -> float | None:
        return self.agreeing / self.labels if self.labels else None


def agreement(labels: Iterable[Mapping[str, Any]]) -> list[Agreement]:
    """Per (kind, tier), the confusion counts of labels (:class:`ReviewLabel` as JSON) on
    verdicts that decided, sorted by kind."""
    counts: dict[tuple[str, str | None], Counter[tuple[str, str]]] = {}
    for label in labels:
        if label.get("decision") not in ("PASS", "FAIL"):
            continue
        key = (str(label["kind"]), label.get("tier"))
        counts.setdefault(key, Counter())[(label["decision"], label["expected"])] += 1
    return [
        Agreement(kind, tier, dict(c))
        for (kind, tier), c in sorted(counts.items(), key=lambda kv: (kv[0][0], kv[0][1] or ""))
    ]


@dataclass(frozen=True)
class Kappa:
    """Cohen's kappa between two reviewers over the verdicts both labelled (one kind)."""

    kind: str
    reviewers: tuple[str, str]
    items: int
    value: float | None  # None: fewer than two items, or no variation to compare


def reviewer_kappas(labels: Iterable[Mapping[str, Any]]) -> list[Kappa]:
    """Cohen's kappa of every pair of reviewers who labelled the same inputs of a kind, on
    what they expected (pass/fail), sorted by kind then names."""
    by_item: dict[tuple[str, str], dict[str, str]] = {}
    for label in labels:
        item = (str(label["kind"]), str(label["input_id"]))
        by_item.setdefault(item, {})[str(label["reviewer"])] = str(label["expected"])
    pairs: dict[tuple[str, str, str], tuple[list[str], list[str]]] = {}
    for (kind, _), given in sorted(by_item.items()):
        names = sorted(given)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                left, right = pairs.setdefault((kind, a, b), ([], []))
                left.append(given[a])
                right.append(given[b])
    out = []
    for (kind, a, b), (left, right) in sorted(pairs.items()):
        out.append(Kappa(kind, (a, b), len(left), _kappa(left, right)))
    return out


def _kappa(left: Sequence[str], right: Sequence[str]) -> float | None:
    if len(left) < 2:
        return None
    if len(set(left) | set(right)) < 2:
        return None  # both said the same one thing every time: kappa is undefined (0/0)
    return float(cohen_kappa_score(list(left), list(right)))


@dataclass(frozen=True)
class AgreementDrop:
    """A window whose agreement fell under the bound: what the alert says."""

    kind: str
    tier: str | None
    window_index: int
    window_seconds: int
    agreement: float
    labels: int
    bound: float
    first_labelled_at: float
    last_labelled_at: float

    @property
    def alert_id(self) -> str:
        """Fixed by (rule, kind, tier, window): one alert per window however often it is
        raised or delivered."""
        key = f"agreement_drop\x1f{self.kind}\x1f{self.tier}\x1f{self.window_index}"
        return hashlib.sha256(key.encode()).hexdigest()[:32]


def agreement_drops(
    labels: Iterable[Mapping[str, Any]], bound: AgreementBound
) -> list[AgreementDrop]:
    """Every (kind, tier, window of label time) whose agreement is under ``bound``."""
    windows: dict[tuple[str, str | None, int], list[Mapping[str, Any]]] = {}
    for label in labels:
        index = int(float(label["labelled_at"]) // bound.window_seconds)
        key = (str(label["kind"]), label.get("tier"), index)
        windows.setdefault(key, []).append(label)
    drops = []
    for (kind, tier, index), in_window in sorted(
        windows.items(), key=lambda kv: (kv[0][0], kv[0][1] or "", kv[0][2])
    ):
        figures = agreement(in_window)
        if not figures:
            continue
        fig = figures[0]
        if fig.labels < bound.min_labels or fig.share is None or fig.share >= bound.min_agreement:
            continue
        times = [float(x["labelled_at"]) for x in in_window]
        drops.append(
            AgreementDrop(
                kind, tier, index, bound.window_seconds, round(fig.share, 6), fig.labels,
                bound.min_agreement, min(times), max(times),
            )
        )  # fmt: skip
    return drops
