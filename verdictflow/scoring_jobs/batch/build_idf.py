"""``verdictflow build-idf``: background document frequencies for relevance's TF-IDF.

From a document corpus: JSONL files (one document per line; the text is ``title`` + ``text``
when present, else the ``--field`` given, else ``text``/``source``/``article``/``concept_text``)
or plain text files (one document per line). Or, for the shipped default, from the ``wordfreq``
package's English frequency list (``--wordfreq``): a licence-clean, register-neutral source
(CC BY-SA 4.0; wordfreq is an optional extra, only needed to rebuild the default). Word
frequencies are turned into pseudo document frequencies under a Poisson assumption: in a corpus
of ``n_docs`` documents of ``doc_length`` tokens, a word with per-token frequency f appears in
``n_docs * (1 - exp(-doc_length * f))`` of them.
"""

from __future__ import annotations

import importlib.metadata
import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import orjson
from rich.progress import Progress

from verdictflow.evaluators.relevance import BackgroundStats, analyze, build_background_stats
from verdictflow.exceptions import VerdictflowError
from verdictflow.input_files import stream_lines

TEXT_FIELDS = ("text", "source", "article", "concept_text", "contents", "body")


class CorpusError(VerdictflowError):
    """A corpus file that cannot be read as documents."""


def _document_text(row: object, field: str | None, where: str) -> str:
    if not isinstance(row, dict):
        raise CorpusError(f"{where}: a JSONL line must be an object")
    if field is not None:
        value = row.get(field)
        if not isinstance(value, str):
            raise CorpusError(f"{where}: no string field {field!r}")
        return value
    body = next((row[f] for f in TEXT_FIELDS if isinstance(row.get(f), str)), None)
    if body is None:
        raise CorpusError(f"{where}: none of the text fields {', '.join(TEXT_FIELDS)}")
    title = row.get("title")
    return f"{title} {body}" if isinstance(title, str) and title else str(body)


def iter_documents(paths: Sequence[Path], field: str | None = None) -> Iterator[str]:
    """Document texts of every file in ``paths``, in order."""
    for path in paths:
        if not path.is_file():
            raise CorpusError(f"no such corpus file: {path}")
        jsonl = path.suffix in (".jsonl", ".json", ".ndjson")
        with path.open("rb") as handle:
            for line_no, line in enumerate(stream_lines(handle), start=1):
                if not line.strip():
                    continue
                if not jsonl:
                    yield line.decode("utf-8", "replace")
                    continue
                try:
                    row = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise CorpusError(f"{path}:{line_no}: not JSON ({exc})") from None
                yield _document_text(row, field, f"{path}:{line_no}")


def build_from_corpus(
    paths: Sequence[Path], *, min_df: int = 2, field: str | None = None, progress: bool = True
) -> BackgroundStats:
    """Statistics over the documents of ``paths`` (a progress bar per file on a terminal)."""
    names = ",".join(p.name for p in paths)
    with Progress(disable=not progress, transient=True) as bar:
        task = bar.add_task("counting documents", total=None)

        def counted() -> Iterator[str]:
            for text in iter_documents(paths, field):
                bar.advance(task)
                yield text

        return build_background_stats(counted(), min_df=min_df, source=f"corpus:{names}")


def build_from_wordfreq(
    *, n_terms: int = 60_000, n_docs: int = 100_000, doc_length: int = 300
) -> BackgroundStats:
    """Pseudo document frequencies from wordfreq's English list (needs ``pip install wordfreq``)."""
    try:
        import wordfreq
    except ImportError:
        raise CorpusError("--wordfreq needs the wordfreq package: pip install wordfreq") from None
    df: dict[str, int] = {}
    for word, frequency in wordfreq.get_frequency_dict("en", "best").items():
        if len(df) >= n_terms:
            break
        if analyze(word) != [word]:  # stop words, one-letter words, multi-token entries
            continue
        count = round(n_docs * -math.expm1(-doc_length * frequency))
        if count >= 1:
            df[word] = count
    version = importlib.metadata.version("wordfreq")
    return BackgroundStats(
        n_docs=n_docs,
        df=df,
        min_df=1,
        source=f"wordfreq:{version}:en-best:top{n_terms}:poisson(n_docs={n_docs},len={doc_length})",
    )
