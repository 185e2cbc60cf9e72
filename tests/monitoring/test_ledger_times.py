"""The ledger archives every verdict, whatever event time an old record carries."""

from __future__ import annotations

from pathlib import Path

import orjson

from verdictflow.models.verdicts import Decision, Reason, ReasonCode, Verdict, VerdictKind
from verdictflow.monitoring.ledger import UNDATED, Ledger, ledger_day


def verdict(vid: str, event_ts: float | None) -> bytes:
    return orjson.dumps(
        Verdict(
            verdict_id=vid, kind=VerdictKind.GROUNDEDNESS, input_id=vid, score=1.0,
            threshold=0.8, decision=Decision.PASS,
            reasons=[Reason(code=ReasonCode.AT_OR_ABOVE_THRESHOLD, detail="")], evidence={},
            config_digest="c", tokenizer_version="t", environment_digest="e", event_ts=event_ts,
        ).model_dump(mode="json")
    )  # fmt: skip


def test_an_unusable_event_time_is_filed_undated_and_counted(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    for i, ts in enumerate([1e308, 253402300799.0 + 86400, -1e20, 1714564800.0]):
        assert ledger.append(verdict(f"v{i}", ts))
    ledger.close()
    assert (ledger.written, ledger.bad_times) == (4, 3)
    assert len((tmp_path / UNDATED / "groundedness.jsonl").read_bytes().splitlines()) == 3
    assert ledger_day(1714564800.0) == "2024-05-01"
    rerun = Ledger(tmp_path)  # a rerun resumes: everything is already there
    assert not rerun.append(verdict("v0", 1e308))
