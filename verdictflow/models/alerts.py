"""Alert events (topic ``alerts``): a verdict score distribution that moved away from the one
its threshold was calibrated on, so recalibration is triggered by data, not by calendar."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

ALERT_SCHEMA_VERSION = 1


class DriftAlert(BaseModel):
    """One key (kind, model, tenant) entering drift. ``alert_id`` = hash(kind, model, tenant,
    window index), so a replay of the same verdicts re-emits the same id; ``event_ts`` is the
    latest verdict event time in the window (never the wall clock)."""

    model_config = ConfigDict(frozen=True)

    schema_version: int = ALERT_SCHEMA_VERSION
    alert_id: str
    alert: Literal["score_drift"] = "score_drift"
    kind: str
    model: str | None
    tenant: str | None
    statistic: Literal["psi"] = "psi"
    value: float
    enter_threshold: float
    exit_threshold: float
    window_index: int
    window_size: int
    window_mean: float | None
    deferred_share: float
    reference_digest: str
    reference_threshold: float
    first_event_ts: float | None
    event_ts: float | None
    action: str = "recalibrate"
