"""The faithfulness model: a small, human-readable file of weights, and its arithmetic.

``P(faithful) = min(ceiling, sigmoid(support) * sigmoid(detail))``, where each factor is an
intercept plus the sum over its signals of ``weight * (value - mean) / scale`` and the ceiling is
the groundedness of the answer's claims (the share of their words the contexts hold). The
product is a *noisy AND*: an answer is faithful only if the contexts back it as a whole
(support) **and** none of its facts is made up or misplaced (detail). A single additive model
cannot do both: the signals that rank gross failures (coverage, novel words) move a little with
every paraphrase, and on minimal edits that noise drowns the one fabricated name; with the
product, a well-supported answer's support factor saturates and its score is driven by the
detail factor (docs/verdicts/faithfulness.md, "Decisions", 1). Every weight is zero or of its
signal's fixed direction (a file that breaks this is refused).

The **ceiling** keeps the score from ranking an answer above its own coverage. The factors are
fitted on summaries and QA, where the paraphrase signals carry what coverage does, and the
bounded fit leaves coverage at weight 0; on chat a turn with 10 % of its words in the knowledge
("his character was great") then scored 0.3-0.7 from the support factor's intercept. Capped by
its claims' groundedness (``claim_groundedness``: a question back or a pleasantry does not
lower it), the score loses on none of the 13 labelled sets and gains on SummEdits SAMSum,
HaluEval, FactCheck-GPT and BEGIN's three dialogue sets (WoW ROC-AUC 0.896 -> 0.912;
docs/verdicts/faithfulness.md, "Decisions", 13).
A file without ``ceiling`` (or with ``null``) has none.

The file (``verdictflow/data/faithfulness_model.json``, written by ``verdictflow
train-faithfulness``) lists each factor's signals with their scaling and weights, the suggested
threshold, and the data it was fitted on with the SHA-256 of each file. Its own SHA-256 is in
every verdict's ``config_digest``. Prediction is plain Python (``math.fsum`` in file order), so
a verdict does not depend on numpy's summation order.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from verdictflow.evaluators.faithfulness_signals import DIRECTIONS, SIGNAL_NAMES
from verdictflow.exceptions import VerdictflowError

#: Version 2: order-invariant, bounded signals with fixed directions (issue 16, second round).
#: A version-1 file names signals this code no longer computes, or computes differently.
FORMAT = "verdictflow-faithfulness/2"
#: The packaged model's name in the policy (``faithfulness.model``).
DEFAULT_MODEL = "default"
FACTORS = ("support", "detail")
#: Signals a file may name as its ceiling: shares in [0, 1] where more is better.
CEILING_SIGNALS = (
    "claim_groundedness", "groundedness", "mean_sentence_coverage", "min_sentence_coverage",
    "mean_paraphrase_coverage", "min_paraphrase_coverage",
)  # fmt: skip


class FaithfulnessModelError(VerdictflowError):
    """A faithfulness model file that cannot be read or is not one."""


@dataclass(frozen=True, slots=True)
class Factor:
    """One logistic factor: signal names with their standardisation and weights."""

    name: str
    signals: tuple[str, ...]
    means: tuple[float, ...]
    scales: tuple[float, ...]
    weights: tuple[float, ...]
    intercept: float

    def contributions(self, values: dict[str, float]) -> list[float]:
        """Each signal's term of the factor's logit, in file order."""
        return [
            w * (values[name] - m) / s
            for name, m, s, w in zip(
                self.signals, self.means, self.scales, self.weights, strict=True
            )
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "intercept": self.intercept,
            "signals": [
                {"name": n, "direction": DIRECTIONS[n], "mean": m, "scale": s, "weight": w}
                for n, m, s, w in zip(
                    self.signals, self.means, self.scales, self.weights, strict=True
                )
            ],
        }


@dataclass(frozen=True, slots=True)
class Prediction:
    """A score, each factor's probability and each signal's contribution to its factor;
    ``capped_from``: the product of the factors when the ceiling was lower (None otherwise)."""

    score: float
    factors: dict[str, float]
    contributions: dict[str, float]
    capped_from: float | None = None


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@dataclass(frozen=True)
class FaithfulnessModel:
    """A loaded model file; ``digest`` is the SHA-256 of its bytes."""

    factors: tuple[Factor, ...]
    threshold: float
    training: dict[str, Any]
    digest: str
    #: The signal whose value bounds the score (:data:`CEILING_SIGNALS`), or None.
    ceiling: str | None = None

    @property
    def signals(self) -> tuple[str, ...]:
        return tuple(name for f in self.factors for name in f.signals)

    def predict(self, values: dict[str, float]) -> Prediction:
        """``values`` must hold every signal the model names."""
        probabilities: dict[str, float] = {}
        contributions: dict[str, float] = {}
        score = 1.0
        for factor in self.factors:
            terms = factor.contributions(values)
            p = _sigmoid(math.fsum([factor.intercept, *terms]))
            probabilities[factor.name] = p
            contributions.update(zip(factor.signals, terms, strict=True))
            score *= p
        if self.ceiling is not None and values[self.ceiling] < score:
            return Prediction(values[self.ceiling], probabilities, contributions, score)
        return Prediction(score, probabilities, contributions)

    def to_json(self) -> dict[str, Any]:
        product = "sigmoid(support) * sigmoid(detail)"
        if self.ceiling is not None:
            product = f"min({self.ceiling}, {product})"
        return {
            "format": FORMAT,
            "form": f"P(faithful) = {product}; a factor = intercept + "
            "sum(weight * (value - mean) / scale)",
            "ceiling": self.ceiling,
            "factors": {f.name: f.to_json() for f in self.factors},
            "threshold": self.threshold,
            "training": self.training,
        }

    @classmethod
    def from_bytes(cls, data: bytes, origin: str) -> FaithfulnessModel:
        try:
            raw = json.loads(data)
            if raw.get("format") != FORMAT:
                raise ValueError(f"format {raw.get('format')!r}, expected {FORMAT!r}")
            factors = tuple(
                Factor(
                    name,
                    tuple(str(s["name"]) for s in raw["factors"][name]["signals"]),
                    tuple(float(s["mean"]) for s in raw["factors"][name]["signals"]),
                    tuple(float(s["scale"]) for s in raw["factors"][name]["signals"]),
                    tuple(float(s["weight"]) for s in raw["factors"][name]["signals"]),
                    float(raw["factors"][name]["intercept"]),
                )
                for name in FACTORS
            )
            if any(s <= 0 for f in factors for s in f.scales):
                raise ValueError("a signal's scale is not positive")
            unknown = sorted({n for f in factors for n in f.signals} - set(SIGNAL_NAMES))
            if unknown:
                raise ValueError(f"signals this version does not compute: {', '.join(unknown)}")
            against = [
                n
                for f in factors
                for n, w in zip(f.signals, f.weights, strict=True)
                if w * DIRECTIONS[n] < 0
            ]
            if against:
                raise ValueError(f"weights against their signal's direction: {', '.join(against)}")
            ceiling = raw.get("ceiling")
            if ceiling is not None and ceiling not in CEILING_SIGNALS:
                raise ValueError(f"ceiling {ceiling!r} is not one of {', '.join(CEILING_SIGNALS)}")
            return cls(
                factors,
                float(raw["threshold"]),
                dict(raw.get("training", {})),
                hashlib.sha256(data).hexdigest(),
                ceiling,
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise FaithfulnessModelError(
                f"{origin} is not a faithfulness model file: {exc}"
            ) from None


def model_bytes(model: FaithfulnessModel) -> bytes:
    """The canonical file form: sorted keys, two-space indent, trailing newline."""
    return (json.dumps(model.to_json(), indent=2, sort_keys=True) + "\n").encode("utf-8")


@lru_cache(maxsize=8)
def load_model(source: str = DEFAULT_MODEL) -> FaithfulnessModel:
    """The packaged model (``default``) or a model file written by ``train-faithfulness``."""
    if source == DEFAULT_MODEL:
        data = resources.files("verdictflow.data").joinpath("faithfulness_model.json").read_bytes()
        return FaithfulnessModel.from_bytes(data, "the packaged faithfulness model")
    try:
        data = Path(source).read_bytes()
    except OSError as exc:
        raise FaithfulnessModelError(
            f"cannot read faithfulness model {source}: {exc.strerror}"
        ) from None
    return FaithfulnessModel.from_bytes(data, source)
