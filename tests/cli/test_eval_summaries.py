"""``verdictflow eval summaries`` as a user runs it: verdicts on stdout, dead letters on stderr."""

from __future__ import annotations

import orjson

from tests.support.processes import run_verdictflow

EVENT = {
    "id": "s1",
    "article": "The city council approved a new budget of 5 million dollars on Monday after a "
    "long debate. The mayor said the money will fund three new schools in the north.",
    "summary": "The council approved a budget of 5 million dollars for three new schools.",
}


def test_eval_summaries_judge_option_and_dead_letters(tmp_path):
    """``--judge`` picks the judges; each summary's faithfulness verdict follows them."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(orjson.dumps(EVENT) + b"\nnot json\n")
    out = run_verdictflow("eval", "summaries", path, "--judge", "twin_lock")
    assert out.returncode == 0, out.stderr
    verdicts = [orjson.loads(line) for line in out.stdout.splitlines()]
    assert [(v["input_id"], v["kind"], v.get("judge")) for v in verdicts] == [
        ("s1", "judge", "twin_lock"),
        ("s1", "faithfulness", None),
    ]
    assert '"error_code":"not_json"' in out.stderr
    both = run_verdictflow("eval", "summaries", path)
    lines = both.stdout.splitlines()
    assert [orjson.loads(x).get("judge") for x in lines] == ["twin_lock", "judge_lock", None]
    assert orjson.loads(lines[0]) == verdicts[0]  # same bytes, same verdict
    assert orjson.loads(lines[2]) == verdicts[1]


def test_eval_summaries_policy_switch_and_table(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(orjson.dumps(EVENT) + b"\n")
    policy = tmp_path / "policy.yaml"
    policy.write_text("faithfulness:\n  summaries: false\n")
    off = run_verdictflow("eval", "summaries", path, "--policy", policy)
    assert off.returncode == 0, off.stderr
    assert [orjson.loads(x)["kind"] for x in off.stdout.splitlines()] == ["judge", "judge"]
    table = run_verdictflow("eval", "summaries", path, "--format", "table")
    assert table.returncode == 0, table.stderr
    assert "judge verdicts" in table.stdout
    assert "faithfulness verdicts" in table.stdout


def test_eval_summaries_bad_judge_is_one_line_error(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(orjson.dumps(EVENT) + b"\n")
    out = run_verdictflow("eval", "summaries", path, "--judge", "gpt")
    assert out.returncode == 2
    assert "--judge must be one of" in out.stderr
