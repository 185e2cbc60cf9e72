"""The lines of a file a user hands a command (JSONL answers, summaries, golden sets, labelled
exports, rq-eval documents and queries, TREC qrels and runs), read one way by every command.

- **A UTF-8 byte order mark at the start of the file is dropped.** Windows tools write one
  (Notepad, Excel's "CSV UTF-8", PowerShell 5's ``Out-File -Encoding utf8``); it made the
  first record of ``eval answers`` a dead letter ("not_json: UTF-8 byte order mark (BOM) is not
  supported"), stopped ``calibrate`` on line 1, and, worst, glued itself to the first query id
  of a qrels file ("\\ufeffq1"), whose judgments then matched no run line: a silently lower
  score. Only the file's start: a BOM inside a record is the record's.
- **A UTF-16 or UTF-32 file with its byte order mark is read as the text it is.** PowerShell
  5's ``>`` and ``Out-File`` write UTF-16 by default, whose every line was a dead letter (the
  bytes split at "\\n" left a NUL at the start of the next line). The mark names the encoding,
  so nothing is guessed; a file without one is UTF-8.
- **Lines end at "\\n", "\\r\\n" or "\\r" only** (``bytes.splitlines``). ``str.splitlines``
  also ends a line at U+2028, U+2029, U+0085 and "\\x1c"-"\\x1e", which a JSON string may hold
  unescaped (web text has them; ``orjson`` writes them as they are), so a valid JSONL record
  was cut in two and refused as "not JSON".

Blank lines are kept, so that a line's number is its place in the file (errors and dead
letters name it); callers skip them.

Event files (``eval answers``, ``eval summaries``, ``replay``: :func:`event_records`) may also
be what ``POST /v1/answers`` takes besides NDJSON: one JSON array of events, or one event
spread over lines (pretty-printed). A JSON array handed to ``eval answers`` was read line by
line, every line a dead letter ("[", "  {", ...), with exit code 0 and no verdict.
"""

from __future__ import annotations

import codecs
import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import orjson

from verdictflow.exceptions import VerdictflowError

BOM = codecs.BOM_UTF8


def file_lines(path: Path) -> list[bytes]:
    """Every line of ``path``, without its line ending (see the module doc)."""
    return utf8(path.read_bytes(), path).splitlines()


#: Byte order marks of the encodings read other than UTF-8 (UTF-32's first: UTF-32-LE's
#: begins with UTF-16-LE's), each with the codec that reads it, mark included.
WIDE_MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


class InputFileError(VerdictflowError):
    """A file whose byte order mark names an encoding its bytes are not in."""


def utf8(data: bytes, source: object = "the file") -> bytes:
    """A file's bytes as UTF-8 without a byte order mark (a UTF-16 or UTF-32 file with its
    mark is re-encoded; :class:`InputFileError` if it is not what its mark says)."""
    for mark, codec in WIDE_MARKS:
        if data.startswith(mark):
            try:
                return data.decode(codec).encode("utf-8")
            except UnicodeError as exc:  # a lone surrogate cannot be UTF-8 either
                raise _not_as_marked(source, codec, exc) from None
    return data.removeprefix(BOM)


def _not_as_marked(source: object, codec: str, exc: UnicodeError) -> InputFileError:
    name = codec.upper()
    return InputFileError(
        f"{source}: starts with a {name} byte order mark but is not {name} ({exc}); "
        "save it as UTF-8"
    )


def stream_lines(handle: BinaryIO) -> Iterator[bytes]:
    """The lines of an open binary file (seekable) one at a time, as UTF-8 without the first
    one's byte order mark: for corpora too large to read whole. Lines keep their endings
    (split at "\\n" only, as binary file iteration does)."""
    head = handle.read(4)
    handle.seek(0)
    codec = next((c for mark, c in WIDE_MARKS if head.startswith(mark)), None)
    if codec is None:
        for n, line in enumerate(handle):
            yield line.removeprefix(BOM) if n == 0 else line
        return
    text = io.TextIOWrapper(handle, encoding=codec, newline="")
    try:
        for decoded in text:
            yield decoded.encode("utf-8")
    except UnicodeError as exc:
        raise _not_as_marked(getattr(handle, "name", "the file"), codec, exc) from None
    finally:
        text.detach()  # the caller's handle stays open: it closes it


def text_lines(path: Path) -> list[str]:
    """:func:`file_lines` decoded as UTF-8; ``UnicodeDecodeError`` names the offset in the
    file (without its BOM), as decoding the whole file does."""
    data = utf8(path.read_bytes(), path)
    data.decode("utf-8")  # the whole file's error, with its offset, before any line's
    return [line.decode("utf-8") for line in data.splitlines()]


def source_name(path: Path) -> str:
    """How dead letters and errors name an input: its path, or ``stdin`` for "-"."""
    return "stdin" if str(path) == "-" else str(path)


def event_records(path: Path) -> list[bytes]:
    """The records of an events file ("-": standard input), each one event's bytes: the lines
    of a JSONL file (blank ones kept, for numbering); the items of a file that is one JSON
    array (re-serialised, one record each, numbered from 1); or the one JSON object a file
    spreads over its lines. A file that is none of these is read as JSONL, so each bad line is
    its own dead letter."""
    raw = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
    return records_of(raw, source_name(path))


def records_of(raw: bytes, source: object = "the file") -> list[bytes]:
    """:func:`event_records` of an events file's bytes already read (``source`` names it in
    errors)."""
    data = utf8(raw, source)
    lines = data.splitlines()
    first = next((line for line in lines if line.strip()), b"").strip()
    if first.startswith(b"[") or (first.startswith(b"{") and not _json(first)):
        try:
            whole = orjson.loads(data)
        except orjson.JSONDecodeError:
            return lines
        if isinstance(whole, list):
            return [orjson.dumps(item) for item in whole]
        return [orjson.dumps(whole)]
    return lines


def _json(line: bytes) -> bool:
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True
