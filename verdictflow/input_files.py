"""The lines of a file a user hands a command (JSONL answers, summaries, golden sets, labelled
exports, rq-eval documents and queries, TREC qrels and runs), read one way by every command.

- **A UTF-8 byte order mark at the start of the file is dropped.** Windows tools write one
  (Notepad, Excel's "CSV UTF-8", PowerShell 5's ``Out-File -Encoding utf8``); it made the
  first record of ``eval answers`` a dead letter ("not_json: UTF-8 byte order mark (BOM) is not
  supported"), stopped ``calibrate`` on line 1, and, worst, glued itself to the first query id
  of a qrels file ("\\ufeffq1"), whose judgments then matched no run line: a silently lower
  score. Only the file's start: a BOM inside a record is the record's.
- **Lines end at "\\n", "\\r\\n" or "\\r" only** (``bytes.splitlines``). ``str.splitlines``
  also ends a line at U+2028, U+2029, U+0085 and "\\x1c"-"\\x1e", which a JSON string may hold
  unescaped (web text has them; ``orjson`` writes them as they are), so a valid JSONL record
  was cut in two and refused as "not JSON".

Blank lines are kept, so that a line's number is its place in the file (errors and dead
letters name it); callers skip them.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

BOM = codecs.BOM_UTF8


def file_lines(path: Path) -> list[bytes]:
    """Every line of ``path``, without its line ending (see the module doc)."""
    return split_lines(path.read_bytes())


def split_lines(data: bytes) -> list[bytes]:
    """:func:`file_lines` of a file's bytes already read (standard input, say)."""
    return data.removeprefix(BOM).splitlines()


def stream_lines(handle: BinaryIO) -> Iterator[bytes]:
    """The lines of an open binary file one at a time, the first one's BOM dropped: for
    corpora too large to read whole. Lines keep their endings (split at "\\n" only, as binary
    file iteration does)."""
    for n, line in enumerate(handle):
        yield line.removeprefix(BOM) if n == 0 else line


def text_lines(path: Path) -> list[str]:
    """:func:`file_lines` decoded as UTF-8; ``UnicodeDecodeError`` names the offset in the
    file (without its BOM), as decoding the whole file does."""
    data = path.read_bytes().removeprefix(BOM)
    data.decode("utf-8")  # the whole file's error, with its offset, before any line's
    return [line.decode("utf-8") for line in data.splitlines()]
