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
    path = tmp_path / "s.jsonl"
    path.write_bytes(orjson.dumps(EVENT) + b"\nnot json\n")
    out = run_verdictflow("eval", "summaries", path, "--judge", "twin_lock")
    assert out.returncode == 0, out.stderr
    verdicts = [orjson.loads(line) for line in out.stdout.splitlines()]
    assert [(v["input_id"], v["judge"]) for v in verdicts] == [("s1", "twin_lock")]
    assert '"error_code":"not_json"' in out.stderr
    both = run_verdictflow("eval", "summaries", path)
    assert [orjson.loads(x)["judge"] for x in both.stdout.splitlines()] == [
        "twin_lock",
        "judge_lock",
    ]
    assert orjson.loads(both.stdout.splitlines()[0]) == verdicts[0]  # same bytes, same verdict


def test_eval_summaries_bad_judge_is_one_line_error(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(orjson.dumps(EVENT) + b"\n")
    out = run_verdictflow("eval", "summaries", path, "--judge", "gpt")
    assert out.returncode == 2
    assert "--judge must be one of" in out.stderr
