"""The policy of the judge tier (issue 29): what escalates to the judge, under what budget.

```yaml
judge_tier:
  escalate:
    faithfulness: {band: [0.25, 0.60], fail: true, pass_sample: 0.01}
  budget: {requests_per_minute: 600, tokens_per_minute: 200000, max_concurrency: 4,
           daily_tokens: 5000000}
faithfulness_llm:
  threshold: 0.8
```

``escalate`` says which cheap verdicts the judge reviews, per kind (``faithfulness``: the
faithfulness verdicts of answers and of summaries):

- ``band``: a scored verdict whose score lies in ``[low, high]``, both ends included (DEFERs
  have no score and never fall in a band);
- ``fail``: every FAIL;
- ``pass_sample``: a deterministic share of PASSes, chosen by verdict id (the same verdicts on
  every replay), to measure what the cheap tier misses.

``budget`` bounds the judge's spend: requests and (estimated) tokens in any 60-second window,
requests in flight, tokens per UTC day. Over budget, FAILs go before band verdicts before
sampled PASSes: a FAIL waits for budget as long as it takes, a band verdict up to
``band_wait_seconds``, a sampled PASS not at all; what is skipped is counted
(``vf_judge_skipped_total``) and logged with the verdict it would have reviewed, never silent.

The section decides which verdicts are *emitted* (and how fast), not what any verdict says, so
it stays out of the policy digest (``EMISSION_SWITCHES``): changing the budget changes no
verdict id. The judge's verdict threshold is the ``faithfulness_llm`` section's, in the digest.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Unit = Annotated[float, Field(ge=0.0, le=1.0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EscalationRule(_Strict):
    band: tuple[Unit, Unit] | None = None
    fail: bool = False
    pass_sample: Unit = 0.0

    @model_validator(mode="after")
    def _band_is_ordered(self) -> EscalationRule:
        if self.band is not None and self.band[0] > self.band[1]:
            raise ValueError(f"band [{self.band[0]}, {self.band[1]}]: low above high")
        return self


class JudgeBudget(_Strict):
    requests_per_minute: Annotated[int, Field(ge=1, le=1_000_000)] = 600
    tokens_per_minute: Annotated[int, Field(ge=1)] = 200_000
    max_concurrency: Annotated[int, Field(ge=1, le=256)] = 4
    daily_tokens: Annotated[int, Field(ge=1)] = 5_000_000
    #: How long a band verdict may wait for budget before it is skipped (FAILs wait as long as
    #: it takes; sampled PASSes never wait).
    band_wait_seconds: Annotated[float, Field(ge=0, le=86_400)] = 300.0


#: The kinds whose verdicts can escalate (the judge reviews faithfulness; more may follow).
EscalatedKind = Literal["faithfulness"]


class RubricEscalation(_Strict):
    """Which summaries the judge model runs the spec-002 rubric on (``judge_llm`` verdicts,
    one request per summary for both frameworks), by the deterministic judges' verdicts on it:
    ``all``, any judge verdict scored in ``band`` (0-10, both ends included), or any FAIL."""

    all: bool = False
    band: (
        tuple[Annotated[float, Field(ge=0, le=10)], Annotated[float, Field(ge=0, le=10)]] | None
    ) = None
    fail: bool = False

    def wants(self, scores: list[float | None], failed: bool) -> bool:
        if self.all or (self.fail and failed):
            return True
        if self.band is None:
            return False
        low, high = self.band
        return any(s is not None and low <= s <= high for s in scores)


class JudgeTierPolicy(_Strict):
    escalate: dict[EscalatedKind, EscalationRule] = {}
    #: The rubric by a judge model (issue 45; docs/verdicts/judge.md, "The model path"): off
    #: unless set, and only where the judge tier has an OpenAI-compatible endpoint.
    rubric: RubricEscalation | None = None
    budget: JudgeBudget = JudgeBudget()
    #: A prompt longer than this (question, contexts and answer, in characters) is not sent:
    #: the verdict DEFERs ``too_long_for_judge`` (a cut context would make supported claims
    #: look unsupported).
    max_prompt_chars: Annotated[int, Field(ge=1000, le=2_000_000)] = 48_000
    #: Completion tokens asked for at most (and reserved in the token budget per request).
    max_completion_tokens: Annotated[int, Field(ge=64, le=32_768)] = 1024
    #: A request partition with requests pending and no commit for this long is stalled:
    #: logged with its offsets and counted on ``/metrics`` (``vf_worker_stalled_partitions``).
    stall_seconds: Annotated[float, Field(ge=5, le=86_400)] = 300.0

    @property
    def enabled(self) -> bool:
        return bool(self.escalate) or self.rubric is not None


class FaithfulnessLlmPolicy(_Strict):
    """Higher is better: PASS at or above ``threshold``, the share of the answer's claims the
    judge found supported (a placeholder until calibrated on your data)."""

    threshold: Unit = 0.8
