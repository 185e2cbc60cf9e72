"""Inputs of the retrieval A/B harness, in every format the spec and BEIR use.

- queries: TSV ``qid<TAB>text`` without header, or BEIR ``queries.jsonl`` (``_id``, ``text``);
- qrels: TSV ``qid<TAB>doc_id<TAB>rel`` without header, BEIR TSV with the header
  ``query-id corpus-id score``, or TREC ``qid 0 doc rel``;
- corpus: JSONL with ``id``/``text`` or BEIR ``_id``/``title``/``text``.

The format is recognised from the content, not the file name. Every problem is an
:class:`RQInputError` naming the file and line, so the CLI can exit with one clear line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import orjson

from verdictflow.exceptions import VerdictflowError
from verdictflow.input_files import text_lines


class RQInputError(VerdictflowError):
    """An unreadable or inconsistent input of the evaluation harness."""


@dataclass(frozen=True)
class Document:
    doc_id: str
    text: str


def _lines(path: Path) -> list[tuple[int, str]]:
    try:
        lines = text_lines(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise RQInputError(f"cannot read {path}: {exc}") from None
    return [(n, line) for n, line in enumerate(lines, start=1) if line.strip()]


def _json_object(path: Path, n: int, line: str) -> dict[str, object]:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise RQInputError(f"{path}:{n}: not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise RQInputError(f"{path}:{n}: expected a JSON object")
    return value


def read_queries(path: Path) -> dict[str, str]:
    """``{qid: text}`` from a TSV or BEIR JSONL queries file; duplicate qids are an error."""
    queries: dict[str, str] = {}
    for n, line in _lines(path):
        if line.lstrip().startswith("{"):
            row = _json_object(path, n, line)
            qid, text = row.get("_id", row.get("id")), row.get("text")
        else:
            qid, sep, text = line.partition("\t")
            if not sep:
                raise RQInputError(f"{path}:{n}: expected 'qid<TAB>text'")
        if not isinstance(qid, str) or not qid or not isinstance(text, str):
            raise RQInputError(f"{path}:{n}: a query needs a string id and text")
        if not text.strip():
            raise RQInputError(f"{path}:{n}: query {qid!r} has no text")
        if qid in queries:
            raise RQInputError(f"{path}:{n}: duplicate query id {qid!r}")
        queries[qid] = text
    return queries


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """``{qid: {doc_id: rel}}`` from spec TSV, BEIR TSV (with header) or TREC qrels."""
    qrels: dict[str, dict[str, int]] = {}
    rows = _lines(path)
    if rows and rows[0][1].split("\t")[0].strip().lower() == "query-id":
        rows = rows[1:]  # BEIR header
    for n, line in rows:
        parts = line.split("\t") if "\t" in line else line.split()
        parts = [p.strip() for p in parts]
        if len(parts) == 4:  # TREC: qid iter doc rel
            parts = [parts[0], parts[2], parts[3]]
        if len(parts) != 3:
            raise RQInputError(f"{path}:{n}: expected 'qid<TAB>doc_id<TAB>rel' or 'qid 0 doc rel'")
        qid, doc, rel = parts
        try:
            value = int(rel)
        except ValueError:
            raise RQInputError(f"{path}:{n}: relevance {rel!r} is not an integer") from None
        judged = qrels.setdefault(qid, {})
        if doc in judged:
            raise RQInputError(f"{path}:{n}: duplicate judgment for query {qid!r}, doc {doc!r}")
        judged[doc] = value
    if not qrels:
        raise RQInputError(f"{path}: no judgments")
    return qrels


def read_corpus(path: Path) -> list[Document]:
    """Documents from JSONL (``id``/``text``, or BEIR ``_id``/``title``/``text``)."""
    docs: list[Document] = []
    seen: set[str] = set()
    for n, line in _lines(path):
        row = _json_object(path, n, line)
        doc_id = row.get("_id", row.get("id"))
        text = row.get("text", "")
        title = row.get("title", "")
        if not isinstance(doc_id, str) or not doc_id or not isinstance(text, str):
            raise RQInputError(f"{path}:{n}: a document needs a string id and text")
        if doc_id in seen:
            raise RQInputError(f"{path}:{n}: duplicate document id {doc_id!r}")
        seen.add(doc_id)
        full = f"{title}\n{text}" if isinstance(title, str) and title else text
        docs.append(Document(doc_id, full))
    if not docs:
        raise RQInputError(f"{path}: no documents")
    return docs
