"""Score drift, pure: the population stability index of windows of verdict scores against the
calibration set's distribution, with hysteresis, per kind / model / tenant.

Why PSI over binned scores: the baseline travels in the policy file as a small histogram
(``ScoreReference``), not as the golden set, and PSI compares two histograms directly. DEFER
is an extra bin, so a stream that suddenly cannot be scored drifts too.

Windows are tumbling and counted in verdicts, not seconds, so a replay of the same topic raises
the same alerts whatever its speed. A key enters drift when a full window's PSI reaches
``enter_psi`` (0.25, the usual "significant shift" band) and leaves it only when a window falls
below ``exit_psi`` (0.10, "no shift"): a sustained shift raises exactly one alert, and a window
that wobbles around one band edge does not flap.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from verdictflow.evaluators.policy import ScoreReference

#: Floor on bin shares, so an empty bin gives a large finite PSI term rather than infinity.
PSI_EPSILON = 1e-4
DEFAULT_BINS = 10


def histogram(values: Sequence[float], edges: Sequence[float]) -> list[float]:
    """Share of ``values`` in each bin ``[edges[i], edges[i+1])``; values outside the range go to
    the first or last bin, and the last bin includes its upper edge."""
    counts = [0] * (len(edges) - 1)
    for v in values:
        i = 0
        while i < len(counts) - 1 and v >= edges[i + 1]:
            i += 1
        counts[i] += 1
    n = len(values)
    return [c / n if n else 0.0 for c in counts]


def score_reference(
    scores: Sequence[float | None], scale: float = 1.0, bins: int = DEFAULT_BINS
) -> ScoreReference:
    """The baseline of a calibration set (None = DEFERred), ``bins`` equal bins on [0, scale]."""
    scored = [s for s in scores if s is not None]
    if not scored:
        raise ValueError("no scored item to take a reference distribution from")
    edges = [round(scale * i / bins, 12) for i in range(bins + 1)]
    return ScoreReference(
        edges=edges,
        proportions=[round(p, 12) for p in histogram(scored, edges)],
        scored_rows=len(scored),
        deferred_share=round((len(scores) - len(scored)) / len(scores), 12),
    )


def with_defer_bin(shares: Sequence[float], deferred_share: float) -> list[float]:
    """Bin shares of the scored items plus DEFER as a first bin, all summing to 1."""
    return [deferred_share, *(p * (1.0 - deferred_share) for p in shares)]


def psi(expected: Sequence[float], actual: Sequence[float]) -> float:
    """Population stability index: sum over bins of (a - e) * ln(a / e), shares floored."""
    total = 0.0
    for e, a in zip(expected, actual, strict=True):
        e, a = max(e, PSI_EPSILON), max(a, PSI_EPSILON)
        total += (a - e) * math.log(a / e)
    return total


def window_psi(reference: ScoreReference, window: Sequence[float | None]) -> float:
    """PSI of one window of scores (None = DEFER) against the reference, DEFER bin included."""
    scored = [s for s in window if s is not None]
    deferred = (len(window) - len(scored)) / len(window)
    expected = with_defer_bin(reference.proportions, reference.deferred_share)
    actual = with_defer_bin(histogram(scored, reference.edges), deferred)
    return psi(expected, actual)


@dataclass(frozen=True, slots=True)
class DriftKey:
    """What a window is kept for: a calibrated kind (``judge.<judge>`` for judges), a model and
    a tenant (None when the verdicts do not say)."""

    kind: str
    model: str | None
    tenant: str | None


@dataclass(frozen=True, slots=True)
class DriftTransition:
    """A key entering drift: the window that tipped it over, and its figures."""

    key: DriftKey
    window_index: int
    window_size: int
    psi: float
    window_mean: float | None
    deferred_share: float
    first_ts: float | None
    last_ts: float | None

    @property
    def alert_id(self) -> str:
        k = self.key
        material = f"drift\x1f{k.kind}\x1f{k.model}\x1f{k.tenant}\x1f{self.window_index}"
        return hashlib.sha256(material.encode()).hexdigest()[:32]


@dataclass
class _KeyState:
    scores: list[float | None] = field(default_factory=list)
    timestamps: list[float | None] = field(default_factory=list)
    windows: int = 0
    drifting: bool = False


@dataclass
class DriftMonitor:
    """Tumbling windows of ``window`` verdicts per key, compared with the reference of the key's
    kind; :meth:`observe` returns a transition when a key enters drift, else None."""

    references: dict[str, ScoreReference]
    window: int = 200
    enter_psi: float = 0.25
    exit_psi: float = 0.10
    _state: dict[DriftKey, _KeyState] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.window < 1 or not 0 <= self.exit_psi <= self.enter_psi:
            raise ValueError("need window >= 1 and 0 <= exit_psi <= enter_psi")

    def drifting(self, key: DriftKey) -> bool:
        state = self._state.get(key)
        return state is not None and state.drifting

    def observe(
        self, key: DriftKey, score: float | None, event_ts: float | None = None
    ) -> DriftTransition | None:
        reference = self.references.get(key.kind)
        if reference is None:
            return None
        state = self._state.setdefault(key, _KeyState())
        state.scores.append(score)
        state.timestamps.append(event_ts)
        if len(state.scores) < self.window:
            return None
        scores, stamps = state.scores, state.timestamps
        state.scores, state.timestamps = [], []
        index = state.windows
        state.windows += 1
        value = window_psi(reference, scores)
        if state.drifting:
            state.drifting = value >= self.exit_psi
            return None
        if value < self.enter_psi:
            return None
        state.drifting = True
        scored = [s for s in scores if s is not None]
        known_ts = [t for t in stamps if t is not None]
        return DriftTransition(
            key=key,
            window_index=index,
            window_size=len(scores),
            psi=round(value, 6),
            window_mean=round(math.fsum(scored) / len(scored), 6) if scored else None,
            deferred_share=round(1 - len(scored) / len(scores), 6),
            first_ts=min(known_ts) if known_ts else None,
            last_ts=max(known_ts) if known_ts else None,
        )
