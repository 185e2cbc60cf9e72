"""The review policy (issue 44): which verdicts come to people, and how far their agreement
with people may fall before an alert.

```yaml
review:
  sample:
    kinds:
      faithfulness: {fail: true, band: [0.25, 0.60], pass_sample: 0.02}
      faithfulness_llm: {fail: true}
    disagreement: true
  agreement:
    min_agreement: 0.7
    window_seconds: 86400
    min_labels: 20
```

``sample.kinds`` names verdict kinds of answers (the registry's names) and, for each, what of
its verdicts is queued: every FAIL (``fail``), a scored verdict in ``band`` (the kind's own
units, both ends included: the uncertain band), a deterministic share of PASSes chosen by
verdict id (``pass_sample``). ``disagreement`` queues an input whose cheap ``faithfulness`` and
judge-tier ``faithfulness_llm`` verdicts decided differently. An input is queued once however
many of its verdicts are sampled, and however often they are delivered.

``agreement`` raises an ``agreement_drop`` alert when, within one window of label time
(``window_seconds``), the share of a kind's verdicts that reviewers found right falls under
``min_agreement`` over at least ``min_labels`` labels.

The section decides what people see, never what a verdict says: it stays out of the policy
digest (``EMISSION_SWITCHES``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

Unit = Annotated[float, Field(ge=0.0, le=1.0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SampleRule(_Strict):
    fail: bool = False
    band: tuple[float, float] | None = None
    pass_sample: Unit = 0.0

    @model_validator(mode="after")
    def _band_is_ordered(self) -> SampleRule:
        if self.band is not None and self.band[0] > self.band[1]:
            raise ValueError(f"band [{self.band[0]}, {self.band[1]}]: low above high")
        return self


def _default_kinds() -> dict[str, SampleRule]:
    return {
        "faithfulness": SampleRule(fail=True, band=(0.25, 0.60), pass_sample=0.02),
        "faithfulness_llm": SampleRule(fail=True),
        "hallucination": SampleRule(fail=True, pass_sample=0.01),
        "groundedness": SampleRule(fail=True, pass_sample=0.01),
    }


class ReviewSample(_Strict):
    kinds: dict[str, SampleRule] = Field(default_factory=_default_kinds)
    disagreement: bool = True


class AgreementBound(_Strict):
    min_agreement: Unit = 0.7
    window_seconds: Annotated[int, Field(ge=60, le=90 * 86_400)] = 86_400
    min_labels: Annotated[int, Field(ge=1, le=1_000_000)] = 20


class ReviewPolicy(_Strict):
    sample: ReviewSample = ReviewSample()
    agreement: AgreementBound = AgreementBound()
