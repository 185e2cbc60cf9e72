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


class AgreementAlert(BaseModel):
    """A kind's verdicts stopped agreeing with people: within one window of label time, the
    share of its labelled verdicts that reviewers found right fell under the review policy's
    bound (``review.agreement``). ``alert_id`` = hash(rule, kind, tier, window index), so a
    console restarted or a second console raises the same id, and ``verdictflow notify``
    delivers it once."""

    model_config = ConfigDict(frozen=True)

    schema_version: int = ALERT_SCHEMA_VERSION
    alert_id: str
    alert: Literal["agreement_drop"] = "agreement_drop"
    kind: str
    tier: str | None
    model: str | None = None
    tenant: str | None = None
    statistic: Literal["agreement"] = "agreement"
    value: float
    bound: float
    labels: int
    window_index: int
    window_seconds: int
    first_event_ts: float
    event_ts: float
    action: str = "review the labels; recalibrate with verdictflow calibrate --labels"


class JudgeBudgetAlert(BaseModel):
    """The judge tier spent its daily token budget (policy ``judge_tier.budget.daily_tokens``):
    escalated verdicts go unreviewed until the UTC day turns. ``alert_id`` = hash(rule, day),
    so every judge worker that hits its share raises the same id and ``verdictflow notify``
    posts it once a day."""

    model_config = ConfigDict(frozen=True)

    schema_version: int = ALERT_SCHEMA_VERSION
    alert_id: str
    alert: Literal["judge_budget_spent"] = "judge_budget_spent"
    kind: str = "faithfulness_llm"
    tier: str = "judge"
    model: str | None = None
    tenant: str | None = None
    statistic: Literal["daily_tokens"] = "daily_tokens"
    value: int  # the day's token budget
    day: str  # UTC, YYYY-MM-DD
    detail: str
    event_ts: float
    action: str = "raise judge_tier.budget.daily_tokens, or narrow judge_tier.escalate"


class FailRateAlert(BaseModel):
    """A kind's FAIL share over one window of verdicts rose above the policy's bound
    (``alerts.fail_rate``). ``alert_id`` = hash(rule, kind, model, tenant, window index)."""

    model_config = ConfigDict(frozen=True)

    schema_version: int = ALERT_SCHEMA_VERSION
    alert_id: str
    alert: Literal["fail_rate"] = "fail_rate"
    kind: str
    model: str | None
    tenant: str | None
    statistic: Literal["fail_share"] = "fail_share"
    value: float
    bound: float
    window_index: int
    window_size: int
    first_event_ts: float | None
    event_ts: float | None
    action: str = "look at the failing answers in the console"
