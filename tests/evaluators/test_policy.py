from __future__ import annotations

import pytest
from pydantic import ValidationError

from verdictflow.evaluators.policy import Policy, gate, load_policy, reason
from verdictflow.exceptions import PolicyError
from verdictflow.models.verdicts import Decision, Reason, ReasonCode


def test_defaults_without_file():
    policy = load_policy(None)
    assert policy.groundedness.threshold == 0.80
    assert policy.consistency.threshold == 0.60


def test_file_overrides_and_digest_tracks_effective_config(tmp_path):
    explicit_defaults = tmp_path / "same.yaml"
    explicit_defaults.write_text("groundedness:\n  threshold: 0.8\n")
    stricter = tmp_path / "strict.yaml"
    stricter.write_text("groundedness:\n  threshold: 0.9\n")
    assert load_policy(explicit_defaults).digest() == Policy().digest()
    assert load_policy(stricter).digest() != Policy().digest()
    assert load_policy(stricter).groundedness.threshold == 0.9


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_a_policy_saved_by_windows_tools_reads_as_the_same_policy(tmp_path, encoding):
    """Notepad's UTF-8 with a BOM, PowerShell 5's UTF-16: YAML reads either from the bytes
    (UTF-16 was a UnicodeDecodeError traceback)."""
    path = tmp_path / "policy.yaml"
    path.write_bytes("groundedness:\r\n  threshold: 0.9\r\n".encode(encoding))
    assert load_policy(path).groundedness.threshold == 0.9
    path.write_bytes(b"groundedness: \xff\n")
    with pytest.raises(PolicyError, match="not valid YAML"):
        load_policy(path)


def test_tokenizer_option_changes_digest():
    assert Policy(tokenizer={"remove_stopwords": True}).digest() != Policy().digest()


def test_the_summaries_faithfulness_switch_is_read_but_not_digested(tmp_path):
    """It decides whether summaries get a faithfulness verdict, not what any verdict says:
    switching it must not change every verdict id."""
    off = tmp_path / "off.yaml"
    off.write_text("faithfulness:\n  summaries: false\n")
    assert Policy().faithfulness.summaries is True
    assert load_policy(off).faithfulness.summaries is False
    assert load_policy(off).digest() == Policy().digest()
    assert Policy.model_validate(load_policy(off).model_dump(mode="json")) == load_policy(off)
    assert Policy(faithfulness={"threshold": 0.5}).digest() != Policy().digest()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("groundedness:\n  threshold: 1.5\n", "less than or equal to 1"),
        ("groundednes:\n  threshold: 0.5\n", "Extra inputs are not permitted"),
        ("- a\n- b\n", "must hold a mapping"),
        ("groundedness: [unclosed\n", "not valid YAML"),
        ("consistency:\n  threshold: high\n", "valid number"),
    ],
)
def test_malformed_policy_is_refused_with_a_clear_reason(tmp_path, text, fragment):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(PolicyError, match=fragment):
        load_policy(path)


def test_missing_policy_file(tmp_path):
    with pytest.raises(PolicyError, match="cannot read"):
        load_policy(tmp_path / "absent.yaml")


def test_gate_is_inclusive_at_threshold():
    assert gate(0.8, 0.8)[0] is Decision.PASS
    decision, reason = gate(0.7999, 0.8)
    assert decision is Decision.FAIL
    assert reason.code is ReasonCode.BELOW_THRESHOLD


def test_shared_reasons_are_the_reasons_asked_for_and_cannot_be_changed():
    """Reasons are shared between verdicts (``policy.reason``): equal to a new one, frozen."""
    first, again = gate(0.5, 0.8)[1], gate(0.5, 0.8)[1]
    assert first is again
    assert first == Reason(code=ReasonCode.BELOW_THRESHOLD, detail="score 0.5000 < 0.8000")
    with pytest.raises(ValidationError):
        first.detail = "changed"  # type: ignore[misc]
    assert gate(0.6, 0.8)[1].detail == "score 0.6000 < 0.8000"
    long = "the judge's reply: " + "x" * 500  # not kept: the shared reasons stay small
    assert reason(ReasonCode.JUDGE_OUTPUT_INVALID, long) is not reason(
        ReasonCode.JUDGE_OUTPUT_INVALID, long
    )
    assert reason(ReasonCode.JUDGE_OUTPUT_INVALID, long).detail == long
