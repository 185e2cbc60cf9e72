"""FAIL rate over a window (policy ``alerts``): pure, fed one verdict at a time by
``verdictflow drift``.

```yaml
alerts:
  fail_rate: {faithfulness: 0.30, groundedness: 0.20}   # kind -> highest FAIL share allowed
  window: 200                                            # verdicts per window
```

Each (kind, model, tenant) counts its verdicts in consecutive windows of ``window`` verdicts
(counts, not seconds: a replay gives the same windows at any speed); a window that closes with
a FAIL share above the kind's bound is one breach, whose id is a hash of (rule, kind, model,
tenant, window index): the same on every replay, so ``verdictflow notify`` posts it once.
DEFERs count in the window (they are verdicts) but not as FAILs. The section decides which
alerts are raised, never a verdict: it stays out of the policy digest.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

Unit = Annotated[float, Field(ge=0.0, le=1.0)]


class AlertsPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    fail_rate: dict[str, Unit] = {}
    window: Annotated[int, Field(ge=10, le=1_000_000)] = 200


@dataclass(frozen=True)
class FailRateBreach:
    kind: str
    model: str | None
    tenant: str | None
    window_index: int
    window_size: int
    fail_share: float
    bound: float
    first_ts: float | None
    last_ts: float | None

    @property
    def alert_id(self) -> str:
        key = f"fail_rate\x1f{self.kind}\x1f{self.model}\x1f{self.tenant}\x1f{self.window_index}"
        return hashlib.sha256(key.encode()).hexdigest()[:32]


@dataclass
class _Window:
    index: int = 0
    seen: int = 0
    fails: int = 0
    first_ts: float | None = None
    last_ts: float | None = None


@dataclass
class FailRateMonitor:
    policy: AlertsPolicy
    _windows: dict[tuple[str, str | None, str | None], _Window] = field(default_factory=dict)

    def kinds(self) -> list[str]:
        return sorted(self.policy.fail_rate)

    def observe(
        self, kind: str, model: str | None, tenant: str | None, decision: str, ts: float | None
    ) -> FailRateBreach | None:
        bound = self.policy.fail_rate.get(kind)
        if bound is None:
            return None
        w = self._windows.setdefault((kind, model, tenant), _Window())
        w.seen += 1
        w.fails += decision == "FAIL"
        if w.first_ts is None:
            w.first_ts = ts
        w.last_ts = ts if ts is not None else w.last_ts
        if w.seen < self.policy.window:
            return None
        share = w.fails / w.seen
        breach = (
            FailRateBreach(kind, model, tenant, w.index, w.seen, round(share, 6), bound,
                           w.first_ts, w.last_ts)
            if share > bound
            else None
        )  # fmt: skip
        self._windows[(kind, model, tenant)] = _Window(index=w.index + 1)
        return breach
