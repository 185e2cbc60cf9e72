"""``verdictflow train-faithfulness``: fit the faithfulness model on human-labelled data.

Signals come from the production path (the answers analyzer's parse and context index, then
:func:`~verdictflow.evaluators.faithfulness.faithfulness_signals`), so the model is fitted on
exactly what the verdict computes.

Labels and weighting (docs/verdicts/faithfulness.md, "Decisions"):

- every row enters twice, as "faithful" with weight ``target`` and as "not" with weight
  ``1 - target`` (QAGS and SummEval targets are shares and rescaled means, not yes/no);
- within a set, the faithful and unfaithful mass are equal; every *source* (SummEdits, HaluEval,
  QAGS, SummEval) has the same total weight, shared equally by its sets (SummEdits' four
  domains, QAGS's two splits). 2,000 HaluEval answers do not outvote 449 SciTLDR summaries, a
  set that is 82 % consistent (SummEval) does not teach the model that most text is faithful,
  and SummEdits' four domains, one protocol of minimal edits, are one vote of four, not half of
  the data.

The fit maximises the weighted log-likelihood of ``sigmoid(support) * sigmoid(detail)`` with a
small L2 penalty, by bounded L-BFGS from a fixed start (deterministic), on signals standardised
by their weighted mean and deviation. Each weight is kept on the side of zero that the signal's
:data:`~verdictflow.evaluators.faithfulness_signals.DIRECTIONS` allows, so no set can teach the
model that an unsupported name is good news. Weights are rounded to 6 significant digits, so
training twice writes the same bytes. The suggested threshold (on a 0.01 grid) is the one at
which the worst training set's balanced accuracy is highest (:func:`suggested_threshold` says
why not the pooled optimum); the policy's default is the packaged model's.
"""

from __future__ import annotations

import logging
import math
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from rich.progress import Progress
from scipy.optimize import minimize
from scipy.special import log_expit

from verdictflow.evaluators.answer_quality_verdicts import score_hallucination
from verdictflow.evaluators.answer_verdicts import score_groundedness
from verdictflow.evaluators.faithfulness import defer_decision, faithfulness_signals
from verdictflow.evaluators.faithfulness_model import (
    Factor,
    FaithfulnessModel,
    FaithfulnessModelError,
    model_bytes,
)
from verdictflow.evaluators.faithfulness_signals import (
    DETAIL_SIGNALS,
    DIRECTIONS,
    RELATION_SIGNALS,
    SIGNAL_NAMES,
    SUPPORT_SIGNALS,
)
from verdictflow.evaluators.policy import Policy
from verdictflow.scoring_jobs.training.labelled_sets import LabelledSet
from verdictflow.scoring_setup import Scoring, load_scoring

logger = logging.getLogger(__name__)

Matrix = NDArray[np.float64]
#: L2 penalty on the standardised weights (the loss is a weighted mean, so this is per row).
L2 = 1e-3
#: A factor's starting intercept: both factors start at p = 0.88, neither saturated.
START_INTERCEPT = 2.0
#: The score's ceiling in every fitted model: the groundedness of the answer's claims, applied
#: after the fit (its signal's weight is held at 0, the factors fitted as before); the threshold
#: is chosen on capped scores (docs/verdicts/faithfulness.md, "Decisions", 13).
CEILING = "claim_groundedness"


@dataclass(frozen=True)
class Featurised:
    """One set's signal matrix (rows = events, columns = :data:`SIGNAL_NAMES`)."""

    labelled: LabelledSet
    signals: Matrix
    #: Today's verdicts on the same rows, for comparison (``featurise(baselines=True)``):
    #: 1 - hallucination and Q1 (a DEFER is None); and the seconds spent computing the
    #: signals after the parse.
    hallucination: tuple[float | None, ...] = ()
    groundedness: tuple[float | None, ...] = ()
    signal_seconds: float = 0.0
    deferred: tuple[bool, ...] = ()  # the verdict DEFERs these rows (nothing to check)

    @property
    def targets(self) -> Matrix:
        return np.asarray(self.labelled.targets, dtype=np.float64)


def _featurising_scoring() -> Scoring:
    """The default scoring context. Signals read no model, but the context loads the packaged
    one; after a change of signals that file no longer loads, and it must not stand in the way
    of its own retraining: then the context gets a neutral model (every weight 0) instead."""
    try:
        return load_scoring(Policy(), None)
    except FaithfulnessModelError as exc:
        logger.warning("%s; featurising with a neutral model", exc)
    factors = tuple(
        Factor(name, signals, (0.0,) * len(signals), (1.0,) * len(signals),
               (0.0,) * len(signals), START_INTERCEPT)
        for name, signals in (("support", SUPPORT_SIGNALS), ("detail", DETAIL_SIGNALS))
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "neutral.json"
        path.write_bytes(model_bytes(FaithfulnessModel(factors, 0.5, {}, "")))
        return load_scoring(Policy.model_validate({"faithfulness": {"model": str(path)}}), None)


def featurise(
    sets: Sequence[LabelledSet],
    scoring: Scoring | None = None,
    batch: int = 64,
    *,
    baselines: bool = False,
) -> list[Featurised]:
    """Every set's signals, computed as the verdict computes them (a progress bar per set);
    with ``baselines``, today's hallucination and Q1 scores of the same rows too (the
    validation bench compares against them; training does not need them)."""
    scoring = scoring or _featurising_scoring()
    out = []
    with Progress(transient=True) as bar:
        for labelled in sets:
            task = bar.add_task(f"signals: {labelled.name}", total=len(labelled.events))
            rows: list[list[float]] = []
            hallu: list[float | None] = []
            q1: list[float | None] = []
            deferred: list[bool] = []
            seconds = 0.0
            for start in range(0, len(labelled.events), batch):
                chunk = labelled.events[start : start + batch]
                for event, parsed in zip(chunk, scoring.analyzer.analyze(chunk), strict=True):
                    began = time.perf_counter()
                    values = faithfulness_signals(event, parsed, scoring.ctx).values
                    seconds += time.perf_counter() - began
                    rows.append([values[name] for name in SIGNAL_NAMES])
                    if baselines:
                        h = score_hallucination(event, parsed, scoring.ctx).score
                        hallu.append(None if h is None else 1.0 - h)
                        q1.append(score_groundedness(event, scoring.ctx).score)
                    deferred.append(defer_decision(event, parsed) is not None)
                bar.advance(task, len(chunk))
            out.append(
                Featurised(
                    labelled,
                    np.asarray(rows, dtype=np.float64),
                    tuple(hallu),
                    tuple(q1),
                    seconds,
                    tuple(deferred),
                )
            )
            logger.info("featurised %s: %d rows", labelled.name, len(rows))
    return out


def _set_weights(sets: Sequence[Featurised]) -> list[float]:
    """Each set's total weight: 1 / sources, shared equally by the sets of its source."""
    sources = [s.labelled.source for s in sets]
    return [1.0 / len(set(sources)) / sources.count(source) for source in sources]


def _rows(sets: Sequence[Featurised]) -> tuple[Matrix, Matrix, Matrix]:
    """Stacked signals, 0/1 labels and weights (see the module docstring)."""
    xs, ys, ws = [], [], []
    for item, set_weight in zip(sets, _set_weights(sets), strict=True):
        t = item.targets
        positive, negative = float(t.sum()), float((1.0 - t).sum())
        for label, mass, share in ((1.0, t, positive), (0.0, 1.0 - t, negative)):
            if share <= 0:
                continue
            xs.append(item.signals)
            ys.append(np.full(len(t), label))
            ws.append(mass / share * 0.5 * set_weight)
    x, y, w = np.vstack(xs), np.concatenate(ys), np.concatenate(ws)
    keep = w > 0
    return x[keep], y[keep], w[keep]


def _round(value: float) -> float:
    return float(f"{value:.6g}") + 0.0  # never "-0.0": a bound weight is 0


#: The source of the relation perturbation set: it teaches the relation signals' weights only.
PERTURBATIONS = "perturbations"


def _minimise(
    loss: Callable[[Matrix], float], start: Matrix, bounds: list[tuple[float | None, float | None]]
) -> Matrix:
    result = minimize(loss, start, method="L-BFGS-B", bounds=bounds, options={"maxiter": 10_000})
    if not result.success:
        logger.warning("faithfulness fit did not converge: %s", result.message)
    return np.asarray(result.x, dtype=np.float64)


def _loss(
    x: Matrix, y: Matrix, w: Matrix, mean: Matrix, scale: Matrix, l2: float
) -> Callable[[Matrix], float]:
    """The penalised weighted negative log-likelihood of ``sigmoid(support) * sigmoid(detail)``
    over rows ``x`` (standardised by ``mean`` and ``scale``)."""
    z = (x - mean) / scale
    n_support, n_detail = len(SUPPORT_SIGNALS), len(DETAIL_SIGNALS)
    support, detail = z[:, :n_support], z[:, n_support:]

    def loss(p: Matrix) -> float:
        ws, bs = p[:n_support], p[n_support]
        wd, bd = p[n_support + 1 : n_support + 1 + n_detail], p[-1]
        log_p = log_expit(support @ ws + bs) + log_expit(detail @ wd + bd)
        log_not = np.log(-np.expm1(np.minimum(log_p, -1e-12)))
        value = -np.sum(w * (y * log_p + (1.0 - y) * log_not))
        return float(value + l2 * (np.sum(ws**2) + np.sum(wd**2)))

    return loss


def fit(sets: Sequence[Featurised], l2: float = L2) -> FaithfulnessModel:
    """The two-factor model fitted on ``sets`` (threshold and training record included).

    In two stages when a relation perturbation set is among ``sets``: every weight and both
    intercepts are fitted on the human-labelled sets, the relation signals' weights held at 0
    (they are almost constant there); then only the relation signals' weights are fitted on
    all sets, the rest held. The synthetic pairs set what a relation conflict is worth, against
    the false alarms on human-labelled text, and cannot move any other weight: fitted on all
    sets at once, they cost QAGS CNN/DM 0.06 Pearson (docs/verdicts/faithfulness.md)."""
    human = [s for s in sets if s.labelled.source != PERTURBATIONS]
    x, y, w = _rows(sets)
    hx, hy, hw = _rows(human)
    # Standardised on the human-labelled rows (as before the perturbations); the relation
    # signals, almost constant there, on every row.
    mean = np.average(hx, axis=0, weights=hw)
    scale = np.sqrt(np.average((hx - mean) ** 2, axis=0, weights=hw))
    relation = [SIGNAL_NAMES.index(n) for n in RELATION_SIGNALS]
    mean[relation] = np.average(x[:, relation], axis=0, weights=w)
    scale[relation] = np.sqrt(np.average((x[:, relation] - mean[relation]) ** 2, axis=0, weights=w))
    scale[scale == 0] = 1.0
    n_support = len(SUPPORT_SIGNALS)
    n_detail = len(DETAIL_SIGNALS)
    start = np.zeros(n_support + n_detail + 2)
    start[n_support] = start[-1] = START_INTERCEPT
    # A weight may only be zero or of its signal's sign; intercepts are free.
    sign: list[tuple[float | None, float | None]] = [
        (0.0, None) if DIRECTIONS[n] > 0 else (None, 0.0) for n in SIGNAL_NAMES
    ]
    # The ceiling's signal bounds the score and has no weight: the factors are fitted as they
    # were before it, so what the ceiling changes is measured on its own.
    sign[SIGNAL_NAMES.index(CEILING)] = (0.0, 0.0)
    free: list[tuple[float | None, float | None]] = [(None, None)]
    bounds = sign[:n_support] + free + sign[n_support:] + free
    # Parameter positions of the signals (the support intercept sits after its weights).
    position = {n: i if i < n_support else i + 1 for i, n in enumerate(SIGNAL_NAMES)}
    if len(human) == len(sets):
        p = _minimise(_loss(x, y, w, mean, scale, l2), start, bounds)
    else:
        first = list(bounds)
        for name in RELATION_SIGNALS:
            first[position[name]] = (0.0, 0.0)
        p = _minimise(_loss(hx, hy, hw, mean, scale, l2), start, first)
        second: list[tuple[float | None, float | None]] = [(v, v) for v in p.tolist()]
        for name in RELATION_SIGNALS:
            second[position[name]] = bounds[position[name]]
        p = _minimise(_loss(x, y, w, mean, scale, l2), p, second)
    # Parameters are laid out factor by factor: the factor's weights, then its intercept.
    factors = []
    column = offset = 0
    for name, signals in (("support", SUPPORT_SIGNALS), ("detail", DETAIL_SIGNALS)):
        columns = slice(column, column + len(signals))
        factors.append(
            Factor(
                name,
                signals,
                tuple(_round(v) for v in mean[columns]),
                tuple(_round(v) for v in scale[columns]),
                tuple(_round(v) for v in p[offset : offset + len(signals)]),
                _round(p[offset + len(signals)]),
            )
        )
        column += len(signals)
        offset += len(signals) + 1
    training = {
        "sets": [
            {"name": s.labelled.name, "rows": len(s.labelled.events), "files": s.labelled.files}
            for s in sets
        ],
        "labels": "target in [0, 1]: each row as faithful with weight target and as not with "
        "weight 1 - target",
        "weighting": "each source (summedits, halueval, qags, summeval, perturbations) the same "
        "total weight, shared equally by its sets; within a set, equal faithful and unfaithful "
        "mass",
        "stages": "every weight fitted on the human-labelled sets (relation signals held at 0), "
        "then the relation signals' weights alone on every set",
        "directions": "every weight zero or of its signal's direction (+1 / -1)",
        "l2": l2,
        "libraries": {name: version(name) for name in ("numpy", "scipy", "scikit-learn")},
    }
    unthresholded = FaithfulnessModel(tuple(factors), 0.5, training, "", CEILING)
    threshold = suggested_threshold(unthresholded, human)
    model = FaithfulnessModel(tuple(factors), threshold, training, "", CEILING)
    return FaithfulnessModel.from_bytes(model_bytes(model), "the fitted model")


def predict(model: FaithfulnessModel, signals: Matrix) -> Matrix:
    """Scores of many rows, through the verdict's own arithmetic (so figures match verdicts)."""
    return np.asarray(
        [model.predict(dict(zip(SIGNAL_NAMES, row, strict=True))).score for row in signals]
    )


def balanced_accuracy(scores: Matrix, positive: NDArray[np.bool_], threshold: float) -> float:
    passed = scores >= threshold
    rates = [float(np.mean(passed[positive])), float(np.mean(~passed[~positive]))]
    return math.fsum(rates) / 2 if positive.any() and (~positive).any() else math.nan


def suggested_threshold(model: FaithfulnessModel, sets: Sequence[Featurised]) -> float:
    """The 0.01-grid threshold at which the *worst* training set's balanced accuracy is highest
    (ties: the higher mean over sets, then the lower threshold), a row counting as faithful
    when its target is 1.

    Not the pooled optimum: pooled, HaluEval and SummEval (whose faithful rows are copied spans
    and near-extractive summaries) gain most from a threshold just under the score of a
    perfectly covered answer, and at that threshold every podcast and dialogue summary of
    SummEdits FAILs (balanced accuracy 0.50) along with any paraphrased answer. The score's
    range moves with how abstractive a domain's text is; the threshold no training set pays
    for is the one that carries to a domain that is in none of them."""
    scored = [(predict(model, s.signals), s.targets >= 0.999) for s in sets]
    best_key, best = (-1.0, -1.0), 0.5
    for step in range(1, 100):
        threshold = step / 100
        accuracies = [balanced_accuracy(sc, pos, threshold) for sc, pos in scored]
        accuracies = [a for a in accuracies if not math.isnan(a)]
        if not accuracies:
            continue
        # Rounded, so a difference in the last bits of a sum cannot pick the threshold.
        key = (round(min(accuracies), 9), round(math.fsum(accuracies) / len(accuracies), 9))
        if key > best_key:
            best_key, best = key, threshold
    return best


def train(sets: Sequence[LabelledSet], output: Path) -> FaithfulnessModel:
    """Featurise, fit and write the model file; returns the model as written."""
    model = fit(featurise(sets))
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(model_bytes(model))
    return FaithfulnessModel.from_bytes(output.read_bytes(), str(output))
