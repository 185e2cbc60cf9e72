"""People's labels as a data set (issue 44): the export joins the latest entry and each
reviewer's latest label, filters by kind, tenant and time, reads back byte for byte; reviewers
vote on the golden label (ties left out); the faithfulness labels become a training source."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.console.test_review import EVERY_ANSWER, fed
from verdictflow.scoring_jobs.calibration.kinds import CalibrationError
from verdictflow.scoring_jobs.calibration.labelled import (
    ExportFilter,
    dump_items,
    golden_from_items,
    labelled_items,
    read_items,
    team_set,
    tenants_with,
)


def test_export_vote_and_training_set(
    tmp_path: Path, sample_lines: list[bytes], sample_verdicts: list[bytes]
) -> None:
    queue = fed(sample_lines, sample_verdicts, EVERY_ANSWER).review
    clock = iter(range(1_000, 2_000))
    queue.clock = lambda: float(next(clock))
    labels = []
    faithful = [(e, v) for e in queue.entries.values() for v in e.verdicts
                if v.kind == "faithfulness"]  # fmt: skip
    assert len(faithful) >= 4
    for n, (entry, v) in enumerate(faithful[:4]):
        for who in ("alice", "bob"):
            # alice says pass, fail, pass, fail; bob agrees except on the last: a tie there
            expected = "pass" if n % 2 == 0 or (who == "bob" and n == 3) else "fail"
            labels.append(queue.make_label(reviewer=who, role="reviewer", input_id=entry.input_id,
                                           verdict_id=v.verdict_id, expected=expected))  # fmt: skip
    first, first_verdict = faithful[0]
    relabel = queue.make_label(
        reviewer="alice", role="reviewer", input_id=first.input_id,
        verdict_id=first_verdict.verdict_id, expected="pass", note="sure",
    )  # fmt: skip
    records = [x.model_dump(mode="json") for x in [*labels, relabel]]
    entries = [e.model_dump(mode="json") for e in queue.entries.values()]
    rows, orphans = labelled_items(entries, records)
    assert (len(rows), orphans) == (4, 0)
    assert [x.note for x in rows[[r.input_id for r in rows].index(faithful[0][0].input_id)].labels
            if x.reviewer == "alice"] == ["sure"]  # fmt: skip
    path = tmp_path / "labels.jsonl"
    path.write_bytes(dump_items(rows))
    assert dump_items(read_items(path)) == path.read_bytes()
    later, _ = labelled_items(entries, records, ExportFilter(since=1_005))
    assert sum(len(r.labels) for r in later) == len(
        [x for x in records if x["labelled_at"] >= 1005]
    )
    assert labelled_items(entries, records, ExportFilter(kinds=frozenset({"relevance"})))[0] == []

    found = golden_from_items(rows, "faithfulness")
    majority = {faithful[n][0].input_id: n % 2 == 0 for n in range(3)}  # the 4th is a tie
    assert found.ties == 1
    assert found.golden.positives == [majority[r.input_id] for r in rows if r.input_id in majority]
    training = team_set(path)
    assert training.name == "team-labels"
    assert training.source == "team"
    assert list(training.targets) == [1.0 if majority[i] else 0.0 for i in training.groups]
    with pytest.raises(CalibrationError, match="both"):
        golden_from_items(rows[:1], "faithfulness")


def test_tenants_with_enough_labels_of_both_outcomes(
    sample_lines: list[bytes], sample_verdicts: list[bytes]
) -> None:
    queue = fed(sample_lines, sample_verdicts, EVERY_ANSWER).review
    picks = [(e, v) for e in queue.entries.values() for v in e.verdicts if v.kind == "groundedness"]
    labels = [
        queue.make_label(reviewer="alice", role="reviewer", input_id=e.input_id,
                         verdict_id=v.verdict_id, expected="pass" if n % 2 else "fail")
        for n, (e, v) in enumerate(picks)
    ]  # fmt: skip
    rows, _ = labelled_items(
        [e.model_dump(mode="json") for e in queue.entries.values()],
        [x.model_dump(mode="json") for x in labels],
    )
    tenants = {r.tenant for r in rows if r.tenant}
    assert tenants
    assert tenants_with(rows, "groundedness", 2) == sorted(
        t for t in tenants
        if {r.labels[0].expected for r in rows if r.tenant == t} == {"pass", "fail"}
        and sum(r.tenant == t for r in rows) >= 2
    )  # fmt: skip
    assert tenants_with(rows, "groundedness", len(rows) + 1) == []


def test_calibrate_on_labels_moves_the_threshold_they_imply(
    tmp_path: Path, sample_lines: list[bytes], sample_verdicts: list[bytes]
) -> None:
    """Reviewers who pass only the best-grounded answers: ``calibrate --labels`` raises the
    groundedness threshold above the default 0.8 and records the fit in the policy."""
    from typer.testing import CliRunner

    from verdictflow.cli.app import app
    from verdictflow.evaluators.policy import load_policy

    queue = fed(sample_lines, sample_verdicts, EVERY_ANSWER).review
    picks = [(e, v) for e in queue.entries.values() for v in e.verdicts if v.kind == "groundedness"]
    best = max(v.score for _, v in picks if v.score is not None)
    assert sum(v.score == best for _, v in picks) >= 1
    assert any(v.score is not None and 0.8 <= v.score < best for _, v in picks)
    labels = [
        queue.make_label(reviewer="alice", role="reviewer", input_id=e.input_id,
                         verdict_id=v.verdict_id, expected="pass" if v.score == best else "fail")
        for e, v in picks
    ]  # fmt: skip
    rows, _ = labelled_items(
        [e.model_dump(mode="json") for e in queue.entries.values()],
        [x.model_dump(mode="json") for x in labels],
    )
    exported, fitted = tmp_path / "labels.jsonl", tmp_path / "fitted.yaml"
    exported.write_bytes(dump_items(rows))
    result = CliRunner().invoke(
        app, ["calibrate", "--labels", str(exported), "--kind", "groundedness",
              "--out", str(fitted)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    before, after = load_policy(None), load_policy(fitted)
    assert before.groundedness.threshold == 0.8
    assert after.groundedness.threshold > max(v.score for _, v in picks if v.score < best)
    assert after.digest() != before.digest()
    assert after.calibration["groundedness"].golden_rows == len(rows)
