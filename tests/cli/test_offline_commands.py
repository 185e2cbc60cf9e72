"""The command line without a broker: eval, schemas, and error handling."""

from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from tests.support.paths import ROOT
from tests.support.processes import run_verdictflow
from verdictflow.cli import app
from verdictflow.context_store import FILE_NAME
from verdictflow.evaluators.policy import Policy
from verdictflow.models.codec import DEFAULT_MAX_EVENT_BYTES, encode
from verdictflow.scoring_jobs.batch.answer_chunks import ChunkScorers, ScoringProcessDiedError
from verdictflow.scoring_jobs.batch.eval_answers import Output, evaluate_answers
from verdictflow.scoring_jobs.batch.topic_schemas import TOPIC_VALUE_MODELS
from verdictflow.scoring_setup import ScoringRecipe

runner = CliRunner()
SPEC_FILE = Path(str(resources.files("verdictflow") / "samples" / "answers.jsonl"))


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    """``eval answers`` keeps context indexes in the data dir: a temporary one per test, not
    the checkout's ``.verdictflow``."""
    monkeypatch.setenv("VERDICTFLOW_DATA_DIR", str(tmp_path / "data"))


def test_eval_answers_prints_the_spec_values():
    result = runner.invoke(app, ["eval", "answers", str(SPEC_FILE)])
    assert result.exit_code == 0, result.output
    verdicts = [orjson.loads(line) for line in result.stdout.splitlines()]
    scores = {(v["kind"], v["input_id"]): v["score"] for v in verdicts}
    assert scores[("groundedness", "spec-q1-both-contexts")] == 1.0
    assert scores[("groundedness", "spec-q1-c1-only")] == 0.6
    assert round(scores[("consistency", "spec-q2")], 4) == 0.6556


def test_eval_answers_reads_a_windows_file_a_json_array_and_stdin_as_the_jsonl_they_hold(tmp_path):
    """A UTF-8 byte order mark and CRLF line ends (Notepad, PowerShell 5): the first answer was
    a dead letter ("not_json: UTF-8 byte order mark (BOM) is not supported")."""
    plain = SPEC_FILE.read_bytes()
    windows = tmp_path / "windows.jsonl"
    windows.write_bytes(b"\xef\xbb\xbf" + plain.replace(b"\n", b"\r\n"))
    expected = runner.invoke(app, ["eval", "answers", str(SPEC_FILE)])
    result = runner.invoke(app, ["eval", "answers", str(windows)])
    assert result.exit_code == 0, result.output
    assert result.stdout == expected.stdout
    assert result.output.count("not_json") == expected.output.count("not_json")  # its bad line
    rows = [orjson.loads(line) for line in plain.splitlines() if line.startswith(b'{"id":"spec')]
    array = tmp_path / "array.json"  # as POST /v1/answers takes: one JSON array, pretty-printed
    array.write_bytes(orjson.dumps(rows, option=orjson.OPT_INDENT_2))
    as_array = runner.invoke(app, ["eval", "answers", str(array)])
    assert as_array.exit_code == 0, as_array.output
    assert (
        as_array.stdout
        == runner.invoke(app, ["eval", "answers", str(_jsonl(tmp_path, rows))]).stdout
    )
    assert len(as_array.stdout.splitlines()) > len(rows)  # was: no verdict, a dead letter a line
    piped = runner.invoke(app, ["eval", "answers", "-"], input=plain)  # "-": standard input
    assert piped.exit_code == 0, piped.output
    assert piped.stdout == expected.stdout
    assert '"source_topic":"stdin"' in piped.output  # its bad line, named


def _jsonl(tmp_path, rows):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def test_eval_table_format_shows_four_decimals():
    result = runner.invoke(app, ["eval", "answers", str(SPEC_FILE), "--format", "table"])
    assert result.exit_code == 0
    assert "0.6556" in result.stdout
    assert "0.6000" in result.stdout


def test_eval_is_byte_stable_across_processes(tmp_path):
    """The second run reads its context indexes from the store the first one wrote."""
    env = {**os.environ, "VERDICTFLOW_DATA_DIR": str(tmp_path / "data")}

    def run(*flags: str) -> str:
        return run_verdictflow("eval", "answers", str(SPEC_FILE), *flags, env=env, check=True)

    first = run().stdout
    store = tmp_path / "data" / FILE_NAME
    with sqlite3.connect(store) as db:
        (rows,) = db.execute("SELECT COUNT(*) FROM evidence_indexes").fetchone()
    assert rows == 6, "each of the sample's six distinct contexts indexed once and kept"
    second = run().stdout
    assert first == second
    assert first.count("\n") == 63  # 11 answers x 5 per-answer kinds + 8 consistency
    store.unlink()
    off = runner.invoke(app, ["eval", "answers", str(SPEC_FILE), "--no-context-store"], env=env)
    assert off.stdout == first
    assert not store.exists()


def test_eval_reports_malformed_lines_as_dead_letters():
    result = run_verdictflow("eval", "answers", str(SPEC_FILE), check=True)
    dead = [json.loads(line) for line in result.stderr.splitlines()]  # nothing else there
    assert [(d["offset"], d["error_code"]) for d in dead] == [(12, "schema"), (13, "not_json")]


def test_policy_change_is_visible_in_verdicts(tmp_path):
    strict = tmp_path / "strict.yaml"
    strict.write_text("groundedness:\n  threshold: 0.95\n")
    default = runner.invoke(app, ["eval", "answers", str(SPEC_FILE)]).stdout.splitlines()
    changed = runner.invoke(app, ["eval", "answers", str(SPEC_FILE), "--policy", str(strict)])
    a, b = orjson.loads(default[0]), orjson.loads(changed.stdout.splitlines()[0])
    assert a["config_digest"] != b["config_digest"]
    assert a["verdict_id"] != b["verdict_id"]
    assert b["threshold"] == 0.95


def test_malformed_policy_exits_with_one_clear_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("groundedness:\n  threshold: 2\n")
    result = run_verdictflow("eval", "answers", str(SPEC_FILE), "--policy", str(bad))
    assert result.returncode == 2
    assert "error:" in result.stderr
    assert "groundedness.threshold" in result.stderr
    assert "Traceback" not in result.stderr


def test_worker_refuses_to_start_with_malformed_policy(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("consistency: {window_seconds: -1}\n")
    result = run_verdictflow(
        "worker", "--policy", str(bad), "--broker", "kafka://127.0.0.1:1", timeout=60
    )
    assert result.returncode == 2
    assert "consistency.window_seconds" in result.stderr


def test_schemas_written_for_every_topic(tmp_path):
    result = runner.invoke(app, ["schemas", "--out", str(tmp_path)])
    assert result.exit_code == 0
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == sorted(f"{t}.schema.json" for t in TOPIC_VALUE_MODELS)
    verdict = json.loads((tmp_path / "verdicts.groundedness.schema.json").read_text())
    assert {"verdict_id", "decision", "config_digest", "evidence"} <= set(verdict["properties"])
    answer = json.loads((tmp_path / "answers.schema.json").read_text())
    assert set(answer["required"]) == {"id", "answer"}


@pytest.mark.parametrize("bad_topic", ["nope", "vf.nope"])
def test_unknown_topic_is_a_clear_error(bad_topic):
    result = run_verdictflow(
        "tail", bad_topic, "--broker", "kafka://127.0.0.1:1", "--timeout", "1", timeout=60
    )
    assert result.returncode == 2
    assert "unknown topic" in result.stderr


def test_committed_schemas_match_the_models(tmp_path):
    """schemas/ in the repo is what consumers download; it must not drift from the models."""
    runner.invoke(app, ["schemas", "--out", str(tmp_path)])
    committed = ROOT / "schemas"
    fresh = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert fresh == {p.name: p.read_bytes() for p in committed.iterdir()}, (
        "run `verdictflow schemas --out schemas` and commit the result"
    )


def test_eval_answers_in_processes_gives_every_output_in_the_same_order(tmp_path):
    """Chunks scored by two spawned processes come back in input order (dead letters and the
    consistency verdicts the parent closes included); a process that dies fails the run."""
    lines = SPEC_FILE.read_bytes().splitlines()
    recipe = ScoringRecipe(Policy(), "none", data_dir=tmp_path / "store", store_bytes=1 << 24)

    def encoded(outputs: Iterable[Output]) -> list[bytes]:
        return [encode(o.verdict or o.dead_letter) for o in outputs]  # type: ignore[arg-type]

    here = encoded(evaluate_answers(lines, recipe.load(), chunk_size=1))
    assert len(here) == 65  # 63 verdicts, 2 dead letters
    with ChunkScorers(recipe, 2, max_bytes=DEFAULT_MAX_EVENT_BYTES, vocab_limit=0) as scorers:
        apart = encoded(evaluate_answers(lines, recipe.load(), chunk_size=1, processes=scorers))
        assert apart == here
        for child in multiprocessing.active_children():
            child.kill()
        with pytest.raises(ScoringProcessDiedError, match="rather than skip answers"):
            list(evaluate_answers(lines, recipe.load(), chunk_size=1, processes=scorers))


def test_eval_answers_jobs_flag_prints_what_one_process_prints(tmp_path):
    """Two chunks of 64 lines (the sample six times over: 78 lines), so two processes."""
    file = tmp_path / "answers.jsonl"
    file.write_bytes(SPEC_FILE.read_bytes() * 6)
    one = run_verdictflow("eval", "answers", str(file), "--no-context-store", check=True)
    two = run_verdictflow(
        "eval", "answers", str(file), "--no-context-store", "--jobs", "2", check=True
    )
    assert two.stdout == one.stdout
    assert two.stderr == one.stderr  # the dead letters, in order
    assert two.stderr.count('"error_code"') == 12


JUDGED_POLICY = "judge_tier:\n  escalate: {faithfulness: {band: [0.0, 1.0], fail: true}}\n"


def test_eval_answers_judge_local_dead_letters_the_answer_its_backend_fails_on(tmp_path):
    """A backend that raises on one answer (a bug one input trips) costs that answer's judge
    verdict, as in the stream: a dead letter naming its line; every other answer is judged."""
    from tests.support.openai_standin import StandIn, serve
    from verdictflow.evaluators.policy import load_policy
    from verdictflow.judge_tier.backends import OpenAIBackend
    from verdictflow.judge_tier.client import JudgeClient
    from verdictflow.scoring_jobs.batch.eval_judge import judge_verdicts
    from verdictflow.scoring_setup import load_scoring

    class TripsOnOne(OpenAIBackend):
        async def ask(self, event, max_tokens, messages=None):  # type: ignore[no-untyped-def]
            if "Globex" in event.answer:
                raise ValueError("cannot take this one")
            return await super().ask(event, max_tokens, messages)

    context = "Acme Corp acquired Globex in 2019. The Nile is longer than the Amazon."
    answers = [
        {"id": "ok-1", "answer": "The Nile is longer than the Amazon.", "contexts": [context]},
        {"id": "trips", "answer": "Acme Corp acquired Globex in 2019.", "contexts": [context]},
        {"id": "ok-2", "answer": "The Amazon is longer than the Nile.", "contexts": [context]},
    ]
    lines = [b"", *(orjson.dumps(a) for a in answers)]  # the blank line 1 is not an answer
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(JUDGED_POLICY)
    policy = load_policy(policy_file)
    cheap = [o.verdict for o in evaluate_answers(lines, load_scoring(policy)) if o.verdict]
    with serve(StandIn()) as url:
        backend = TripsOnOne(url, "standin-judge", "k", timeout=10)
        judged = judge_verdicts(lines, cheap, policy, JudgeClient(backend, policy.judge_tier),
                                "answers.jsonl")  # fmt: skip
    assert sorted(v.input_id for v in judged.verdicts) == ["ok-1", "ok-2"]
    (letter,) = judged.dead_letters
    assert (letter.source_topic, letter.offset, letter.error_code) == (
        "answers.jsonl", 3, "internal_error",
    )  # fmt: skip
    assert "ValueError: cannot take this one" in letter.error
    assert orjson.loads(letter.raw)["id"] == "trips"


def test_eval_answers_judge_local_stops_with_one_line_when_the_endpoint_is_down(tmp_path):
    """Nothing listens at the judge URL: after its attempts the command says so in one line,
    exits 2 and writes no verdict (a file without the judge's share would read as judged)."""
    from verdictflow.dev_servers import free_port

    policy = tmp_path / "policy.yaml"
    policy.write_text(JUDGED_POLICY)
    env = {
        **os.environ,
        "VERDICTFLOW_JUDGE_URL": f"http://127.0.0.1:{free_port()}/v1",
        "VERDICTFLOW_JUDGE_MODEL": "absent",
        "VERDICTFLOW_JUDGE_MAX_ATTEMPTS": "2",
    }
    result = run_verdictflow("eval", "answers", SPEC_FILE, "--judge", "local", "--policy", policy,
                             env=env)  # fmt: skip
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()  # no blank line from the progress bar either
    assert line.startswith("error: the judge endpoint did not answer")
