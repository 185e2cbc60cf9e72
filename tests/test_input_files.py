"""Files users hand the commands: a UTF-8 byte order mark at the start is dropped, and lines end
at "\\n", "\\r\\n" or "\\r" only (not at U+2028, U+0085, ... inside a JSON string), for every
reader (``verdictflow.input_files``)."""

from __future__ import annotations

import codecs
from pathlib import Path

import orjson
import pytest

from verdictflow.input_files import (
    InputFileError,
    event_records,
    file_lines,
    stream_lines,
    text_lines,
)
from verdictflow.models.labels import LabelledItem
from verdictflow.scoring_jobs.batch.build_idf import iter_documents
from verdictflow.scoring_jobs.batch.score_quality import load_degrees
from verdictflow.scoring_jobs.calibration.calibrate import read_golden
from verdictflow.scoring_jobs.calibration.labelled import read_items
from verdictflow.scoring_jobs.retrieval_eval.inputs import read_corpus, read_qrels, read_queries
from verdictflow.scoring_jobs.retrieval_eval.trec_io import read_trec_qrels, read_trec_run
from verdictflow.streams.replay import read_lines

BOM = codecs.BOM_UTF8
#: Line breaks to ``str.splitlines`` that JSON strings may hold unescaped.
BREAKS = "\u2028\u2029\u0085\x1c\x1d\x1e"


def test_a_leading_bom_is_dropped_and_lines_break_only_at_newlines(tmp_path: Path) -> None:
    record = orjson.dumps({"id": "a1", "answer": f"one{BREAKS}two"})
    path = tmp_path / "a.jsonl"
    path.write_bytes(BOM + record + b"\r\n\r\n" + record + b"\n" + BOM + record)
    assert file_lines(path) == [record, b"", record, BOM + record]  # only the file's start
    assert text_lines(path) == [record.decode(), "", record.decode(), (BOM + record).decode()]
    with path.open("rb") as handle:
        assert next(stream_lines(handle)) == record + b"\r\n"
    path.write_bytes(BOM + b"\xff")
    with pytest.raises(UnicodeDecodeError):
        text_lines(path)


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be", "utf-32", "utf-32-le"])
def test_a_utf16_or_utf32_file_with_its_mark_reads_as_its_text(tmp_path: Path, codec: str) -> None:
    """PowerShell 5's ``>`` writes UTF-16: every line was a dead letter."""
    record = '{"id": "a1", "answer": "Zoë\u2028ok"}'
    path = tmp_path / "wide.jsonl"
    mark = {"utf-16-be": codecs.BOM_UTF16_BE, "utf-32-le": codecs.BOM_UTF32_LE}.get(codec, b"")
    path.write_bytes(mark + f"{record}\r\n\r\n{record}\n".encode(codec))
    assert file_lines(path) == [record.encode(), b"", record.encode()]
    assert text_lines(path) == [record, "", record]
    with path.open("rb") as handle:
        assert list(stream_lines(handle)) == [(record + "\r\n").encode(), b"\r\n",
                                              (record + "\n").encode()]  # fmt: skip
        assert not handle.closed


def test_a_file_that_is_not_what_its_mark_says_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    path.write_bytes(codecs.BOM_UTF16_LE + b'{\x00"\x00\x00\xd8')  # a lone surrogate
    with pytest.raises(InputFileError, match=r"odd.jsonl: starts with a UTF-16 .*save it as UTF-8"):
        file_lines(path)
    with path.open("rb") as handle, pytest.raises(InputFileError, match=r"odd\.jsonl"):
        list(stream_lines(handle))


def _with_bom(path: Path, text: str) -> Path:
    path.write_bytes(BOM + text.encode())
    return path


@pytest.mark.parametrize(
    ("name", "text", "read"),
    [
        ("run.trec", "q1 Q0 d1 1 2.5 sys\n", read_trec_run),
        ("qrels.trec", "q1 0 d1 1\n", read_trec_qrels),
        ("qrels.tsv", "q1\td1\t1\n", read_qrels),
        ("queries.tsv", "q1\twhat is it\n", read_queries),
        ("corpus.jsonl", '{"_id": "d1", "text": "one\u2028two"}\n', read_corpus),
        ("edges.jsonl", '{"src": "a", "dst": "b"}\n', load_degrees),
        ("answers.jsonl", '{"id": "a1", "answer": "x\u0085y"}\n', read_lines),
        ("corpus.jsonl", '{"text": "one\u2029two"}\n', lambda p: list(iter_documents([p]))),
        (
            "golden.jsonl",
            '{"id": "a1", "answer": "x", "contexts": ["x"], "label": "pass"}\n'
            '{"id": "a2", "answer": "y\u2028z", "contexts": ["x"], "label": "fail"}\n',
            lambda p: read_golden(p, "groundedness").events,
        ),
    ],
)
def test_each_reader_reads_a_file_with_a_bom_as_the_file_without(
    tmp_path: Path, name: str, text: str, read: object
) -> None:
    assert callable(read)
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / name).write_text(text, encoding="utf-8")
    marked = _with_bom(tmp_path / name, text)
    assert read(marked) == read(plain / name)


def test_a_labelled_export_with_a_bom_reads(tmp_path: Path) -> None:
    verdict = {"verdict_id": "v1", "kind": "groundedness", "tier": "lexical", "decision": "PASS",
               "score": 0.9, "threshold": 0.8, "config_digest": "d"}  # fmt: skip
    row = {"input_id": "a1", "kind": "groundedness", "tier": "lexical", "labels": [],
           "event": {"id": "a1", "answer": "x\u2028y"}, "verdict": verdict}  # fmt: skip
    path = _with_bom(tmp_path / "labels.jsonl", orjson.dumps(row).decode() + "\n")
    assert read_items(path) == [LabelledItem.model_validate(row)]


def test_an_events_file_may_be_jsonl_one_json_array_or_one_pretty_printed_event(
    tmp_path: Path,
) -> None:
    events = [{"id": "a1", "answer": "x"}, {"id": "a2", "answer": "y"}]
    records = [orjson.dumps(e) for e in events]
    path = tmp_path / "events.json"
    for body, expected in [
        (b"\n".join(records) + b"\n\n", [*records, b""]),  # JSONL: blank lines kept
        (orjson.dumps(events, option=orjson.OPT_INDENT_2), records),  # an array, pretty
        (BOM + orjson.dumps(events), records),  # an array on one line
        (orjson.dumps(events[0], option=orjson.OPT_INDENT_2), records[:1]),  # one event
        (b"[1, 2]\n" + records[0], [b"[1, 2]", records[0]]),  # not one array: lines
        (b"{\n  broken\n}", [b"{", b"  broken", b"}"]),  # not one object: each line
    ]:
        path.write_bytes(body)
        assert event_records(path) == expected, body
    golden = [{"id": "a1", "answer": "x", "contexts": ["x"], "label": "pass"},
              {"id": "a2", "answer": "y", "contexts": ["x"], "label": "fail"}]  # fmt: skip
    path.write_bytes(orjson.dumps(golden, option=orjson.OPT_INDENT_2))  # calibrate's too
    as_array = read_golden(path, "groundedness")
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in golden))
    assert as_array.events == read_golden(path, "groundedness").events
